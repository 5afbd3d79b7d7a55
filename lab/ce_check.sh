#!/usr/bin/env bash
# ce_check.sh — on the GPU machine, with .carry/ packed: the cross-entropy correctness tests of a
# tree, test_gpu --ce while the C++ ops build, then test_python_ce on the C++ ops and on ctypes.
# Logs under $OUT (or /tmp/st_out); a verdict line each. Sourced or run by lab/ce31_*.sh.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
verdict() { echo "$1: rc=$2 $(( $(date +%s) - t0 )) s"; grep -E "FAIL|failed|failures|checks|Error" "$out/$3" | tail -5; }
( bash bench/host_run.sh build >"$out/build.txt" 2>&1; head -2 "$out/build.txt"
  SOFTMAX_TUNE_CACHE=/tmp/c_py.db timeout 200 python3 tests/test_python_ce.py >"$out/test_python_ce.log" 2>&1
  verdict "test_python_ce (C++ ops)" $? test_python_ce.log
  SOFTMAX_TUNE_NO_CPP=1 SOFTMAX_TUNE_CACHE=/tmp/c_py.db timeout 150 python3 tests/test_python_ce.py \
    >"$out/test_python_ce_ctypes.log" 2>&1
  verdict "test_python_ce (ctypes)" $? test_python_ce_ctypes.log ) &
SOFTMAX_TUNE_CACHE=/tmp/c_ce.db timeout 280 .carry/test_gpu --ce >"$out/test_gpu_ce.log" 2>&1
verdict "test_gpu --ce" $? test_gpu_ce.log
wait
