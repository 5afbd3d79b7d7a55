#!/usr/bin/env bash
# host_run.sh — on the GPU machine, from the repository root, with .carry/ packed by bench/carry.sh:
# build the C++ ops in place (python/setup.py build_ext --inplace, SOFTMAX_TUNE_CPP=1: a failed
# compile stops here), run tests/test_python.py and tests/test_python_train.py (each on the C++ ops,
# then again on the ctypes fallback) and tests/test_python_untuned.py (C++ ops), then
# bench/host_overhead.py on the C++ ops and on the fallback (SOFTMAX_TUNE_NO_CPP=1). Logs and the
# two tables go to $OUT (or /tmp/st_out): host-GPU-DATE.tsv (the C++ ops; for bench/results) and
# host-ctypes-GPU-DATE.tsv; both tables are printed last.
set -u
out=${OUT:-/tmp/st_out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SOFTMAX_TUNE_LIB=$PWD/.carry/lib/libsoftmax_tune.so
export SOFTMAX_TUNE_CACHE=${SOFTMAX_TUNE_CACHE:-/tmp/st_cache.db}
export PYTHONUNBUFFERED=1
start=$(date +%s)
SOFTMAX_TUNE_CPP=1 python3 python/setup.py build_ext --inplace >"$out/build.log" 2>&1
rc=$?
echo "build: rc=$rc, $(( $(date +%s) - start )) s: $(ls python/softmax_tune/_C*.so 2>/dev/null)"
if [ $rc -ne 0 ]; then grep -E "error|Error" "$out/build.log" | head -30; tail -5 "$out/build.log"; exit 1; fi
for t in "test_python.py" "test_python_train.py" "test_python_untuned.py .carry/softmax-tune"; do
  name=${t%%.py*}
  timeout 500 python3 tests/$t >"$out/$name.log" 2>&1
  echo "$name: rc=$?"
  grep -E "FAIL|SKIP|host path|failures|Error" "$out/$name.log" | head -25
done
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE 'h100|h200|b200|a100' | head -1 | tr 'A-Z' 'a-z')
day=$(date +%F)
python3 bench/host_overhead.py --out "$out/host-$gpu-$day.tsv" >"$out/host_cpp.log" 2>&1 || tail -5 "$out/host_cpp.log"
SOFTMAX_TUNE_NO_CPP=1 python3 bench/host_overhead.py --out "$out/host-ctypes-$gpu-$day.tsv" >"$out/host_ctypes.log" 2>&1 ||
  tail -5 "$out/host_ctypes.log"
cat "$out/host-ctypes-$gpu-$day.tsv" "$out/host-$gpu-$day.tsv" 2>/dev/null
