#!/usr/bin/env bash
# attn35_rows.sh — on the GPU machine: the issue table's bf16 key-padding rows (S 2048, 8192,
# 32768; fwd and bwd) on prediction 85's tree, each problem tuned first, no torch.compile (the
# device time left). $OUT/attn-padding.tsv.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
SOFTMAX_TUNE_CACHE=/tmp/r_py.db timeout ${LIMIT:-170} python3 bench/attention_softmax.py --no-inductor --rounds 20 \
  --tune .carry/softmax-tune --out "$out/attn-padding.tsv" --append --dtypes bfloat16 --sizes 2048,8192,32768 --no-decode \
  --masks padding >"$out/attn-padding.log" 2>&1
echo "rc=$?"; grep -vE "^#" "$out/attn-padding.tsv" | grep -E "softmax_tune" | awk -F'\t' '{print $1, $2, $3, $5, $7, $8, $9}'
grep -E "kernel|WRONG" "$out/attn-padding.log" | head
