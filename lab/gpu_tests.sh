#!/usr/bin/env bash
# gpu_tests.sh — does every GPU correctness test pass on this tree? The first call to make on a
# GPU machine after a change to kernels, the tuner, the runtime or the binding.
#
#   bash bench/carry.sh build     # here: pack .carry/ (binaries, library, tests)
#   OUT=$OUT bash lab/gpu_tests.sh  # there, from the repository root
#
# Four lanes at once (correctness does not depend on timing; each test has its own cache):
#   lane g:  test_gpu
#   lane c:  test_runtime gpu, test_gpu --ce, test_python_untuned and test_python_stand_in (after
#            the build; the stand-ins' test skips without a kernel set beside .carry/softmax-tune:
#            bench/kernel_set_run.sh build makes one)
#   lane p:  the C++ ops' build, test_python (C++ ops, then ctypes), test_python_train,
#            test_python_ce, and what `import softmax_tune` costs (with and without the fusion pass)
#   lane a:  test_gpu --attn, --attn-bw, test_python_attn (after the build) on the C++ ops and ctypes
# LANES="c p a": those lanes alone (for a change that cannot reach the others' tests; c and a
# wait for p's build).
# Logs under $OUT; a verdict line per test (rc, seconds, failure lines). About 400-530 s on an H100
# (2026-11-26); under a 600 s call limit, lane a's Python tests may need a second call.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
# run NAME LIMIT CMD...: CMD with its own cache under a time limit, its log $out/NAME.log; its status,
# time and failure lines
run() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  SOFTMAX_TUNE_CACHE=/tmp/c_$name.db timeout "$lim" "$@" >"$out/$name.log" 2>&1
  echo "$name: rc=$? $(( $(date +%s) - s )) s"; grep -E "FAIL|failed|failures|Error" "$out/$name.log" | head -8; }
lane_g() { run test_gpu 580 .carry/test_gpu; }
lane_c() { run test_runtime 300 .carry/test_runtime gpu; run test_gpu_ce 500 .carry/test_gpu --ce
           while [ ! -e /tmp/built ]; do sleep 2; done; run test_python_untuned 300 python3 tests/test_python_untuned.py .carry/softmax-tune
           run test_python_stand_in 400 python3 tests/test_python_stand_in.py .carry/softmax-tune; }
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
for lane in ${LANES:-g c p a}; do "lane_$lane" >"$out/lane_$lane.txt" 2>&1 & done
wait
cat "$out"/lane_*.txt; echo "all: $(( $(date +%s) - t0 )) s"
