#!/usr/bin/env bash
# class_run.sh check|speed|dynamic ... — width classes on the GPU machine, from the repository root,
# with .carry/ packed by bench/carry.sh (the tree measured) and, for speed, .carry_old/ (the
# tree before: `bash bench/carry.sh OLD_BUILD && mv .carry .carry_old`). Logs and tables to $OUT.
#   check    correctness in parallel lanes (not timed): test_gpu's sample (ragged widths: every
#            family's kernel at widths inside its class), test_runtime gpu (widths of one class
#            through one kernel), test_gpu --ce, --attn, --attn-bw; then the C++ ops built and
#            test_python, test_python_ce and test_python_attn
#   speed    bench/class_ab.py on SEED's random problems, forward and backward (N of each)
#   dynamic  bench/dynamic.py, every workload (needs the C++ ops: run after check); Liger Kernel's
#            sources from $LIGER_PATH, else .peers/liger (neither: no liger rows, the header says so)
set -u
. "$(dirname "$0")/carry_env.sh"
SEED=${SEED:-20261127}
N=${N:-40}
day=$(date +%F)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -o 'H[0-9]\+' | head -1 | tr H h)
t0=$(date +%s)

lane() {   # lane NAME LIMIT CMD...: the command's output to $out/NAME.log, its verdict line
  local name=$1 limit=$2 rc
  shift 2
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  echo "$name: rc=$rc after $(( $(date +%s) - t0 )) s: $(grep -E 'passed|failed|FAIL|SKIP' "$out/$name.log" | tail -2 | tr '\n' ' ')"
}

check() {
  local L=${LIMIT:-420}
  lane test_gpu "$L" .carry/test_gpu &
  lane test_runtime "$L" .carry/test_runtime gpu &
  { lane test_gpu_ce "$L" .carry/test_gpu --ce; lane test_gpu_attn_bw "$L" .carry/test_gpu --attn-bw; } &
  { lane test_gpu_attn "$L" .carry/test_gpu --attn
    SOFTMAX_TUNE_CPP=1 python3 python/setup.py build_ext --inplace >"$out/build.log" 2>&1; echo "C++ ops build: rc=$?"
    for t in test_python test_python_ce test_python_attn; do lane "$t" 300 python3 "tests/$t.py"; done; } &
  wait
}

speed() {
  python3 bench/random_shapes.py --seed "$SEED" --n "$N" --max-elems $((1 << 26)) >"$out/fwd.txt"
  python3 bench/random_shapes.py --seed "$((SEED + 1))" --n "$N" --max-elems $((1 << 26)) --backward | tail -n +2 >>"$out/fwd.txt"
  python3 bench/class_ab.py --old .carry_old --new .carry --shapes "$out/fwd.txt" --out "$out/class-ab-$gpu-$day.tsv" \
    2>"$out/class_ab.log"
  tail -1 "$out/class-ab-$gpu-$day.tsv"
}

dynamic() {   # the Python package of .carry/python where it is there (carry it: git archive HEAD python), else python/
  local py=python root=$PWD liger=${LIGER_PATH:-}
  [ -d .carry/python ] && py=.carry/python
  [ -n "$liger" ] || [ ! -d .peers/liger ] || liger=.peers/liger
  (cd "$py" && SOFTMAX_TUNE_INCLUDE=$root/include SOFTMAX_TUNE_CPP=1 python3 setup.py build_ext --inplace >"$out/build_dyn.log" 2>&1); echo "C++ ops build ($py): rc=$?"
  PYTHONPATH=$PWD/$py ST_TREE=$(cat .carry/TREE) python3 bench/dynamic.py --out "$out/dynamic-$gpu-$day.tsv" \
    ${WORKLOADS:+--workloads $WORKLOADS} ${liger:+--liger "$liger"} 2>"$out/dynamic.log"
  cat "$out/dynamic-$gpu-$day.tsv"
}

for phase in "$@"; do "$phase"; done
echo "all: $(( $(date +%s) - t0 )) s"
