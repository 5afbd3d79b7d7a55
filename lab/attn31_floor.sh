#!/usr/bin/env bash
# attn31_floor.sh — st_attn_bw_floor before (.carry_old, session 31's first tree) and after its
# vectors kept in registers (.carry): softmax-tune bench of one pinned attention backward config,
# f16 and bf16, 16x1x4096x4096 causal, alternated twice; then test_gpu --attn-bw on .carry.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
cfg=threads=128,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none,mask=causal,bias=none
for d in f16 bf16; do
  for c in .carry_old .carry; do
    LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/fl$c.db $c/softmax-tune --op attention_softmax_backward \
      --shape 16x1x4096x4096 --mask causal --dtype $d --config $cfg --quiet 2>&1 | grep -E "^winner" | cut -c1-70
  done
  for rep in 1 2; do for c in .carry_old .carry; do
    echo "== $c $d"; LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/fl$c.db $c/softmax-tune bench \
      --op attention_softmax_backward --shape 16x1x4096x4096 --mask causal --dtype $d --reps 60 2>&1 | grep -vE "^#|^$" | tail -3
  done; done
done
SOFTMAX_TUNE_CACHE=/tmp/c_attn.db timeout 280 .carry/test_gpu --attn-bw >"$out/test_gpu_attn_bw.log" 2>&1
echo "test_gpu --attn-bw: rc=$?"; grep -E "FAIL|failed|checks" "$out/test_gpu_attn_bw.log" | tail -3
