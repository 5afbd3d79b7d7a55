#!/usr/bin/env bash
# fused_cases_run.sh — bench/fused_cases.py on the GPU machine, from the repository root, with .carry/ packed
# by bench/carry.sh (the library and the command; the kernels from $SOFTMAX_TUNE_CACHE, the rule's for problems
# nobody tuned) and Liger Kernel's sources from $LIGER_PATH, else .carry_lce/peers/liger (bench/lce_run.sh pack
# with LIGER_GIT), else .peers/liger (none: its rows are left out, the header says so). $FUSED_ARGS passed on,
# e.g. "--case softcap", "--quick", "--tune .carry/softmax-tune" (each problem tuned first: about 10 s each).
# The log and the table (fused-cases-GPU-DATE.tsv) go to $OUT (or /tmp/st_out); cut at $LIMIT s (default 590:
# the rows done by then are in the table).
set -u
. "$(dirname "$0")/carry_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
liger=${LIGER_PATH:-}
for d in .carry_lce/peers/liger .peers/liger; do
  [ -n "$liger" ] || [ ! -d "$d/liger_kernel" ] || liger=$d
done
t0=$(date +%s)
# shellcheck disable=SC2086
timeout -k 10 "${LIMIT:-590}" python3 bench/fused_cases.py ${liger:+--liger "$liger"} ${FUSED_ARGS:-} \
  >"$out/fused_cases.log" 2>&1
echo "fused_cases: rc=$? in $(( $(date +%s) - t0 )) s (124: cut at the limit), liger ${liger:-not found}"
grep -E "Error|error" "$out/fused_cases.log" | awk -F'\t' 'NF < 5' | head -10   # not the table's rows
tab=$(find bench/results -name 'fused-cases-*.tsv' -newermt "@$t0" | head -1)   # named by the script: its GPU, today
[ -n "$tab" ] && cp "$tab" "$out/" && grep -v "^# [A-Z]" "$tab"
