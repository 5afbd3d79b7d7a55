#!/usr/bin/env bash
# odd_rows.sh — which configs win on tall problems of short rows that end inside a vector? The
# tuner's landscape (each tune's log: fraction of copy and config, best first, beside the untuned
# path's pick from `explain`) for seven such problems, then two pinned configs of f16 30x1302937
# (tests/test_untuned.c's case: reg split=128 against packed split=64). The measurements behind
# templates/untuned.lua's rule for 16-bit rows under 32 bytes (H100, 2026-11-26, b275b24:
# f16 684634x13 with 4-byte vectors, two threads a row, 1.02 of copy; with 16-byte vectors < 0.74).
# On the GPU machine, .carry/ packed by bench/carry.sh, from the repository root:
#   bash lab/odd_rows.sh
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
B=.carry/softmax-tune
db=/tmp/odd_rows.db
rm -f $db
for p in "684634x13 f16 softmax" "684634x13 f16 softmax_backward" "1000000x7 bf16 softmax" "500000x13 f32 softmax" \
         "300000x27 f16 softmax" "800000x5 bf16 softmax" "400000x19 bf16 log_softmax"; do
  set -- $p
  $B --shape $1 --dtype $2 --op $3 --cache $db --quiet >/dev/null 2>&1 || echo "tune $p failed"
  echo "## $p (untuned: $($B explain --shape $1 --dtype $2 --op $3 --cache /tmp/none.db 2>&1 | grep ^kernel))"
  $B log --csv --shape $1 --dtype $2 --op $3 --cache $db 2>&1 | awk -F'"' 'NR > 1 {split($5, a, ","); print a[9], a[7], $2}' |
    sort -gr | head -12
done
for c in "threads=256,items=5,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=128,xchg=global,hint=stream" \
         "threads=256,items=10,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=64,xchg=global,hint=stream"; do
  for i in 1 2; do
    $B --shape 30x1302937 --dtype f16 --config "$c" --cache $db --force --quiet 2>&1 | grep -E "^winner" | sed "s/^/30x1302937 f16 pinned: /"
  done
done
