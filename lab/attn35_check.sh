#!/usr/bin/env bash
# attn35_check.sh — on the GPU machine: the bf16 1x32768 key-padding backward's two near-equal
# configs (reduce=smem, the tuner's pick; reduce=shfl) timed at key lengths 0.34-0.95 K beside the
# Triton floor (lab/attn35_lengths.py), with the C++ ops' build beside; then test_python_attn on the
# C++ ops and on ctypes (the final forward's early masked writes, its non-finite case). $OUT.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
bash bench/host_run.sh build >"$out/build.txt" 2>&1 &
SC=0.08838834764831845
C=threads=512,items=8,vec=8,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=none,mask=padding,bias=none
for red in smem shfl; do
  rm -f /tmp/l_$red.db
  .carry/softmax-tune --op attention_softmax_backward --shape 1x1x32768x32768 --dtype bf16 --mask padding --scale $SC \
    --config "${C/passes=1/reduce=$red,passes=1}" --quiet --cache /tmp/l_$red.db >/tmp/l.log 2>&1 || tail -2 /tmp/l.log
  grep -E "^winner" /tmp/l.log
  SOFTMAX_TUNE_CACHE=/tmp/l_$red.db timeout 100 python3 lab/attn35_lengths.py $red 2>&1 | tail -8
done
echo "lengths: $(( $(date +%s) - t0 )) s"
python_attn_tests 240
echo "total: $(( $(date +%s) - t0 )) s"
