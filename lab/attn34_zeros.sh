#!/usr/bin/env bash
# attn34_zeros.sh — prediction 84 on the GPU machine: test_gpu --attn and --attn-bw side by side
# (the early masked writes), then the table's key-padding rows at S 2048, 8192 and 32768 (bf16,
# f16; fwd and bwd; each problem tuned first) into $OUT/attn-zeros.tsv, within the call's time.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
attn_tests 330
SOFTMAX_TUNE_CACHE=/tmp/z_py.db timeout $(( 590 - ($(date +%s) - t0) )) python3 bench/attention_softmax.py --no-autotune \
  --rounds 30 --tune .carry/softmax-tune --out "$out/attn-zeros.tsv" --dtypes bfloat16,float16 --sizes 2048,8192,32768 \
  --no-decode --masks padding >"$out/attn-zeros.log" 2>&1
echo "table: rc=$? $(( $(date +%s) - t0 )) s"
grep -vE "^#" "$out/attn-zeros.tsv" | grep -E "softmax_tune" | awk -F'\t' '{print $1, $2, $3, $5, $7, $8, $9}'
