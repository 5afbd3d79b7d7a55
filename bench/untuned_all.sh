#!/usr/bin/env bash
# untuned_all.sh [CARRY] — issue 39's two untuned tables in one GPU call (about 540 s on an H100, cut
# to $BUDGET s, default 560), from the repository root with CARRY (default .carry) packed by
# bench/carry.sh:
#  1. unless the shipped table has backward entries already (PRETUNE=1: anyway): the backward grid
#     (bench/shapes/pretune-bw-sm_90.txt) tuned and added to a copy of the shipped
#     table, templates/defaults/sm_90.tsv: $OUT/sm_90.tsv (pretune --add, cut at $PRETUNE_LIMIT s,
#     default 200; what a cut run tuned is added from its cache by pretune --from-cache --add);
#  2. bench/untuned_run.sh with SOFTMAX_TUNE_TABLE=$OUT/sm_90.tsv (the table as it would be built in)
#     on the forward list, bench/shapes/random-fwd-20261126.txt: $OUT/untuned.tsv;
#  3. the same on the backward list, random-bw-20261126.txt: $OUT/backward-untuned.tsv.
# Each direction's tuning is cut at $TUNE_LIMIT s (default 90; problems it did not reach are marked in
# the table), each phase at $PHASE_LIMIT s (default 90); the forward direction leaves $BW_SHARE s
# (default 170) of the budget to the backward one. Logs in $OUT, caches in $WORK (/tmp/st_untuned).
set -u
carry=${1:-.carry}
out=${OUT:-/tmp/untuned-out}
work=${WORK:-/tmp/st_untuned}
start=$(date +%s)
rm -rf "$work" && mkdir -p "$out" "$work"
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64
B=$PWD/$carry/softmax-tune
[ -x "$B" ] || { echo "untuned_all.sh: no $B (pack it here with bash bench/carry.sh, run from the repository root)"; exit 2; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"

grid=bench/shapes/pretune-bw-sm_90.txt
cp templates/defaults/sm_90.tsv "$out/sm_90.tsv"
if grep -q _backward "$out/sm_90.tsv" && [ "${PRETUNE:-0}" != 1 ]; then
  echo "pretune: skipped, the shipped table has its backward entries ($(grep -c _backward "$out/sm_90.tsv"); PRETUNE=1 tunes the grid again)" |
    tee "$out/pretune-summary.txt"
else
  timeout -k 10 "${PRETUNE_LIMIT:-200}" "$B" pretune --gpu 0 --grid "$grid" --cache "$work/pretune.db" --add -o "$out/sm_90.tsv" \
    >"$out/pretune.log" 2>&1
  rc=$?
  if ! grep -q _backward "$out/sm_90.tsv" && [ -e "$work/pretune.db" ]; then   # cut short: what it tuned
    "$B" pretune --from-cache --cache "$work/pretune.db" --add -o "$out/sm_90.tsv" >>"$out/pretune.log" 2>&1
  fi
  echo "pretune: rc $rc in $(($(date +%s) - start)) s (limit ${PRETUNE_LIMIT:-200}; 124: cut); $(grep -c _backward "$out/sm_90.tsv")" \
    "backward entries of the grid's $(grep -vc '^#' "$grid") in $out/sm_90.tsv" | tee "$out/pretune-summary.txt"
  grep -a -E "^wrote|^--add|error|failed|FAILED" "$out/pretune.log" | tail -5
fi

export SOFTMAX_TUNE_TABLE=$out/sm_90.tsv WORK=$work DEADLINE=$((start + ${BUDGET:-560}))
export TUNE_LIMIT=${TUNE_LIMIT:-90} PHASE_LIMIT=${PHASE_LIMIT:-90}
SHAPES=bench/shapes/random-fwd-20261126.txt RESERVE=${BW_SHARE:-170} bash bench/untuned_run.sh "$carry"
SHAPES=bench/shapes/random-bw-20261126.txt RESERVE=0 bash bench/untuned_run.sh "$carry"
echo "untuned_all.sh: $(($(date +%s) - start)) s in all"
