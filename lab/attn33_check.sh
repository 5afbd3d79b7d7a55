#!/usr/bin/env bash
# attn33_check.sh — prediction 80's tree on the GPU machine: test_gpu --attn and --attn-bw beside
# the C++ ops' build, then test_python_attn on the C++ ops and on ctypes; then the quick attention
# table (bench/attention_softmax.py --quick, causal and padding, each problem tuned first). $OUT.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
bash bench/host_run.sh build >"$out/build.txt" 2>&1 &
run test_gpu_attn 300 .carry/test_gpu --attn & run test_gpu_attn_bw 300 .carry/test_gpu --attn-bw &
python_attn_tests 300
echo "tests: $(( $(date +%s) - t0 )) s"
SOFTMAX_TUNE_CACHE=/tmp/q_py.db timeout $(( 590 - ($(date +%s) - t0) )) python3 bench/attention_softmax.py --quick \
  --tune .carry/softmax-tune --out "$out/attn-quick.tsv" >"$out/attn-quick.log" 2>&1
echo "quick: rc=$? $(( $(date +%s) - t0 )) s"
grep -vE "^#" "$out/attn-quick.tsv" | grep -E "floor|softmax_tune|inductor\b"
