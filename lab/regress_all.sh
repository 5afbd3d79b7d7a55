#!/usr/bin/env bash
# regress_all.sh — on the GPU machine, with .carry/ packed: every GPU correctness test at once,
# in four parallel lanes (correctness does not depend on timing; each test its own cache).
#   lane g:  test_gpu
#   lane c:  test_runtime gpu, test_gpu --ce
#   lane p:  C++ ops build, test_python (C++ then ctypes), test_python_train, test_python_ce,
#            what `import softmax_tune` costs (with and without the fusion pass)
#   lane a:  test_gpu --attn, --attn-bw, test_python_attn (after the build) on the C++ ops and ctypes
# Logs under $OUT; prints a verdict per test.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
lane_g() { run test_gpu 580 .carry/test_gpu; }
lane_c() { run test_runtime 300 .carry/test_runtime gpu; run test_gpu_ce 500 .carry/test_gpu --ce; }
lane_p() { bash bench/host_run.sh build >"$out/build.txt" 2>&1; cat "$out/build.txt"; touch /tmp/built
           run test_python 400 python3 tests/test_python.py; run test_python_train 300 python3 tests/test_python_train.py
           run test_python_ce 400 python3 tests/test_python_ce.py; import_cost; }
lane_a() { run test_gpu_attn 300 .carry/test_gpu --attn; run test_gpu_attn_bw 300 .carry/test_gpu --attn-bw
           while [ ! -e /tmp/built ]; do sleep 2; done; run test_python_attn 400 python3 tests/test_python_attn.py
           SOFTMAX_TUNE_NO_CPP=1 run test_python_attn_ctypes 300 python3 tests/test_python_attn.py; }
# import softmax_tune after torch, best of 5 fresh processes, with the fusion pass and without
import_cost() { for fuse in 1 0; do for i in 1 2 3 4 5; do PYTHONPATH=python SOFTMAX_TUNE_FUSE=$fuse python3 -c \
  "import time, torch; t = time.perf_counter(); import softmax_tune; print(f'{(time.perf_counter() - t) * 1e3:.1f}')"
  done | sort -n | head -1 | sed "s/^/import softmax_tune ms, SOFTMAX_TUNE_FUSE=$fuse: /"; done; }
rm -f /tmp/built
lane_g >"$out/lane_g.txt" 2>&1 & lane_c >"$out/lane_c.txt" 2>&1 & lane_p >"$out/lane_p.txt" 2>&1 & lane_a >"$out/lane_a.txt" 2>&1 &
wait
cat "$out"/lane_*.txt; echo "all: $(( $(date +%s) - t0 )) s"
