#!/usr/bin/env bash
# host_run.sh [build] [probe] [python] [train] [untuned] [bench] — on the GPU machine, from the repository
# root, with .carry/ packed by bench/carry.sh (default: all of them, in that order):
#   build    the C++ ops in place (python/setup.py build_ext --inplace; SOFTMAX_TUNE_CPP=1: a failed
#            compile is an error, and the steps after it do not run)
#   probe    bench/cpp_probe.py: each suspect of a crash of the C++ ops in a process of its own (not by default)
#   python   tests/test_python.py: on the C++ ops, then again on the ctypes fallback
#   train    tests/test_python_train.py, the same
#   untuned  tests/test_python_untuned.py (record, then tune) on the C++ ops
#   bench    bench/host_overhead.py on the C++ ops, then on the fallback (SOFTMAX_TUNE_NO_CPP=1)
# Logs and the tables go to $OUT (or /tmp/st_out): host-GPU-DATE.tsv (the C++ ops: the table for
# bench/results) and host-ctypes-GPU-DATE.tsv, both printed last. Within a device call's 10 minutes:
#   bash bench/host_run.sh build python bench    and    bash bench/host_run.sh build train untuned
set -u
. "$(dirname "$0")/carry_env.sh"

run_build() {
  local start=$(date +%s) rc
  SOFTMAX_TUNE_CPP=1 python3 python/setup.py build_ext --inplace >"$out/build.log" 2>&1
  rc=$?
  echo "build: rc=$rc, $(( $(date +%s) - start )) s: $(ls python/softmax_tune/_C*.so 2>/dev/null)"
  [ $rc -eq 0 ] && return 0
  grep -E "error|Error" "$out/build.log" | head -30
  tail -5 "$out/build.log"
  exit 1
}

py_test() {   # py_test NAME [ARGS]: tests/NAME.py (at most $TEST_LIMIT s, default 400), its verdicts
  local rc   # faulthandler (the env: the test's own rerun on the fallback too): a crash prints the Python stack
  PYTHONFAULTHANDLER=1 timeout "${TEST_LIMIT:-400}" python3 -X faulthandler "tests/$1.py" "${@:2}" >"$out/$1.log" 2>&1
  rc=$?
  echo "$1: rc=$rc"
  grep -E "FAIL|SKIP|host path|failures|Error" "$out/$1.log" | head -25
  [ $rc -ge 128 ] && grep -A12 -E "^Fatal Python error|^(Current thread|Thread) 0x" "$out/$1.log" | head -40
  return 0
}

run_probe() { python3 bench/cpp_probe.py 2>&1 | tee "$out/probe.log" | tail -60; }

run_python() { py_test test_python; }
run_train() { py_test test_python_train; }
run_untuned() { py_test test_python_untuned .carry/softmax-tune; }

run_bench() {
  local gpu day
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE 'h100|h200|b200|a100' | head -1 | tr 'A-Z' 'a-z')
  day=$(date +%F)
  python3 bench/host_overhead.py --out "$out/host-$gpu-$day.tsv" >"$out/host_cpp.log" 2>&1 || tail -5 "$out/host_cpp.log"
  SOFTMAX_TUNE_NO_CPP=1 python3 bench/host_overhead.py --out "$out/host-ctypes-$gpu-$day.tsv" >"$out/host_ctypes.log" 2>&1 ||
    tail -5 "$out/host_ctypes.log"
  cat "$out/host-ctypes-$gpu-$day.tsv" "$out/host-$gpu-$day.tsv" 2>/dev/null
}

for s in ${*:-build python train untuned bench}; do "run_$s"; done
