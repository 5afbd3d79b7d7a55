#!/usr/bin/env bash
# attn34_split.sh — prediction 83 on the GPU machine: test_gpu --attn and --attn-bw on the split
# family's tree (K 20000 and 65536 cases draw split configs), then lab/attn_ab.sh over the rows
# under 0.90 (A: the templates before the split family, B: with it) and one split=1 problem. $OUT.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
attn_tests 240
ROUNDS=1 timeout $(( 580 - ($(date +%s) - t0) )) bash lab/attn_ab.sh <<'P'
attention_softmax bf16 1x1x32768x32768 padding
attention_softmax_backward bf16 1x1x32768x32768 causal
attention_softmax_backward bf16 1x1x32768x32768 padding
attention_softmax bf16 1x1x32768x32768 causal
attention_softmax_backward bf16 1x1x16384x16384 padding
attention_softmax_backward f16 4x1x8192x8192 padding
attention_softmax bf16 16x1x4096x4096 padding
P
