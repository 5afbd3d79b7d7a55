#!/usr/bin/env bash
# attn35_pin.sh — on the GPU machine: do the key-padding rows under 0.90 lose to the tuner's pick
# or to every kernel? Each problem (op dtype shape bench-args on stdin) is tuned by the fast sweep
# (the table's way) and benched (bench/attention_softmax.py: the table's draws, Triton floor in
# the same rounds); then swept whole (--sweep full), and its TOP fastest configs by the tuner's
# timing each pinned (--config) into a cache of its own and benched the same way. $OUT/pin.tsv.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
TOP=${TOP:-6}
SC=0.08838834764831845
printf "op\tdtype\tshape\tpick\ttuner_us\tms\tfrac_of_floor\tconfig\n" >"$out/pin.tsv"
bench() {   # CACHE DTYPE ARGS... -> "ms frac" of softmax_tune's row
  SOFTMAX_TUNE_CACHE=$1 timeout 120 python3 bench/attention_softmax.py --no-inductor --rounds 20 --no-decode \
    --masks padding --dtypes "$2" "${@:3}" --out /tmp/pin_b.tsv >/tmp/pin_b.log 2>&1
  grep -P "\tsoftmax_tune\t" /tmp/pin_b.tsv | awk -F'\t' '{print $7, $8}'; }
while read -r op d s dn args; do
  [ $(( $(date +%s) - t0 )) -gt ${LIMIT:-540} ] && { echo "skipped $op $d $s (time)"; continue; }
  rm -f /tmp/fast.db /tmp/full.db
  .carry/softmax-tune --op $op --shape $s --dtype $d --mask padding --scale $SC --quiet --cache /tmp/fast.db >/tmp/t.log 2>&1
  w=$(grep -E '^winner' /tmp/t.log | head -1)
  printf "%s\t%s\t%s\tfast\t-\t%s\t%s\n" $op $d $s "$(bench /tmp/fast.db $dn $args | tr ' ' '\t')" "$w" >>"$out/pin.tsv"
  timeout 150 .carry/softmax-tune --op $op --shape $s --dtype $d --mask padding --scale $SC --sweep full --force --quiet \
    --cache /tmp/full.db >/tmp/f.log 2>&1
  .carry/softmax-tune log --csv --cache /tmp/full.db >/tmp/full.csv 2>&1
  python3 - "$TOP" >/tmp/top.txt <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open("/tmp/full.csv")) if r["status"] == "ok" and float(r["us"]) > 0]
rows.sort(key=lambda r: float(r["us"]))
for r in rows[:int(sys.argv[1])]:
    print(r["us"], r["config"])
PY
  while read -r us cfg; do
    rm -f /tmp/pin.db
    .carry/softmax-tune --op $op --shape $s --dtype $d --mask padding --scale $SC --config "$cfg" --quiet \
      --cache /tmp/pin.db >/tmp/p.log 2>&1 || { echo "pin failed: $cfg: $(tail -1 /tmp/p.log)"; continue; }
    printf "%s\t%s\t%s\tfull\t%s\t%s\t%s\n" $op $d $s "$us" "$(bench /tmp/pin.db $dn $args | tr ' ' '\t')" "$cfg" >>"$out/pin.tsv"
  done </tmp/top.txt
  echo "$op $d $s done ($(( $(date +%s) - t0 )) s)"
done
column -t -s$'\t' "$out/pin.tsv"
