#!/usr/bin/env bash
# attn35_curve.sh — on the GPU machine: time against key length. Each problem tuned (fast sweep,
# the table's way), then lab/attn35_lengths.py times its kernel at every key length fraction of
# FRACS beside the Triton masked floor. $OUT/curve.tsv.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
SC=0.08838834764831845
FRACS=$(python3 -c "print(','.join('%.3f' % (0.25 + 0.025 * i) for i in range(31)) + ',0.330,0.335,0.345,0.350')")
export SOFTMAX_TUNE_CACHE=/tmp/curve.db
while read -r op d s pyargs; do
  .carry/softmax-tune --op $op --shape $s --dtype $d --mask padding --scale $SC --quiet >/tmp/t.log 2>&1
  echo "$op $d $s: $(grep -E '^winner' /tmp/t.log)"
  timeout 150 python3 lab/attn35_lengths.py "$op/$s" $pyargs --fracs $FRACS >>"$out/curve.tsv" 2>"$out/curve.err"
  echo "($(( $(date +%s) - t0 )) s)"
done <<'P'
attention_softmax_backward bf16 1x1x32768x32768 --shape 1,32768
attention_softmax bf16 1x1x32768x32768 --fwd --shape 1,32768
attention_softmax bf16 4x1x8192x8192 --fwd --shape 4,8192
attention_softmax_backward bf16 4x1x8192x8192 --shape 4,8192
P
sort -t$'\t' -k1,1 -k2,2n "$out/curve.tsv" | awk -F'\t' '{printf "%s %s %s %s %s\n", $1, $2, $3, $4, $5}'
