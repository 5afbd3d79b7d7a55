#!/usr/bin/env bash
# untuned_ab.sh OLD NEW — does a change of the untuned choice (templates/untuned.lua, the runtime's
# key) lift the untuned path on a list of problems: the untuned phase of bench/untuned.py with each
# of two carried builds (bench/carry.sh's folders, an empty cache each), the problems tuned once by
# NEW's command, the tuned phase once, then a table for each: $OUT/untuned-old.tsv and
# untuned-new.tsv (their summary lines printed), each problem's untuned config in its row. The
# configs tuned are those of NEW's templates; OLD's must hash the same (untuned.lua is not in the
# hash), or the tuned phase finds nothing for OLD's rows.
#   SHAPES=bench/shapes/narrow-20261127.txt bash lab/untuned_ab.sh .carry_old .carry
# From the repository root of the GPU machine. Last (H100, 2026-11-28, e4f2c7c against c5227fe):
# narrow list worst 0.730 -> 0.914 of tuned, seed 20261124's 0.901 -> 0.914 (docs/design/untuned.md).
set -u
old=${1:?OLD carry}
new=${2:?NEW carry}
shapes=${SHAPES:-bench/shapes/narrow-20261127.txt}
out=${OUT:-/tmp/untuned-ab}
work=$(mktemp -d)
mkdir -p "$out"
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=$PWD/$new/lib:/usr/local/cuda/lib64   # the command's (liblua)
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)

# phase WHICH CARRY CACHE MISS PART — one bench/untuned.py phase with CARRY's library
phase() {
  LD_LIBRARY_PATH=$PWD/$2/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_LIB=$PWD/$2/lib/libsoftmax_tune.so SOFTMAX_TUNE_CACHE=$3 SOFTMAX_TUNE_MISS=$4 \
    timeout -k 10 "${PHASE_LIMIT:-120}" python3 bench/untuned.py phase "$1" --shapes "$shapes" --out "$5" \
    >"$5.log" 2>&1 || echo "$1 phase with $2: rc $? ($(tail -1 "$5.log"))"
}
phase untuned "$old" "$work/old.db" heuristic "$out/old-part.tsv"
phase untuned "$new" "$work/new.db" heuristic "$out/new-part.tsv"
timeout -k 10 "${TUNE_LIMIT:-300}" "$new/softmax-tune" --shapes "$shapes" --cache "$work/tuned.db" --quiet \
  >"$out/tune.log" 2>&1 || echo "tuning: rc $?"
phase tuned "$new" "$work/tuned.db" error "$out/tuned-part.tsv"
for v in old new; do
  python3 bench/untuned.py merge "$out/$v-part.tsv" "$out/tuned-part.tsv" --shapes "$shapes" --device "$dev" \
    --table "the built-in default table ($v: $(cat "$([ $v = old ] && echo "$old" || echo "$new")/TREE"))" \
    --out "$out/untuned-$v.tsv" | tail -1
done
rm -rf "$work"
