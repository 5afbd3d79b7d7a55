#!/usr/bin/env bash
# attn_key_lengths.sh [curve|align|prof] — does a key-padding kernel run at the same fraction of the
# masked floor at every key length? The tuned attention kernels (bf16, key padding, fast sweep as the
# table tunes them) timed at chosen key lengths L (every batch at L) by lab/attn_key_lengths.py,
# beside bench/attention_softmax.py's Triton masked floor in the same interleaved rounds.
#   curve  4x1x8192x8192 and 1x1x32768x32768, fwd and bwd, L from 0.25 K to K in steps of 0.025 K
#          (and a few more): a kernel that slows at some lengths shows as spikes ($OUT/curve.tsv)
#   align  the lengths found slow on 2026-11-26 (not a multiple of 8: a partly visible vector) beside
#          their neighbours that are multiples of 8 ($OUT/align.tsv). TEMPLATES=DIR (holding space.lua)
#          tunes with those templates into a cache of their own; the runtime finds an entry only under
#          the templates it was built with, so an A/B of templates needs two carried builds, not this
#   prof   Nsight Compute (first launch, caches flushed) of the 4x8192 kernels at slow and fast
#          lengths: duration, DRAM bytes and busy, L2 hit rate, warps' stall reasons an instruction
# On the GPU machine from the repository root, .carry/ packed by bench/carry.sh (C++ ops not needed):
#   OUT=$OUT bash lab/attn_key_lengths.sh curve
# What it found (H100, 2026-11-26, 1818acd): lengths not a multiple of 8 ran at 0.60-0.84 of the floor
# against 0.91-1.05 beside them, fixed in 7d3fc87 and a239e9c (docs/design/attention.md).
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
SC=0.08838834764831845
mode=${1:-curve}
tune() {   # tune OP SHAPE: the problem tuned as the table tunes it; prints its winner
  .carry/softmax-tune --op "$1" --shape "$2" --dtype bf16 --mask padding --scale $SC ${TEMPLATES:+--templates $TEMPLATES} \
    --quiet >/tmp/t.log 2>&1
  echo "$1 $2: $(grep -E '^winner' /tmp/t.log)"
}
case $mode in
curve)
  export SOFTMAX_TUNE_CACHE=/tmp/curve.db
  FRACS=$(python3 -c "print(','.join('%.3f' % (0.25 + 0.025 * i) for i in range(31)) + ',0.330,0.335,0.345,0.350')")
  while read -r op s pyargs; do
    tune "$op" "$s"
    timeout 150 python3 lab/attn_key_lengths.py "$op/$s" $pyargs --fracs $FRACS >>"$out/curve.tsv" 2>"$out/curve.err"
    echo "($(( $(date +%s) - t0 )) s)"
  done <<'P'
attention_softmax_backward 1x1x32768x32768 --shape 1,32768
attention_softmax 1x1x32768x32768 --fwd --shape 1,32768
attention_softmax 4x1x8192x8192 --fwd --shape 4,8192
attention_softmax_backward 4x1x8192x8192 --shape 4,8192
P
  sort -t$'\t' -k1,1 -k2,2n "$out/curve.tsv" | awk -F'\t' '{printf "%s %s %s %s %s\n", $1, $2, $3, $4, $5}' ;;
align)
  [ -z "${TEMPLATES:-}" ] || [ -f "$TEMPLATES/space.lua" ] || { echo "TEMPLATES=$TEMPLATES: no space.lua there"; exit 2; }
  export SOFTMAX_TUNE_CACHE=/tmp/align_$(echo ${TEMPLATES:-main} | tr -c 'a-zA-Z0-9\n' _).db
  while read -r op s pyargs; do
    tune "$op" "$s"
    timeout 100 python3 lab/attn_key_lengths.py "$op/$s" $pyargs 2>&1 | tee -a "$out/align.tsv" |
      awk -F'\t' '{print "  ", $2, $3, $4, $5}'
  done <<'P'
attention_softmax 4x1x8192x8192 --fwd --shape 4,8192 --lengths 3276,3280,3272,3264,2252,2256,2248,2240,5324,5328,5320,3686,3688
attention_softmax_backward 4x1x8192x8192 --shape 4,8192 --lengths 3686,3688,3680,3672,2662,2664,2656,4710,4712
attention_softmax_backward 1x1x32768x32768 --shape 1,32768 --lengths 13926,13928,13920,9830,9832,9824
P
  ;;
prof)
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$NCU" ] || { echo "no ncu"; exit 1; }
  S=smsp__average_warps_issue_stalled
  M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum
  M=$M,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_sectors_srcunit_tex_op_write.sum
  M=$M,lts__t_sectors_srcunit_tex_op_read.sum,smsp__average_warp_latency_per_inst_issued.ratio,sm__cycles_elapsed.avg.per_second
  for r in long_scoreboard barrier membar short_scoreboard wait lg_throttle drain not_selected selected mio_throttle; do
    M=$M,${S}_${r}_per_issue_active.ratio
  done
  export SOFTMAX_TUNE_CACHE=/tmp/prof.db
  tune attention_softmax 4x1x8192x8192; tune attention_softmax_backward 4x1x8192x8192
  while read -r kern fwd f; do [ "$fwd" = - ] && fwd=""
    timeout 120 "$NCU" --kernel-name "regex:^$kern\$" --launch-count 1 --cache-control all --metrics "$M" --csv \
      python3 lab/attn_key_lengths.py x $fwd --shape 4,8192 --fracs $f --once >/tmp/p.csv 2>&1
    python3 - /tmp/p.csv "$kern $f" <<'PY'
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
st = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if st is None: print(sys.argv[2], "no profile:", " | ".join(lines[-3:])); sys.exit()
m = {}
for r in csv.DictReader(lines[st:]):
    m[r["Metric Name"]] = r["Metric Value"]
g = lambda k: m.get(k, "?")
print("%s: %s ns dram %s%% rd %s wr %s l2hit %s%% l2 rd/wr sectors %s/%s warps %s%% lat %s clk %s" % (sys.argv[2],
    g("gpu__time_duration.sum"), g("dram__throughput.avg.pct_of_peak_sustained_elapsed"), g("dram__bytes_read.sum"),
    g("dram__bytes_write.sum"), g("lts__t_sector_hit_rate.pct"), g("lts__t_sectors_srcunit_tex_op_read.sum"),
    g("lts__t_sectors_srcunit_tex_op_write.sum"), g("sm__warps_active.avg.pct_of_peak_sustained_active"),
    g("smsp__average_warp_latency_per_inst_issued.ratio"), g("sm__cycles_elapsed.avg.per_second")))
st = sorted(((float(v.replace(",", "")), k.split("stalled_")[1].split("_per_issue")[0]) for k, v in m.items() if "stalled_" in k), reverse=True)
print("    stalls/inst: " + ", ".join("%s %.1f" % (n, v) for v, n in st[:6]))
PY
  done <<'L'
st_attention_softmax --fwd 0.375
st_attention_softmax --fwd 0.400
st_attention_softmax --fwd 0.525
st_attention_softmax --fwd 0.575
st_attention_softmax_backward - 0.425
st_attention_softmax_backward - 0.450
L
  ;;
*) echo "usage: attn_key_lengths.sh [curve|align|prof]"; exit 2 ;;
esac
echo "$mode: $(( $(date +%s) - t0 )) s"
