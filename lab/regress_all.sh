#!/usr/bin/env bash
# regress_all.sh — on the GPU machine, with .carry/ packed: every GPU correctness test at once,
# in three parallel lanes (correctness does not depend on timing; each lane its own cache).
#   lane c:  test_gpu, test_runtime gpu, test_gpu --ce
#   lane p:  C++ ops build, test_python (C++ then ctypes), test_python_train, test_python_ce
#   lane a:  test_python_attn (waits for the build)
# Logs under $OUT; prints a verdict per test.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
run() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  SOFTMAX_TUNE_CACHE=/tmp/c_$name.db timeout "$lim" "$@" >"$out/$name.log" 2>&1
  echo "$name: rc=$? $(( $(date +%s) - s )) s"; grep -E "FAIL|failed|failures|Error" "$out/$name.log" | head -8; }
lane_c() { run test_gpu 560 .carry/test_gpu; run test_runtime 300 .carry/test_runtime gpu
           run test_gpu_ce 400 .carry/test_gpu --ce; }
lane_p() { bash bench/host_run.sh build >"$out/build.txt" 2>&1; cat "$out/build.txt"; touch /tmp/built
           run test_python 400 python3 tests/test_python.py; run test_python_train 300 python3 tests/test_python_train.py
           run test_python_ce 400 python3 tests/test_python_ce.py; }
lane_a() { while [ ! -e /tmp/built ]; do sleep 2; done; run test_python_attn 560 python3 tests/test_python_attn.py; }
rm -f /tmp/built
lane_c >"$out/lane_c.txt" 2>&1 & lane_p >"$out/lane_p.txt" 2>&1 & lane_a >"$out/lane_a.txt" 2>&1 &
wait
cat "$out"/lane_*.txt; echo "all: $(( $(date +%s) - t0 )) s"
