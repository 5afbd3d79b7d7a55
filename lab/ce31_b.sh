#!/usr/bin/env bash
# ce31_b.sh — session 31's second GPU call (issue 36), with call A's cache carried as
# .carry/st_cache.db: the runtime bench of the ten fwd_bwd winners with and without programmatic
# dependent launch (SOFTMAX_TUNE_NO_PDL=1), alternated twice; the loss-only bf16 2048x151936
# retuned over the full sweep; lab/ce_py_profile.py; the Python table's fwd_bwd rows.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
cp .carry/st_cache.db /tmp/st_cache.db && chmod u+w /tmp/st_cache.db
( bash bench/host_run.sh build >"$out/build.txt" 2>&1 ) &
B=.carry/softmax-tune
printf "dtype\tshape\tpdl\tbench_us\tfloor_us\tfrac\n"
for d in bf16 f32; do for s in 4096x128256 8192x50257 16384x32000 2048x151936 1024x256000; do
  for rep in 1 2; do for nopdl in 0 1; do
    r=$(SOFTMAX_TUNE_NO_PDL=$nopdl $B bench --shape $s --dtype $d --op cross_entropy --reps 60 2>&1)
    fl=$(echo "$r" | grep -E "^copy" | awk '{print $(NF-2)}'); b=$(echo "$r" | grep -E "^softmax-tune" | awk '{print $2, $4}')
    printf "%s\t%s\t%s\t%s\t%s\t%s\n" $d $s $((1 - nopdl)) "$(echo $b | cut -d' ' -f1)" "$fl" "$(echo $b | cut -d' ' -f2)"
  done; done
done; done
echo "a/b done $(( $(date +%s) - t0 )) s"
$B --shape 2048x151936 --dtype bf16 --op cross_entropy_loss --sweep full --quiet 2>&1 | grep -E "^winner"
$B bench --shape 2048x151936 --dtype bf16 --op cross_entropy_loss --reps 60 2>&1 | grep -E "^(copy|read|softmax)"
wait; head -3 "$out/build.txt"
timeout 120 python3 lab/ce_py_profile.py 2>&1 | tail -40
echo "profile done $(( $(date +%s) - t0 )) s"
CE_BENCH_ARGS="--modes fwd_bwd --compile-budget 100" bash bench/ce_py_run.sh bench 2>&1 | tail -50
cp /tmp/st_cache.db "$out/st_cache.db"
echo "all: $(( $(date +%s) - t0 )) s"
