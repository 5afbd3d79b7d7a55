#!/usr/bin/env bash
# ce_py_run.sh [tests] [converge] [bench] — on the GPU machine, from the repository root, with
# .carry/ packed by bench/carry.sh: the cross-entropy binding's tests (tests/test_python_ce.py,
# tests/test_python_ce_converge.py) and bench/cross_entropy.py (Liger from .peers/liger or
# $LIGER_PATH; $CE_BENCH_ARGS passed on, e.g. --no-autotune). Logs and the table go to $OUT (or
# /tmp/st_out); the kernels come from $SOFTMAX_TUNE_CACHE (bench/ce_run.sh tunes into it).
set -u
. "$(dirname "$0")/carry_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader

check() {   # check NAME LIMIT COMMAND...: run it, its log under $out, a verdict and its failures
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "$name: rc=$?"
  grep -E "^FAIL|failures|Error|error:" "$out/$name.log" | head -20
}

for step in ${*:-tests converge}; do
  case $step in
    tests) check test_python_ce 400 python3 tests/test_python_ce.py ;;
    converge) check test_python_ce_converge 300 python3 tests/test_python_ce_converge.py
              grep -E "noise|difference|->" "$out/test_python_ce_converge.log" ;;
    bench) # shellcheck disable=SC2086
           check cross_entropy 590 python3 bench/cross_entropy.py ${CE_BENCH_ARGS:-}
           cp bench/results/cross-entropy-*.tsv "$out/" 2>/dev/null
           grep -vE "^# (Liger|softmax_tune|Loss|fwd_bwd floor|Median)" "$out/cross_entropy.log" | tail -80 ;;
    *) echo "unknown step $step (tests, converge, bench)"; exit 2 ;;
  esac
done
