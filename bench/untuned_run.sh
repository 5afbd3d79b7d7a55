#!/usr/bin/env bash
# untuned_run.sh CARRY — bench/untuned.py on a GPU machine with the binaries of CARRY (bench/carry.sh's
# .carry): the 40 problems of bench/shapes/random-20261124.txt untuned (empty cache), then tuned
# (softmax-tune --shapes), then the table in $OUT/untuned.tsv. Needs python3 with torch and triton.
set -u
carry=${1:-.carry}
dir=$(cd "$(dirname "$0")" && pwd)
shapes=${SHAPES:-$dir/shapes/random-20261124.txt}
out=${OUT:-/tmp/untuned-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_LIB=$PWD/$carry/lib/libsoftmax_tune.so
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
SOFTMAX_TUNE_CACHE=$out/empty.db SOFTMAX_TUNE_MISS=heuristic python3 "$dir/untuned.py" phase --shapes "$shapes" \
  --out "$out/untuned-part.tsv" > "$out/untuned-phase.log" 2>&1 || { tail -5 "$out/untuned-phase.log"; }
t0=$(date +%s)
timeout "${TUNE_LIMIT:-330}" "$carry/softmax-tune" --shapes "$shapes" --cache "$out/tuned.db" --quiet > "$out/tune.log" 2>&1
echo "tuning: rc $? in $(( $(date +%s) - t0 )) s"; tail -3 "$out/tune.log"
SOFTMAX_TUNE_CACHE=$out/tuned.db SOFTMAX_TUNE_MISS=error python3 "$dir/untuned.py" phase --shapes "$shapes" \
  --out "$out/tuned-part.tsv" > "$out/tuned-phase.log" 2>&1 || { tail -5 "$out/tuned-phase.log"; }
python3 "$dir/untuned.py" merge "$out/untuned-part.tsv" "$out/tuned-part.tsv" --shapes "$shapes" --device "$dev" \
  --out "$out/untuned.tsv"
