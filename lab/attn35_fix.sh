#!/usr/bin/env bash
# attn35_fix.sh — on the GPU machine, prediction 85's tree (a partly visible vector loaded whole):
# lab/attn35_align.sh's slow key lengths and their neighbours again, then test_gpu --attn and
# --attn-bw side by side. $OUT.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
. "$(dirname "$0")/run_test.sh"
bash lab/attn35_align.sh
echo "align: $(( $(date +%s) - t0 )) s"
attn_tests ${LIMIT:-270}
