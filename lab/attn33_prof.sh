#!/usr/bin/env bash
# attn33_prof.sh — on the GPU machine (.carry from bench/carry.sh): where the attention kernels'
# time goes against the masked floor. Each problem (bf16) is tuned, then Nsight Compute profiles
# its winner and the tuner's floor kernel (first launches, caches flushed): duration, DRAM
# throughput, occupancy, registers and the warps' stall reasons a issued instruction.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64
B=$PWD/.carry/softmax-tune
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu"; exit 1; }
S=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers
M=$M,launch__grid_size,launch__block_size,smsp__average_warp_latency_per_inst_issued.ratio
for r in long_scoreboard barrier membar short_scoreboard wait lg_throttle drain math_pipe_throttle not_selected selected no_instruction mio_throttle dispatch_stall branch_resolving; do
  M=$M,${S}_${r}_per_issue_active.ratio
done
t0=$(date +%s)
while read -r op s m; do
  SOFTMAX_TUNE_CACHE=/tmp/p.db $B --op $op --shape $s --dtype bf16 --mask $m --quiet --force >/tmp/p.log 2>&1
  w=$(grep -E '^winner' /tmp/p.log)
  cfg=$(echo "$w" | grep -oE 'threads=[^ ]+')
  echo "== $op $s $m: $(grep -E '^copy floor' /tmp/p.log) | $w"
  for k in 'regex:^st_attention' 'regex:floor'; do
    SOFTMAX_TUNE_CACHE=/tmp/p2.db timeout 120 "$NCU" --kernel-name "$k" --launch-count 1 --cache-control all --metrics "$M" --csv \
      $B --op $op --shape $s --dtype bf16 --mask $m --config "$cfg" --quiet >/tmp/p.csv 2>&1
    python3 - /tmp/p.csv <<'PY'
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
st = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if st is None: print("  no profile:", " | ".join(lines[-3:])); sys.exit()
m, name = {}, ""
for r in csv.DictReader(lines[st:]):
    name = r["Kernel Name"]; m[r["Metric Name"]] = r["Metric Value"]
g = lambda k: m.get(k, "?")
print("  %-34s %s us-ish(%s) dram %s%% rd %s wr %s warps %s%% regs %s blk/SM(reg) %s grid %s x %s lat/inst %s" % (
    name[:34], g("gpu__time_duration.sum"), "ns?", g("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    g("dram__bytes_read.sum"), g("dram__bytes_write.sum"), g("sm__warps_active.avg.pct_of_peak_sustained_active"),
    g("launch__registers_per_thread"), g("launch__occupancy_limit_registers"), g("launch__grid_size"), g("launch__block_size"),
    g("smsp__average_warp_latency_per_inst_issued.ratio")))
st = sorted(((float(v.replace(",", "")), k.split("stalled_")[1].split("_per_issue")[0]) for k, v in m.items() if "stalled_" in k), reverse=True)
print("    stalls/inst: " + ", ".join("%s %.1f" % (n, v) for v, n in st[:6]))
PY
  done
done <<'L'
attention_softmax 16x1x4096x4096 causal
attention_softmax 16x1x4096x4096 padding
attention_softmax_backward 16x1x4096x4096 padding
attention_softmax_backward 16x1x4096x4096 causal
attention_softmax 256x1x1024x1024 padding
L
echo "all: $(( $(date +%s) - t0 )) s"
