#!/usr/bin/env bash
# ce31_c.sh — session 31's third GPU call (issue 36): test_gpu --ce and test_python_ce (both paths)
# on the final ce.cu while the C++ ops build; the same config through the session's first tree
# (.carry_old, tree 3dd09b7) and this one (.carry), alternated (the kernel text's cost); the
# tune table (bench/ce_run.sh); bf16 8192x50257 over the full sweep; lab/ce_py_profile.py.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
bash "$(dirname "$0")/ce_check.sh"
printf "tree\tdtype\tshape\tbench_us\tfloor_us\tfrac\tconfig\n"
while read d s cfg; do
  for c in .carry_old .carry; do
    LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/ab$c.db $c/softmax-tune --shape $s --dtype $d --op cross_entropy --config $cfg --quiet >/dev/null 2>&1
  done
  for rep in 1 2; do for c in .carry_old .carry; do
    r=$(LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/ab$c.db SOFTMAX_TUNE_NO_PDL=1 $c/softmax-tune bench --shape $s --dtype $d --op cross_entropy --reps 60 2>&1)
    fl=$(echo "$r" | grep -E "^copy" | awk '{print $(NF-2)}'); b=$(echo "$r" | grep -E "^softmax-tune" | awk '{print $2, $4}')
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" $c $d $s "$(echo $b | cut -d' ' -f1)" "$fl" "$(echo $b | cut -d' ' -f2)" $cfg
  done; done
done <<'L'
f32 1024x256000 threads=256,items=16,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=16,xchg=dsmem,hint=none
f32 2048x151936 threads=256,items=10,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=16,xchg=dsmem,hint=none
bf16 8192x50257 threads=512,items=7,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=2,xchg=dsmem,hint=none
L
echo "a/b done $(( $(date +%s) - t0 )) s"
bash bench/ce_run.sh 2>&1 | tail -21
echo "ce_run done $(( $(date +%s) - t0 )) s"
.carry/softmax-tune --shape 8192x50257 --dtype bf16 --op cross_entropy --sweep full --quiet 2>&1 | grep -E "^winner"
.carry/softmax-tune bench --shape 8192x50257 --dtype bf16 --op cross_entropy --reps 60 2>&1 | grep -E "^(copy|softmax)"
cp /tmp/st_cache.db "$out/st_cache.db"
timeout 100 python3 lab/ce_py_profile.py --dtypes bfloat16,float32 2>&1 | grep -v Warn | tail -60
echo "all: $(( $(date +%s) - t0 )) s"
