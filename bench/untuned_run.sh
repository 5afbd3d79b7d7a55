#!/usr/bin/env bash
# untuned_run.sh [CARRY] — bench/untuned.py on a GPU machine with the binaries of CARRY (bench/carry.sh's
# .carry), from the repository root: the problems of $SHAPES (default bench/shapes/random-20261124.txt)
# untuned (an empty cache, the default table: $SOFTMAX_TUNE_TABLE's when set, else the built-in one),
# then tuned (softmax-tune --shapes, cut at $TUNE_LIMIT s), then the table: $OUT/untuned.tsv, or
# $OUT/backward-untuned.tsv where the list holds backward ops; its header names the GPU, the date, the
# list's seed and the table. Problems the tuning did not reach are marked in it (tuned_frac '-'), not
# dropped. Each phase is cut at $PHASE_LIMIT s (default 120); with $DEADLINE (epoch seconds) every
# step also ends $RESERVE s (default 0) before it, keeping a share for the steps after it here.
# Caches in $WORK (default /tmp/st_untuned), logs and parts in $OUT. Needs python3 with torch and triton.
set -u
carry=${1:-.carry}
dir=$(cd "$(dirname "$0")" && pwd)
shapes=${SHAPES:-$dir/shapes/random-20261124.txt}
out=${OUT:-/tmp/untuned-out}
work=${WORK:-/tmp/st_untuned}
name=untuned
grep -v '^#' "$shapes" | grep -q '_backward' && name=backward-untuned
mkdir -p "$out" "$work"
rm -f "$work/$name-empty.db" "$work/$name-tuned.db"
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_LIB=$PWD/$carry/lib/libsoftmax_tune.so
export PYTHONUNBUFFERED=1
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
table=${SOFTMAX_TUNE_TABLE:+default table $(basename "$SOFTMAX_TUNE_TABLE") by \$SOFTMAX_TUNE_TABLE}
[ -n "${SOFTMAX_TUNE_TABLE:-}" ] && table="$table ($(grep -vc '^#\|^dtype' "$SOFTMAX_TUNE_TABLE") entries, $(grep -c '_backward' "$SOFTMAX_TUNE_TABLE") of them backward)"

# lim LIMIT AFTER — LIMIT seconds, or fewer so that AFTER + $RESERVE are left before $DEADLINE (15 at least)
lim() {
  local left
  [ "${DEADLINE:-0}" -gt 0 ] || { echo "$1"; return; }
  left=$((DEADLINE - $(date +%s) - ${RESERVE:-0} - $2))
  [ $left -lt 15 ] && left=15
  echo $((left < $1 ? left : $1))
}
# phase WHICH CACHE MISS AFTER — one phase of untuned.py, cut at PHASE_LIMIT (or its lim); its status in prc
phase() {
  local t0=$(date +%s) s
  s=$(lim "${PHASE_LIMIT:-120}" "$4")
  SOFTMAX_TUNE_CACHE=$2 SOFTMAX_TUNE_MISS=$3 timeout -k 10 "$s" python3 "$dir/untuned.py" phase "$1" --shapes "$shapes" \
    --out "$out/$name-$1-part.tsv" >"$out/$name-$1-phase.log" 2>&1
  prc=$?
  echo "$name: $1 phase: rc $prc in $(($(date +%s) - t0)) s (limit $s), $(($(grep -c . "$out/$name-$1-part.tsv" 2>/dev/null || echo 1) - 1)) problems"
  grep -a -E "Error|error:" "$out/$name-$1-phase.log" | tail -3
}

phase untuned "$work/$name-empty.db" heuristic 90
t0=$(date +%s)
s=$(lim "${TUNE_LIMIT:-330}" 45)
timeout -k 10 "$s" "$carry/softmax-tune" --shapes "$shapes" --cache "$work/$name-tuned.db" --quiet >"$out/$name-tune.log" 2>&1
rc=$?
echo "$name: tuning: rc $rc in $(($(date +%s) - t0)) s (limit $s)"
tail -2 "$out/$name-tune.log"
phase tuned "$work/$name-tuned.db" error 0
python3 "$dir/untuned.py" merge "$out/$name-untuned-part.tsv" "$out/$name-tuned-part.tsv" --shapes "$shapes" --device "$dev" \
  --table "${table:-the built-in default table}" --not-tuned " (the tuning: limit $s s, rc $rc; the tuned phase: rc $prc; 124: cut at the limit)" --out "$out/$name.tsv" | tail -1
