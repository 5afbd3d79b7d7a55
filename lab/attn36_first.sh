#!/usr/bin/env bash
# attn36_first.sh — the next session's first call (session 35's open items 2 and 3), on the GPU
# machine: prediction 86's A/B (lab/attn35_align.sh with the main templates, then with
# .carry_tv/B = main + lab/patches/attn-partial-fold.patch), beside the C++ ops' build; then
# test_python_attn on the C++ ops and on ctypes (its masked-keys case). $OUT.
# Here first: bash bench/carry.sh && rm -rf .carry_tv && mkdir -p .carry_tv/B &&
#   git archive HEAD templates | tar -x -C .carry_tv/B &&
#   git apply --directory=.carry_tv/B lab/patches/attn-partial-fold.patch
# then run with carry [".carry", ".carry_tv"].
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
bash bench/host_run.sh build >"$out/build.txt" 2>&1 &
for tv in "" .carry_tv/B; do
  echo "== templates ${tv:-main}"
  TEMPLATES=$tv bash lab/attn35_align.sh
done
echo "A/B: $(( $(date +%s) - t0 )) s"
python_attn_tests 240
echo "total: $(( $(date +%s) - t0 )) s"
