#!/usr/bin/env bash
# attn32_zero.sh — prediction 77 on the GPU machine: attention rows (hold=reg, one row a group)
# with their masked body vectors zeroed before the row's loads (.carry_tv/B) against after the
# reduction (.carry_tv/A, the templates before), the same binary (.carry) tuning each problem with
# --templates, A and B alternated twice. Prints the floor and the winner of each.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64
t0=$(date +%s)
while read -r op s m; do
  for round in 1 2; do
    for v in A B; do
      SOFTMAX_TUNE_CACHE=/tmp/z_$v.db .carry/softmax-tune --op $op --shape $s --dtype bf16 --mask $m --templates .carry_tv/$v \
        --quiet --force >/tmp/z.log 2>&1
      echo "$op $s $m $round $v: $(grep -E '^copy floor' /tmp/z.log | awk '{print $3}') | $(grep -E '^winner' /tmp/z.log | awk '{print $2, $6, $NF}')"
    done
  done
done <<'L'
attention_softmax 16x1x4096x4096 padding
attention_softmax_backward 16x1x4096x4096 padding
attention_softmax 256x1x1024x1024 padding
attention_softmax_backward 256x1x1024x1024 padding
attention_softmax 256x1x1024x1024 causal
attention_softmax 4x1x8192x8192 padding
L
echo "all: $(( $(date +%s) - t0 )) s"
