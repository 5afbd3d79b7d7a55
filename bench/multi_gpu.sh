#!/usr/bin/env bash
# multi_gpu.sh [BINARY] [OUT] — issue 19's measurement on a machine with several GPUs of one
# model: the 18 public problems (9 shapes, f32 and bf16) tuned with --gpu 0 from an empty
# cache, then with --gpu all from another empty cache; the wall time of each, their ratio
# (target: at most 0.55 on 2 GPUs), and a check that every winner is verified: in each run's
# log its trial passed verification, and the kernel the --gpu all cache holds is checked again
# against float64 on every GPU through the runtime (softmax-tune bench). Everything goes to OUT
# (default bench/results/multi-gpu-DATE.txt) and a short table ends it.
set -u
bin=${1:-build/softmax-tune}
out=${2:-bench/results/multi-gpu-$(date -u +%F).txt}
shapes=32000x16384,4096x4096,1048576x128,131072x1000,65536x2048,8192x32000,2048x128256,256x1048576,32x16384
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$(dirname "$out")"
exec > >(tee "$out") 2>&1

echo "# multi_gpu.sh on $(hostname), $(date -u '+%F %T') UTC, $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>/dev/null
ngpus=$(nvidia-smi -L 2>/dev/null | wc -l)

# run NAME GPUS: tune the list into $dir/NAME.db; its wall seconds into $dir/NAME.s
run() {
  echo; echo "## --gpu $2, empty cache"
  local t0=$(date +%s.%N)
  "$bin" --gpu "$2" --shape "$shapes" --dtype f32,bf16 --cache "$dir/$1.db" --quiet
  local rc=$?
  echo "exit $rc"
  awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { print a - b }' >"$dir/$1.s"
  echo "$rc" >"$dir/$1.rc"
}

# verified NAME: every problem's last run in the log has a winner whose trial passed (status ok)
verified() {
  local n=0 bad=0
  for s in ${shapes//,/ }; do
    for t in f32 bf16; do
      n=$((n + 1))
      "$bin" log --cache "$dir/$1.db" --shape "$s" --dtype "$t" --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
w = [t for t in r["trials"] if t["config"] == r["winner"]]
sys.exit(0 if r["status"] == "ok" and w and w[0]["status"] == "ok" else 1)' || { echo "NOT VERIFIED in the log of $1: $s $t"; bad=$((bad + 1)); }
    done
  done
  echo "$((n - bad))/$n"
}

run one 0
run all all
echo; echo "## the --gpu all winners checked again on every GPU (softmax-tune bench)"
rechecked=0 checks=0
for ((g = 0; g < ngpus; g++)); do
  for s in ${shapes//,/ }; do
    for t in f32 bf16; do
      checks=$((checks + 1))
      if "$bin" bench --gpu "$g" --shape "$s" --dtype "$t" --reps 20 --cache "$dir/all.db" >"$dir/bench" 2>&1 &&
         grep -q "verified against float64" "$dir/bench"; then
        rechecked=$((rechecked + 1))
      else
        echo "GPU $g $s $t:"; cat "$dir/bench"
      fi
    done
  done
done

one=$(cat "$dir/one.s") all=$(cat "$dir/all.s")
ratio=$(awk -v a="$all" -v b="$one" 'BEGIN { print a / b }')
echo
echo "## summary"
printf '%-22s %10s %6s %14s\n' run "wall s" exit "winners ok"
printf '%-22s %10.1f %6s %14s\n' "--gpu 0" "$one" "$(cat "$dir/one.rc")" "$(verified one)"
printf '%-22s %10.1f %6s %14s\n' "--gpu all ($ngpus GPUs)" "$all" "$(cat "$dir/all.rc")" "$(verified all)"
printf 'ratio all/one %.3f (target <= 0.55 on 2 GPUs): %s\n' "$ratio" "$(awk -v r="$ratio" 'BEGIN { print r <= 0.55 ? "met" : "NOT met" }')"
echo "--gpu all winners re-verified through the runtime on every GPU: $rechecked/$checks"
