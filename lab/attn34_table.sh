#!/usr/bin/env bash
# attn34_table.sh — on the GPU machine: issue 37's table (bench/attention_softmax.py, each problem
# tuned first, no max-autotune) for float16 and float32 into $OUT/attn-table.tsv, then the bfloat16
# key-padding backward rows again (the tree that offers the split family to causal masks only)
# into $OUT/attn-bf16-padbwd.tsv, within the call's time.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
table() {   # OUT_FILE ARGS...
  local f=$1; shift
  SOFTMAX_TUNE_CACHE=/tmp/t_py.db timeout $(( 585 - ($(date +%s) - t0) )) python3 bench/attention_softmax.py --no-autotune \
    --rounds 30 --tune .carry/softmax-tune --out "$out/$f" "$@" >"$out/${f%.tsv}.log" 2>&1
  echo "$f: rc=$? $(( $(date +%s) - t0 )) s"
  grep -vE "^#" "$out/$f" | grep -E "softmax_tune" | awk -F'\t' '{print $1, $2, $3, $5, $7, $8, $9}'
}
table attn-bf16-padbwd.tsv --dtypes bfloat16 --masks padding --directions bwd
table attn-table.tsv --dtypes float16,float32
