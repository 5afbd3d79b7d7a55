#!/usr/bin/env bash
# odd_rows.sh — one-off (session 27, prediction 60/61): on the GPU machine with .carry packed, the
# tuner's landscape for tall problems of short odd rows (where the untuned path holds one thread a
# row with vectors that start unaligned), and two pinned configs of f16 30x1302937 (tests/
# test_untuned.c's case: reg split=128 against packed split=64). Prints each tune's log: config and
# fraction of copy, best first.
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
