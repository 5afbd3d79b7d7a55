#!/usr/bin/env bash
# attn33_packed.sh — prediction 81 on the GPU machine: the backward with hold=packed configs
# (.carry_tv/B) against without (.carry_tv/A), by lab/attn_ab.sh; then test_gpu --attn-bw on the
# tree (every knob value verified, packed included).
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
. "$(dirname "$0")/run_test.sh"
bash "$(dirname "$0")/attn_ab.sh" <<'L'
attention_softmax_backward bf16 16x1x4096x4096 padding
attention_softmax_backward bf16 256x1x1024x1024 padding
attention_softmax_backward f16 16x1x4096x4096 padding
attention_softmax_backward bf16 4x1x8192x8192 padding
attention_softmax_backward bf16 8192x1x1x32768 padding
attention_softmax_backward bf16 8192x1x1x32768 causal
attention_softmax_backward bf16 16x1x4096x4096 causal
L
run test_gpu_attn_bw 300 .carry/test_gpu --attn-bw
