#!/usr/bin/env bash
# attn32_twins.sh — prediction 78 on the GPU machine: pair=mirror twins for groups of 32 threads
# (.carry_tv/B) against 64+ only (.carry_tv/A), by lab/attn_ab.sh; then test_gpu --attn and
# --attn-bw on .carry (B).
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
. "$(dirname "$0")/run_test.sh"
bash "$(dirname "$0")/attn_ab.sh" <<'L'
attention_softmax_backward bf16 256x1x1024x1024 causal
attention_softmax_backward f16 256x1x1024x1024 causal
attention_softmax bf16 64x1x2048x2048 causal
attention_softmax_backward bf16 64x1x2048x2048 causal
L
run test_gpu_attn 280 .carry/test_gpu --attn & run test_gpu_attn_bw 280 .carry/test_gpu --attn-bw
wait
