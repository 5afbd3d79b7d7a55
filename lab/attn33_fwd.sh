#!/usr/bin/env bash
# attn33_fwd.sh — prediction 82 on the GPU machine: the forward with hold=packed configs
# (.carry_tv/B) against without (.carry_tv/A), by lab/attn_ab.sh; then test_gpu --attn on the
# tree (every knob value verified, packed included).
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
. "$(dirname "$0")/run_test.sh"
bash "$(dirname "$0")/attn_ab.sh" <<'L'
attention_softmax bf16 16x1x4096x4096 padding
attention_softmax bf16 256x1x1024x1024 padding
attention_softmax f16 16x1x4096x4096 padding
attention_softmax bf16 4x1x8192x8192 padding
attention_softmax bf16 8192x1x1x32768 padding
attention_softmax bf16 8192x1x1x32768 causal
attention_softmax bf16 16x1x4096x4096 causal
attention_softmax bf16 256x1x1024x1024 causal
L
run test_gpu_attn 300 .carry/test_gpu --attn
