#!/usr/bin/env bash
# attn33_table.sh [DTYPES] [TESTS] — on the GPU machine: with TESTS=1 first test_gpu --attn beside
# the C++ ops' build, then test_python_attn on the C++ ops and on ctypes; then issue 37's table
# (bench/attention_softmax.py, every size, causal and padding, both directions, each problem tuned
# first, no max-autotune) for DTYPES into $OUT/attn-table.tsv, within the call's time.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
if [ "${2:-0}" = 1 ]; then
  bash bench/host_run.sh build >"$out/build.txt" 2>&1 &
  run test_gpu_attn 300 .carry/test_gpu --attn
  wait
  tail -1 "$out/build.txt"
  run test_python_attn 300 python3 tests/test_python_attn.py
  SOFTMAX_TUNE_NO_CPP=1 run test_python_attn_ctypes 300 python3 tests/test_python_attn.py
  echo "tests: $(( $(date +%s) - t0 )) s"
fi
SOFTMAX_TUNE_CACHE=/tmp/t_py.db timeout $(( 585 - ($(date +%s) - t0) )) python3 bench/attention_softmax.py --dtypes "${1:-bfloat16}" \
  --no-autotune --rounds 30 --tune .carry/softmax-tune --out "$out/attn-table.tsv" >"$out/attn-table.log" 2>&1
echo "table: rc=$? $(( $(date +%s) - t0 )) s"
grep -vE "^#" "$out/attn-table.tsv" | grep -E "softmax_tune" | awk -F'\t' '{print $1, $2, $3, $5, $7, $8, $9}'
