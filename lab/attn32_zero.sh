#!/usr/bin/env bash
# attn32_zero.sh — prediction 77 on the GPU machine: attention rows (hold=reg, one row a group)
# with their masked body vectors zeroed before the row's loads (.carry_tv/B) against after the
# reduction (.carry_tv/A, the templates before), by lab/attn_ab.sh.
set -u
bash "$(dirname "$0")/attn_ab.sh" <<'L'
attention_softmax bf16 16x1x4096x4096 padding
attention_softmax_backward bf16 16x1x4096x4096 padding
attention_softmax bf16 256x1x1024x1024 padding
attention_softmax_backward bf16 256x1x1024x1024 padding
attention_softmax bf16 256x1x1024x1024 causal
attention_softmax bf16 4x1x8192x8192 padding
L
