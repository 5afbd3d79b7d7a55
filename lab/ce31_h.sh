#!/usr/bin/env bash
# ce31_h.sh — st_ce_count and st_ce_reduce with 8 rows' terms loaded at once (.carry) against one
# at a time (.carry_pre, tree 9c8bacc): lab/ce_py_profile.py on the ctypes path through each
# build's library, pinned winners of bf16 8192x50257 and 16384x32000, alternated twice; then
# lab/ce_check.sh on .carry.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
while read s cfg; do for c in .carry_pre .carry; do
  LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/pp$c.db $c/softmax-tune --shape $s --dtype bf16 \
    --op cross_entropy --config $cfg --quiet 2>&1 | grep -E "^winner" | cut -c1-60
done; done <<'L'
8192x50257 threads=512,items=7,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=2,xchg=dsmem,hint=none
16384x32000 threads=128,items=8,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=4,xchg=dsmem,hint=none
L
for rep in 1 2; do for c in .carry_pre .carry; do
  echo "== $c"
  SOFTMAX_TUNE_LIB=$PWD/$c/lib/libsoftmax_tune.so SOFTMAX_TUNE_CACHE=/tmp/pp$c.db SOFTMAX_TUNE_NO_CPP=1 timeout 100 \
    python3 lab/ce_py_profile.py --shapes 8192x50257,16384x32000 2>&1 | grep -E "st_ce|fraction"
done; done
bash "$(dirname "$0")/ce_check.sh"
