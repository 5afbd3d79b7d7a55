#!/usr/bin/env bash
# ce32_b.sh — prediction 75's Python side on the GPU machine: the tree's cross-entropy kernels
# tuned (cross_entropy from ce32_a.sh's cache when the machine kept it, else both ops), the C++
# ops built meanwhile, test_python_ce on the C++ ops and on ctypes, then the issue's Python table
# (bench/cross_entropy.py, both modes, Liger from .peers/liger). Logs under $OUT.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
( bash bench/host_run.sh build >"$out/build.txt" 2>&1 ) &
if [ -f /tmp/ab_new.db ]; then
  cp /tmp/ab_new.db /tmp/st_cache.db && chmod u+w /tmp/st_cache.db; ops=cross_entropy_loss
else
  ops="cross_entropy cross_entropy_loss"
fi
CE_OPS=$ops OUT=$out/tune bash bench/ce_run.sh 2>&1 | cut -f1-8
wait; head -2 "$out/build.txt"; echo "tuned, built: $(( $(date +%s) - t0 )) s"
SOFTMAX_TUNE_CACHE=/tmp/c_py.db timeout 200 python3 tests/test_python_ce.py >"$out/test_python_ce.log" 2>&1
echo "test_python_ce (C++ ops): rc=$? $(( $(date +%s) - t0 )) s"; grep -E "FAIL|failures|Error" "$out/test_python_ce.log" | tail -5
SOFTMAX_TUNE_NO_CPP=1 SOFTMAX_TUNE_CACHE=/tmp/c_py.db timeout 150 python3 tests/test_python_ce.py >"$out/test_python_ce_ctypes.log" 2>&1
echo "test_python_ce (ctypes): rc=$? $(( $(date +%s) - t0 )) s"; grep -E "FAIL|failures|Error" "$out/test_python_ce_ctypes.log" | tail -5
CE_BENCH_ARGS="--compile-budget 100" bash bench/ce_py_run.sh bench 2>&1 | grep -E "softmax_tune|floor|liger|inductor|^#" | grep -vE "go2" | tail -90
echo "all: $(( $(date +%s) - t0 )) s"
timeout 90 python3 lab/ce_py_profile.py --shapes 8192x50257 --dtypes bfloat16 2>&1 | tail -25
echo "profile: $(( $(date +%s) - t0 )) s"
