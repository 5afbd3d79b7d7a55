#!/usr/bin/env bash
# fleet_run.sh — issue 19 on a machine with several GPUs (from the repository root, .carry/
# packed by bench/carry.sh): the multi-GPU tests (the runtime on every GPU from threads, --gpu
# all end to end, the Python binding on every GPU), then bench/multi_gpu.sh's five phases (a
# warm-up run thrown away; the 18 public problems with --gpu 0, then --gpu all, each from an
# empty cache; the winners checked on every GPU; the ratio). The --gpu all cache is kept in
# $OUT for `softmax-tune report`.
set -u
out=${OUT:-/tmp/st_out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SOFTMAX_TUNE_LIB=$PWD/.carry/lib/libsoftmax_tune.so PYTHONUNBUFFERED=1
export SOFTMAX_TUNE_BIN=$PWD/.carry/softmax-tune MULTI_GPU_WORK=/tmp/multi_gpu
export MULTI_GPU_OUT=$out/multi-gpu-$(date -u +%F).txt
for t in ".carry/test_multigpu" "bash tests/gpu_tune_multi.sh .carry/softmax-tune" "python3 tests/test_python.py"; do
  if timeout 120 $t >/tmp/t.log 2>&1; then echo "PASS $t: $(tail -1 /tmp/t.log)"; else echo "FAIL $t"; tail -8 /tmp/t.log; fi
done | tee "$out/tests.txt"
bash bench/multi_gpu.sh warm one all check report >/dev/null 2>&1
cp /tmp/multi_gpu/all.db "$out/cache-h200x2.db"
cat "$out/tests.txt" "$MULTI_GPU_OUT"
