#!/usr/bin/env bash
# attn32_twins.sh — prediction 78 on the GPU machine: pair=mirror twins for groups of 32 threads
# (.carry_tv/B) against 64+ only (.carry_tv/A), the same binary tuning each problem with
# --templates, A and B alternated twice; then test_gpu --attn and --attn-bw on .carry (B).
set -u
out=${OUT:-/tmp/st_out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64
t0=$(date +%s)
while read -r op s d; do
  for round in 1 2; do
    for v in A B; do
      SOFTMAX_TUNE_CACHE=/tmp/t_$v.db .carry/softmax-tune --op $op --shape $s --dtype $d --mask causal --templates .carry_tv/$v \
        --quiet --force >/tmp/t.log 2>&1
      echo "$op $s $d $round $v: $(grep -E '^copy floor' /tmp/t.log | awk '{print $3}') | $(grep -E '^winner' /tmp/t.log | awk '{print $2, $6, $NF}')"
    done
  done
done <<'L'
attention_softmax_backward 256x1x1024x1024 bf16
attention_softmax_backward 256x1x1024x1024 f16
attention_softmax 64x1x2048x2048 bf16
attention_softmax_backward 64x1x2048x2048 bf16
L
echo "ab: $(( $(date +%s) - t0 )) s"
SOFTMAX_TUNE_CACHE=/tmp/c_a.db timeout 280 .carry/test_gpu --attn >"$out/test_gpu_attn.log" 2>&1 &
SOFTMAX_TUNE_CACHE=/tmp/c_b.db timeout 280 .carry/test_gpu --attn-bw >"$out/test_gpu_attn_bw.log" 2>&1
wait
grep -hE "checks|FAIL" "$out"/test_gpu_attn*.log | tail -8
echo "all: $(( $(date +%s) - t0 )) s"
