#!/usr/bin/env bash
# attn33_fwd.sh — prediction 82 on the GPU machine: the forward with hold=packed configs
# (.carry_tv/B) against without (.carry_tv/A), one binary (.carry), --templates, alternated twice;
# then test_gpu --attn on the tree (every knob value verified, packed included).
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
while read -r dt s m; do
  for round in 1 2; do
    for v in A B; do
      SOFTMAX_TUNE_CACHE=/tmp/pf_$v.db .carry/softmax-tune --op attention_softmax --shape $s --dtype $dt --mask $m \
        --templates .carry_tv/$v --quiet --force >/tmp/pk.log 2>&1
      w=$(grep -E '^winner' /tmp/pk.log)
      echo "$dt $s $m $round $v: $(grep -E '^copy floor' /tmp/pk.log | awk '{print $3}') | $(echo "$w" | awk '{print $2, $6}') ${w##* }"
    done
  done
done <<'L'
bf16 16x1x4096x4096 padding
bf16 256x1x1024x1024 padding
f16 16x1x4096x4096 padding
bf16 4x1x8192x8192 padding
bf16 8192x1x1x32768 padding
bf16 8192x1x1x32768 causal
bf16 16x1x4096x4096 causal
bf16 256x1x1024x1024 causal
L
echo "ab: $(( $(date +%s) - t0 )) s"
SOFTMAX_TUNE_CACHE=/tmp/pf_t.db timeout 300 .carry/test_gpu --attn >"$out/attn.log" 2>&1
echo "test_gpu --attn: rc=$? $(grep -E 'checks|never' "$out/attn.log" | tail -3)"; grep FAIL "$out/attn.log" | head -5
echo "all: $(( $(date +%s) - t0 )) s"
