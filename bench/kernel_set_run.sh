#!/usr/bin/env bash
# kernel_set_run.sh build|check|dynamic ... — the kernel set (docs/kernel-set.md) on the GPU machine,
# from the repository root, with .carry/ packed by bench/carry.sh from a build made with
# -DST_KERNEL_SET=OFF (the set is compiled here, where 16 cores make it in about two minutes, and
# the carry stays small). Logs and tables to $OUT.
#   build    softmax-tune kernels --build sm_90 into .carry/lib/softmax_tune.kernels (beside the
#            library) and .carry/ (beside the command and the test programs), timed
#   check    test_runtime gpu (a class of the set loaded, nothing compiled), then the C++ ops
#            built and test_python_untuned, test_python, test_python_ce, test_python_attn
#   dynamic  bench/dynamic.py, every workload (after check: it needs the C++ ops)
#   host     bench/class_host.py: a new width of a known class against a repeated shape, host time
#   fused    bench/untuned_fused.py on SEED's N cross-entropy and N attention problems: untuned
#            (the set, an empty cache, a fresh process) against tuned (each tuned first)
set -u
. "$(dirname "$0")/carry_env.sh"
day=$(date +%F)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -o 'H[0-9]\+' | head -1 | tr H h)
t0=$(date +%s)

build() {   # kept in /tmp/kset while the machine is warm: a later call's .carry is a fresh copy
  local s=$(date +%s)
  if [ -f /tmp/kset/softmax_tune.kernels ]; then
    cp /tmp/kset/softmax_tune.kernels .carry/lib/ && cp /tmp/kset/softmax_tune.kernels .carry/ && echo "set: the one built before"
    return
  fi
  if [ -f .carry/softmax_tune.kernels.gz ]; then   # packed by SET=FILE bench/carry.sh
    gunzip -c .carry/softmax_tune.kernels.gz >.carry/lib/softmax_tune.kernels
    echo "set: the carried one, unpacked: rc=$? in $(( $(date +%s) - s )) s"
  else
    .carry/softmax-tune kernels --build "${ARCHS:-sm_90}" --jobs "$(nproc)" -o .carry/lib/softmax_tune.kernels 2>&1 | tail -2
    echo "set build: rc=${PIPESTATUS[0]} in $(( $(date +%s) - s )) s on $(nproc) cores"
  fi
  cp .carry/lib/softmax_tune.kernels .carry/ && mkdir -p /tmp/kset && cp .carry/lib/softmax_tune.kernels /tmp/kset/
  .carry/softmax-tune kernels | head -1
}

check() {
  timeout 300 .carry/test_runtime gpu >"$out/test_runtime.log" 2>&1; echo "test_runtime gpu: rc=$? $(tail -1 "$out/test_runtime.log")"
  grep -i "note\|FAIL" "$out/test_runtime.log" | head -5
  SOFTMAX_TUNE_CPP=1 python3 python/setup.py build_ext --inplace >"$out/build.log" 2>&1; echo "C++ ops build: rc=$?"
  timeout 300 python3 tests/test_python_untuned.py .carry/softmax-tune >"$out/test_python_untuned.log" 2>&1
  echo "test_python_untuned: rc=$? $(tail -1 "$out/test_python_untuned.log")"
  for t in test_python test_python_ce test_python_attn; do
    timeout 300 python3 "tests/$t.py" >"$out/$t.log" 2>&1; echo "$t: rc=$? $(tail -1 "$out/$t.log")"
  done
}

dynamic() {
  PYTHONPATH=$PWD/python ST_TREE=$(cat .carry/TREE) python3 bench/dynamic.py --out "$out/dynamic-$gpu-$day.tsv" ${WORKLOADS:+--workloads $WORKLOADS} \
    2>"$out/dynamic.log"
  cat "$out/dynamic-$gpu-$day.tsv"
}

host() { PYTHONPATH=$PWD/python python3 bench/class_host.py 2>/dev/null; }

fused() {   # untuned, then tuned (split over calls: PHASES=untuned or tuned; the cache kept in /tmp/st_fused)
  local p=/tmp/st_fused/problems.tsv c=/tmp/st_fused
  mkdir -p $c
  [ -f "$p" ] || PYTHONPATH=$PWD/python python3 bench/untuned_fused.py problems --seed "${SEED:-20261128}" --n "${N:-20}" --out "$p"
  cp "$p" "$out/"
  # the C++ ops, as an install has them (the ctypes path's first backward costs 60-1900 ms: lab/NOTES.md)
  ls python/softmax_tune/_C*.so >/dev/null 2>&1 || bash bench/host_run.sh build >"$out/build.txt" 2>&1
  echo "fused: the C++ ops serve: $(PYTHONPATH=$PWD/python python3 -c 'import softmax_tune; print(softmax_tune.cpp_ops)')"
  [ "${PHASES:-untuned,tuned}" != tuned ] || { fused_tuned; return; }
  SOFTMAX_TUNE_CACHE=$c/c.db SOFTMAX_TUNE_CUBINS=none SOFTMAX_TUNE_MISS=heuristic PYTHONPATH=$PWD/python \
    python3 bench/untuned_fused.py phase untuned --problems "$p" --out "$out/untuned.tsv" >"$out/untuned.log" 2>&1
  echo "untuned: rc=$? $(wc -l <"$out/untuned.tsv") rows"
  cp "$out/untuned.tsv" $c/
  [ "${PHASES:-untuned,tuned}" != untuned ] && fused_tuned
}

fused_tuned() {
  local p=/tmp/st_fused/problems.tsv c=/tmp/st_fused
  SOFTMAX_TUNE_CACHE=$c/t.db SOFTMAX_TUNE_MISS=error PYTHONPATH=$PWD/python python3 bench/untuned_fused.py phase tuned \
    --tune .carry/softmax-tune --problems "$p" --out "$out/tuned.tsv" >"$out/tuned.log" 2>&1
  echo "tuned: rc=$? $(wc -l <"$out/tuned.tsv") rows"
  PYTHONPATH=$PWD/python python3 bench/untuned_fused.py merge $c/untuned.tsv "$out/tuned.tsv" --out "$out/untuned-fused-$gpu-$day.tsv"
  cat "$out/untuned-fused-$gpu-$day.tsv"
}

for phase in "$@"; do "$phase"; done
echo "all: $(( $(date +%s) - t0 )) s"
