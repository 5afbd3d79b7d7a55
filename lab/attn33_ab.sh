#!/usr/bin/env bash
# attn33_ab.sh — prediction 80 on the GPU machine: the attention kernels without per-element key
# tests and exp guards (.carry_tv/B) against before (.carry_tv/A), by lab/attn_ab.sh, with each
# winner's SASS size.
set -u
SASS=1 bash "$(dirname "$0")/attn_ab.sh" <<'L'
attention_softmax bf16 16x1x4096x4096 padding
attention_softmax_backward bf16 16x1x4096x4096 padding
attention_softmax bf16 256x1x1024x1024 padding
attention_softmax_backward bf16 256x1x1024x1024 padding
attention_softmax bf16 16x1x4096x4096 causal
attention_softmax bf16 4x1x8192x8192 padding
attention_softmax_backward bf16 4x1x8192x8192 padding
L
