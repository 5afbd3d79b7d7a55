#!/usr/bin/env bash
# attn36_ab.sh — prediction 86's A/B on the GPU machine: lab/attn35_align.sh with 40b77ce's
# templates (.carry_tv/A/templates) and main's (the fold applied), A B A B; then test_gpu --attn and
# --attn-bw on main. $OUT. Here first: bash bench/carry.sh && rm -rf .carry_tv && mkdir -p
# .carry_tv/A && git archive 40b77ce templates | tar -x -C .carry_tv/A; carry [".carry", ".carry_tv"].
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
for round in 1 2; do
  for tv in .carry_tv/A/templates ""; do
    echo "== round $round, templates ${tv:-main}"
    TEMPLATES=$tv bash lab/attn35_align.sh
  done
done
echo "A/B: $(( $(date +%s) - t0 )) s"
attn_tests 280
