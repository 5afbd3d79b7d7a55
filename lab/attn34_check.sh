#!/usr/bin/env bash
# attn34_check.sh — the backward's split family and the tuner's timing key lengths on the GPU
# machine: test_gpu --attn and --attn-bw side by side, then lab/attn_ab.sh once over the rows
# under 0.90 (A: the templates before the split family, B: with it; one binary, which times key
# padding by am_time_length's lengths in both). $OUT.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
attn_tests 330
ROUNDS=1 timeout $(( 585 - ($(date +%s) - t0) )) bash lab/attn_ab.sh <<'P'
attention_softmax_backward bf16 1x1x32768x32768 causal
attention_softmax_backward bf16 1x1x32768x32768 padding
attention_softmax bf16 1x1x32768x32768 padding
attention_softmax_backward bf16 1x1x16384x16384 padding
attention_softmax bf16 64x1x2048x2048 padding
attention_softmax_backward f16 4x1x8192x8192 padding
P
