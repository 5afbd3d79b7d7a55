#!/usr/bin/env bash
# profile.sh DTYPE:SHAPE:CONFIG ... — on the GPU machine, with .carry/ packed by bench/carry.sh:
# for each config, tune that config alone (softmax-tune --config) under Nsight Compute, which
# profiles the kernel's first launch with caches flushed, and print its DRAM bytes against the
# tensor's, its L2 hit rate and its DRAM throughput: where a kernel's time goes beyond the copy
# floor, measured.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$PWD/.carry/softmax-tune
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "profile.sh: no ncu (Nsight Compute) on this machine"; exit 1; }
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed
i=0
for p in "$@"; do
  IFS=: read -r d s cfg <<<"$p"
  i=$((i + 1))
  "$NCU" --kernel-name st_softmax --launch-count 1 --cache-control all --metrics "$M" --csv \
    "$B" --shape "$s" --dtype "$d" --config "$cfg" --cache /tmp/st_profile.db --quiet >/tmp/st_profile$i.csv 2>&1
  rows=${s%x*} cols=${s#*x}
  es=$([ "$d" = f32 ] && echo 4 || echo 2)
  python3 - "$d" "$s" "$cfg" "$((rows * cols * es))" /tmp/st_profile$i.csv <<'PY'
import csv, sys
d, s, cfg, tensor, path = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
lines = open(path).read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if start is None:
    print("%s %s: no profile (%s)" % (d, s, " | ".join(lines[-3:]))); sys.exit()
m = {}
for r in csv.DictReader(lines[start:]):
    v = r["Metric Value"].replace(",", "")
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-3, "us": 1, "ms": 1e3,
             "nsecond": 1e-3, "usecond": 1, "msecond": 1e3}.get(r["Metric Unit"], 1)
    m[r["Metric Name"]] = float(v) * scale
print("%-4s %-12s %8.1f us  DRAM read %.2fx, write %.2fx the tensor  L2 hit %5.1f%%  DRAM busy %5.1f%%  %s" % (
    d, s, m.get("gpu__time_duration.sum", 0), m.get("dram__bytes_read.sum", 0) / tensor,
    m.get("dram__bytes_write.sum", 0) / tensor, m.get("lts__t_sector_hit_rate.pct", 0),
    m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", 0), cfg))
PY
done
