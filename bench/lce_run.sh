#!/usr/bin/env bash
# lce_run.sh [pack] [tests] [bench] — linear and vocab-parallel cross-entropy (issue 57,
# docs/linear-cross-entropy.md).
#   pack   (here, not on the GPU machine) fill .carry_lce/ (git-ignored) with what the GPU machine runs: the
#          library built from a clean tree ($BUILD, default /tmp/lce-build, built from $SRC, default the
#          repository root: a `git worktree` of the commit to measure), the Lua and SQLite libraries it links,
#          the command, a copy of the Python package, the two tests with pyharness.py and the benchmark with
#          benchlib.py and cross_entropy.py, which it imports (so what runs is that tree's, not the working
#          tree's), a default table with the bf16 cross-entropy winners of bench/results/cross-entropy-tune-h100-2026-11-27.tsv added (the chunks'
#          shapes are adapted from them), and the peers' Python sources from git directories ($LIGER_GIT,
#          $CCE_GIT: Liger Kernel and Cut Cross-Entropy), each with its commit in COMMIT.
#   tests  (GPU machine) tests/test_python_lce.py and tests/test_python_vocab_parallel.py, from .carry_lce/.
#   bench  (GPU machine) bench/linear_cross_entropy.py ($LCE_BENCH_ARGS passed on), its table under $OUT.
# On the GPU machine, from the repository root, with .carry_lce/ carried; logs under $OUT (or /tmp/st_out).
set -u
c=${CARRY:-.carry_lce}
if [ "${1:-}" = pack ]; then
  set -e
  src=${SRC:-$PWD}
  build=${BUILD:-/tmp/lce-build}
  rm -rf "$c" && mkdir -p "$c/lib" "$c/python" "$c/tests" "$c/bench" "$c/peers/liger" "$c/peers/cce"
  cp -L "$build/libsoftmax_tune.so" "$c/lib/" && ln -s libsoftmax_tune.so "$c/lib/libsoftmax_tune.so.0"
  cp -L /usr/lib/x86_64-linux-gnu/liblua5.4.so.0 /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 "$c/lib/"
  cp "$build/softmax-tune" "$c/"
  cp -r "$src/python/softmax_tune" "$c/python/"
  rm -rf "$c/python/softmax_tune/__pycache__" "$c"/python/softmax_tune/_C*.so
  cp "$src/tests/pyharness.py" "$src/tests/test_python_lce.py" "$src/tests/test_python_vocab_parallel.py" "$c/tests/"
  cp "$src/bench/benchlib.py" "$src/bench/cross_entropy.py" "$src/bench/linear_cross_entropy.py" "$c/bench/"
  { cat "$src/templates/defaults/sm_90.tsv"
    awk -F'\t' '!/^#/ && $1 == "bf16" { split($2, s, "x"); printf "%s\t%s\t%s\t%s\t%s\t%s\n", $1, $3, s[1], s[2], $5, $9 }' \
      "$src/bench/results/cross-entropy-tune-h100-2026-11-27.tsv"; } >"$c/table.tsv"
  if [ -n "${LIGER_GIT:-}" ]; then
    git --git-dir="$LIGER_GIT" archive HEAD src/liger_kernel | tar -x -C "$c/peers/liger" --strip-components=1
    git --git-dir="$LIGER_GIT" rev-parse --short HEAD >"$c/peers/liger/COMMIT"
  fi
  if [ -n "${CCE_GIT:-}" ]; then
    git --git-dir="$CCE_GIT" archive HEAD cut_cross_entropy | tar -x -C "$c/peers/cce"
    git --git-dir="$CCE_GIT" rev-parse --short HEAD >"$c/peers/cce/COMMIT"
  fi
  echo "$(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD -- . || echo +changes)" >"$c/TREE"
  du -sh "$c"
  exit 0
fi

out=${OUT:-/tmp/st_out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SOFTMAX_TUNE_LIB=$PWD/$c/lib/libsoftmax_tune.so
export SOFTMAX_TUNE_CACHE=${SOFTMAX_TUNE_CACHE:-/tmp/st.db}
export SOFTMAX_TUNE_NO_CPP=${SOFTMAX_TUNE_NO_CPP:-1}
export SOFTMAX_TUNE_TREE=$(cat "$c/TREE" 2>/dev/null)
export PYTHONPATH=$PWD/$c/python
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader

check() {   # check NAME LIMIT COMMAND...: run it, its log under $out, its verdict and failures
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "$name: rc=$?"
  grep -E "^FAIL|failures|SKIP|Error|error:|ok$|ok |memory:|backend:" "$out/$name.log" | head -40
}

for step in ${*:-tests bench}; do
  case $step in
    tests) check test_python_lce "${LCE_TEST_LIMIT:-300}" python3 "$c/tests/test_python_lce.py"
           check test_python_vocab_parallel "${LCE_TEST_LIMIT:-300}" python3 "$c/tests/test_python_vocab_parallel.py" ;;
    bench) # shellcheck disable=SC2086
           SOFTMAX_TUNE_TABLE=$PWD/$c/table.tsv SOFTMAX_TUNE_PY=$PWD/$c/python \
             check linear_cross_entropy "${LCE_BENCH_LIMIT:-500}" python3 "$c/bench/linear_cross_entropy.py" \
             --peers "$c/peers" --out "$out/linear-cross-entropy-h100-$(date +%F).tsv" ${LCE_BENCH_ARGS:-}
           grep -vE "^# (Loss|floor_ms|Peers|softmax_tune|Median)" "$out/linear_cross_entropy.log" | tail -70 ;;
    *) echo "unknown step $step (pack, tests, bench)"; exit 2 ;;
  esac
done
