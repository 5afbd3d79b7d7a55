#!/usr/bin/env bash
# attn35_prof.sh — on the GPU machine: Nsight Compute on the tuned bf16 4x8192 key-padding kernels
# at a key length where they run slow and one where they do not (lab/attn35_curve.sh's spikes),
# first launch, caches flushed: duration, DRAM bytes and throughput, L2 hit rate, stalls.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
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
SC=0.08838834764831845
for op in attention_softmax attention_softmax_backward; do
  .carry/softmax-tune --op $op --shape 4x1x8192x8192 --dtype bf16 --mask padding --scale $SC --quiet >/tmp/t.log 2>&1
  grep -E '^winner' /tmp/t.log
done
while read -r kern fwd f; do [ "$fwd" = - ] && fwd=""
  timeout 120 "$NCU" --kernel-name "regex:^$kern\$" --launch-count 1 --cache-control all --metrics "$M" --csv \
    python3 lab/attn35_lengths.py x $fwd --shape 4,8192 --fracs $f --once >/tmp/p.csv 2>&1
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
