#!/usr/bin/env bash
# attn35_align.sh — on the GPU machine: the slow key lengths of lab/attn35_curve.sh against their
# neighbours a multiple of 8 (no partly visible vector), each beside the Triton floor. $OUT/align.tsv.
# TEMPLATES=DIR (e.g. .carry_tv/B/templates) tunes with those templates (its own cache): an A/B is two runs.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
SC=0.08838834764831845
export SOFTMAX_TUNE_CACHE=/tmp/align_$(echo ${TEMPLATES:-main} | tr -c 'a-zA-Z0-9\n' _).db
tv=${TEMPLATES:+--templates $TEMPLATES}
[ -z "${TEMPLATES:-}" ] || [ -f "$TEMPLATES/space.lua" ] || { echo "TEMPLATES=$TEMPLATES: no space.lua there"; exit 2; }
while read -r op s pyargs; do
  .carry/softmax-tune --op $op --shape $s --dtype bf16 --mask padding --scale $SC $tv --quiet >/tmp/t.log 2>&1
  echo "$op $s: $(grep -E '^winner' /tmp/t.log | grep -oE 'threads=[^ ]+')"
  timeout 100 python3 lab/attn35_lengths.py "$op/$s" $pyargs 2>&1 | tee -a "$out/align.tsv" | awk -F'\t' '{print "  ", $2, $3, $4, $5}'
done <<'P'
attention_softmax 4x1x8192x8192 --fwd --shape 4,8192 --lengths 3276,3280,3272,3264,2252,2256,2248,2240,5324,5328,5320,3686,3688
attention_softmax_backward 4x1x8192x8192 --shape 4,8192 --lengths 3686,3688,3680,3672,2662,2664,2656,4710,4712
attention_softmax_backward 1x1x32768x32768 --shape 1,32768 --lengths 13926,13928,13920,9830,9832,9824
P
