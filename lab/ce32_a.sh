#!/usr/bin/env bash
# ce32_a.sh — prediction 75 on the GPU machine: lab/ce_ab.sh (cross_entropy tuned and benched with
# .carry_old = HEAD before the label hoist, then .carry; the old winners pinned in the new build),
# then test_gpu --ce on the new build. Tables and logs under $OUT.
set -u
out=${OUT:-/tmp/st_out}
mkdir -p "$out"
t0=$(date +%s)
bash lab/ce_ab.sh
echo "ab: $(( $(date +%s) - t0 )) s"
LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/c_ce.db timeout 200 .carry/test_gpu --ce >"$out/test_gpu_ce.log" 2>&1
echo "test_gpu --ce: rc=$? $(( $(date +%s) - t0 )) s"; grep -E "FAIL|failed|checks" "$out/test_gpu_ce.log" | tail -5
