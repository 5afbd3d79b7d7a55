#!/usr/bin/env bash
# verify_run.sh — on a GPU machine (from the repository root, .carry/ packed by bench/carry.sh):
# the verifier's GPU checks and the f16 problems of issue 18. With two GPUs the two halves run
# side by side (GPU 1: the tests, then the bf16 public problems tuned; GPU 0: the f16 problems
# of the issue and the public ones tuned), then bench/peers.py in bf16 and f16 on GPU 0; with
# one GPU, one after the other. Every tune line says how many configs failed verification (the
# rule must fail none). Logs and the cache under $OUT.
set -u
out=${OUT:-/tmp/st_out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SOFTMAX_TUNE_LIB=$PWD/.carry/lib/libsoftmax_tune.so
export PYTHONUNBUFFERED=1
B=$PWD/.carry/softmax-tune
SHAPES="32000x16384 4096x4096 1048576x128 131072x1000 65536x2048 8192x32000 2048x128256 256x1048576 32x16384"
ngpu=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader

# tune DB DTYPE SHAPE...: one line per problem: wall time, winner's fraction of copy, sweep counts
tune() {
  local db=$1 d=$2; shift 2
  for s in "$@"; do
    local start=$(date +%s%N)
    $B --shape "$s" --dtype "$d" --cache "$db" --quiet >/tmp/tune.$$.log 2>&1
    local rc=$? t=$(( ($(date +%s%N) - start) / 1000000 ))
    printf "%s\t%s\t%d.%03d s\trc=%d\t%s\t%s\n" "$d" "$s" $((t / 1000)) $((t % 1000)) $rc \
      "$(grep -aE '^winner' /tmp/tune.$$.log | awk '{print $6}')" "$(grep -aE '^swept' /tmp/tune.$$.log)"
    [ $rc -eq 0 ] || tail -3 /tmp/tune.$$.log
    $B log --cache "$db" --shape "$s" --dtype "$d" | grep -aE " wrong|, [1-9][0-9]* failed" | head -3
  done
}

tests_half() {
  for t in ".carry/test_verify gpu" "python3 tests/test_check_py.py" "python3 tests/test_python.py" ".carry/test_gpu"; do
    if timeout 280 $t >"$out/$(echo "$t" | tr -c 'a-z0-9\n' '_' | cut -c1-30).log" 2>&1; then echo "PASS $t"
    else echo "FAIL $t"; grep -E "failed|FAIL" "$out/$(echo "$t" | tr -c 'a-z0-9\n' '_' | cut -c1-30).log" | head -8; fi
  done
  tune /tmp/st.db bf16 $SHAPES
}

f16_half() {
  tune /tmp/st.db f16 256x1048576 1x1000000 16384x50257 $SHAPES
}

peers() {
  SOFTMAX_TUNE_CACHE=/tmp/st.db SOFTMAX_TUNE_MISS=error CUDA_VISIBLE_DEVICES=0 timeout 300 python3 bench/peers.py \
    --dtypes bfloat16,float16 --out "$out/peers.tsv" >"$out/peers.log" 2>&1 || echo "peers.py: rc=$?"
  grep -E "^#.*WRONG" "$out/peers.log" | head -5
  cat "$out/peers.tsv"
}

if [ "$ngpu" -ge 2 ]; then
  (export CUDA_VISIBLE_DEVICES=1; tests_half >"$out/tests_half.txt" 2>&1) &
  CUDA_VISIBLE_DEVICES=0 f16_half >"$out/f16_half.txt" 2>&1
  wait
else
  f16_half >"$out/f16_half.txt" 2>&1
  tests_half >"$out/tests_half.txt" 2>&1
fi
peers >"$out/peers.txt" 2>&1
cp /tmp/st.db "$out/" 2>/dev/null
cat "$out/tests_half.txt" "$out/f16_half.txt" "$out/peers.txt"
