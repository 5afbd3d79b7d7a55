#!/usr/bin/env bash
# attn33_ab.sh — prediction 80 on the GPU machine: the attention kernels without per-element key
# tests and exp guards (.carry_tv/B) against before (.carry_tv/A), one binary (.carry) tuning each
# problem with --templates, A and B alternated twice; then each winner's SASS size (cuobjdump).
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64
t0=$(date +%s)
while read -r op s m; do
  for round in 1 2; do
    for v in A B; do
      SOFTMAX_TUNE_CACHE=/tmp/ab_$v.db .carry/softmax-tune --op $op --shape $s --dtype bf16 --mask $m --templates .carry_tv/$v \
        --quiet --force >/tmp/ab.log 2>&1
      w=$(grep -E '^winner' /tmp/ab.log)
      echo "$op $s $m $round $v: $(grep -E '^copy floor' /tmp/ab.log | awk '{print $3}') | $(echo "$w" | awk '{print $2, $6}') ${w##* }"
      if [ $round = 2 ] && command -v cuobjdump >/dev/null; then
        .carry/softmax-tune compile --op $op --shape $s --dtype bf16 --mask $m --templates .carry_tv/$v --config "${w##* }" \
          --arch sm_90 -o /tmp/ab_$v.cubin >/dev/null 2>&1 &&
          echo "   SASS $v: $(cuobjdump -sass /tmp/ab_$v.cubin | grep -cE '^\s+/\*[0-9a-f]+\*/') instructions"
      fi
    done
  done
done <<'L'
attention_softmax 16x1x4096x4096 padding
attention_softmax_backward 16x1x4096x4096 padding
attention_softmax 256x1x1024x1024 padding
attention_softmax_backward 256x1x1024x1024 padding
attention_softmax 16x1x4096x4096 causal
attention_softmax 4x1x8192x8192 padding
attention_softmax_backward 4x1x8192x8192 padding
L
echo "all: $(( $(date +%s) - t0 )) s"
