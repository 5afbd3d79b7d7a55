#!/usr/bin/env bash
# attn34_full.sh — full sweeps (--sweep full: every config of the space, 30 ms each) of the rows
# under 0.90 on the split family's tree, each winner printed and the whole log kept
# ($OUT/full_log.csv: every config's time), to see what the fast sweep's 48 leave out.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
export SOFTMAX_TUNE_CACHE=/tmp/full.db
while read -r op d s m; do
  [ $(( $(date +%s) - t0 )) -gt 500 ] && { echo "skipped $op $d $s $m (time)"; continue; }
  timeout 120 .carry/softmax-tune --op $op --shape $s --dtype $d --mask $m --sweep full --force --quiet >/tmp/f.log 2>&1
  echo "$op $d $s $m: rc=$? $(grep -E '^copy floor' /tmp/f.log | awk '{print $3}') | $(grep -E '^winner' /tmp/f.log) ($(( $(date +%s) - t0 )) s)"
done <<'P'
attention_softmax bf16 1x1x32768x32768 padding
attention_softmax bf16 1x1x32768x32768 causal
attention_softmax_backward bf16 1x1x32768x32768 causal
attention_softmax_backward bf16 1x1x32768x32768 padding
attention_softmax bf16 4x1x8192x8192 padding
attention_softmax bf16 64x1x2048x2048 padding
attention_softmax_backward bf16 1x1x16384x16384 padding
P
.carry/softmax-tune log --csv >"$out/full_log.csv" 2>&1
wc -l "$out/full_log.csv"; head -2 "$out/full_log.csv"
