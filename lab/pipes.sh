#!/usr/bin/env bash
# pipes.sh — what binds a compute-heavy kernel: Nsight Compute's per-pipe utilization (XU: MUFU's
# ex2, rcp, tanh; FMA; ALU), issue slots busy, warps resident and DRAM busy, with the kernel's
# instructions an element; and its SASS loop mix (cuobjdump) of the same config.
#   [BIN=.carry_old/softmax-tune] bash lab/pipes.sh 'OP DTYPE SHAPE CONFIG [flags...]' ...   (GPU machine,
#   .carry/ packed by bench/carry.sh; logs and SASS under $OUT when set)
# Each problem's config is tuned alone (--config) under ncu, its first st_cross_entropy* /
# st_softmax* / st_attn* launch after the verification profiled with caches flushed, clocks left
# alone (--clock-control none). First use: the 16-bit softcap's cross-entropy (MUFU bound or issue
# bound? docs/design/cross-entropy.md).
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=${BIN:-$PWD/.carry/softmax-tune} out=${OUT:-/tmp}; B=$(realpath "$B")
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "pipes.sh: no ncu (Nsight Compute) on this machine"; exit 1; }
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,smsp__inst_executed_pipe_xu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum
i=0
for p in "$@"; do
  read -r op d s cfg flags <<<"$p"
  i=$((i + 1))
  db=/tmp/pipes$i.db; rm -f "$db"
  "$NCU" --kernel-name regex:'^st_(cross|softmax|attn)' --launch-skip 2 --launch-count 1 --cache-control all \
    --clock-control none --metrics "$M" --csv "$B" --op "$op" --dtype "$d" --shape "$s" --config "$cfg" $flags \
    --cache "$db" --cubins none >"$out/pipes$i.csv" 2>&1
  "$B" compile --op "$op" --dtype "$d" --shape "$s" --config "$cfg" $flags --arch sm_90 -o /tmp/pipes$i.cubin >/dev/null 2>&1 &&
    command -v cuobjdump >/dev/null && cuobjdump -sass /tmp/pipes$i.cubin >"$out/pipes$i.sass"
  python3 - "$p" "$s" "$out/pipes$i.csv" "$out/pipes$i.sass" <<'PY'
import csv, os, re, sys
p, s, path, sass = sys.argv[1:5]
rows, cols = map(int, s.split("x")[-2:]) if s.count("x") == 1 else (0, 0)
lines = open(path).read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if start is None:
    print("%s: no profile (%s)" % (p, " | ".join(lines[-3:]))); sys.exit()
m = {}
for r in csv.DictReader(lines[start:]):
    m.setdefault(r["Kernel Name"], {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", "") or 0)
for k, v in m.items():
    n = rows * cols or 1
    print("%s\n  %s: %.1f us; per element: %.2f warp-instr/32 (xu %.3f, fma %.3f, alu %.3f); busy: xu %.0f%%, fma %.0f%%, "
          "alu %.0f%%, lsu %.0f%%, issue %.0f%%; warps %.0f%%, DRAM %.0f%%" % (
          p, k, v.get("gpu__time_duration.sum", 0) / 1e3, 32 * v.get("smsp__inst_executed.sum", 0) / n,
          32 * v.get("smsp__inst_executed_pipe_xu.sum", 0) / n, 32 * v.get("smsp__inst_executed_pipe_fma.sum", 0) / n,
          32 * v.get("smsp__inst_executed_pipe_alu.sum", 0) / n,
          v.get("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", 0),
          v.get("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 0),
          v.get("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active", 0),
          v.get("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active", 0),
          v.get("smsp__issue_active.avg.pct_of_peak_sustained_active", 0),
          v.get("sm__warps_active.avg.pct_of_peak_sustained_active", 0),
          v.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", 0)))
if os.path.exists(sass):
    ops = re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)", open(sass).read(), re.M)
    from collections import Counter
    print("  SASS %d instructions: %s" % (len(ops), ", ".join("%s %d" % kv for kv in Counter(ops).most_common(14))))
PY
done
