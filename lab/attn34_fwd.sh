#!/usr/bin/env bash
# attn34_fwd.sh — the tree with early masked writes in the forward only: the table's bfloat16
# forward rows (every size, causal and key padding, decode) and its key-padding backward at S 8192
# and 32768 (the backward as at ec2e36b again), each problem tuned first, into $OUT. No tests
# (test_gpu --attn ran on ef0a476's forward, the same text).
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
b() { local f=$1; shift
  SOFTMAX_TUNE_CACHE=/tmp/f_py.db timeout $(( 590 - ($(date +%s) - t0) )) python3 bench/attention_softmax.py --no-autotune \
    --rounds 30 --tune .carry/softmax-tune --out "$out/$f" --dtypes bfloat16 "$@" >"$out/${f%.tsv}.log" 2>&1
  echo "$f: rc=$? $(( $(date +%s) - t0 )) s"
  grep -vE "^#" "$out/$f" | grep -E "softmax_tune" | awk -F'\t' '{print $1, $2, $3, $5, $7, $8, $9}'; }
b attn-bwd.tsv --sizes 8192,32768 --no-decode --masks padding --directions bwd
b attn-fwd.tsv --directions fwd
