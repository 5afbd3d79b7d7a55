#!/usr/bin/env bash
# multi_gpu.sh [PHASE...] — issue 19's measurement on a machine with several GPUs of one model:
# the 18 public problems (9 shapes, f32 and bf16) tuned once with --gpu all into a scratch cache
# that is thrown away (phase warm: a fresh VM faults its host memory in on first use, about 3 s
# per 8 GiB, and the float64 references need GBs, so whichever run came first paid for it), then
# with --gpu 0 from an empty cache (phase one), then with --gpu all from another empty cache
# (phase all); the winners of the --gpu all cache checked again against float64 on every GPU
# through the runtime (phase check, softmax-tune bench); then the report (phase report): the wall time of each run, their ratio
# (target: at most 0.55 on 2 GPUs), and whether every winner is verified (in each run's log
# its trial passed verification; and the re-check). No phase given: all five in turn. Phases
# can run in separate commands (each well under 10 minutes); they keep their state in
# $MULTI_GPU_WORK (default build/multi_gpu). Everything is appended to $MULTI_GPU_OUT
# (default bench/results/multi-gpu-DATE.txt). $SOFTMAX_TUNE_BIN: the command (build/softmax-tune).
set -u
bin=${SOFTMAX_TUNE_BIN:-build/softmax-tune}
work=${MULTI_GPU_WORK:-build/multi_gpu}
out=${MULTI_GPU_OUT:-bench/results/multi-gpu-$(date -u +%F).txt}
shapes=32000x16384,4096x4096,1048576x128,131072x1000,65536x2048,8192x32000,2048x128256,256x1048576,32x16384
mkdir -p "$work" "$(dirname "$out")"
exec > >(tee -a "$out") 2>&1
ngpus=$(nvidia-smi -L 2>/dev/null | wc -l)

# tune NAME GPUS: the list into $work/NAME.db from empty; wall seconds and exit status kept
tune() {
  rm -f "$work/$1".db*
  echo; echo "## --gpu $2, empty cache ($(date -u '+%F %T') UTC, $(git rev-parse --short HEAD 2>/dev/null))"
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>/dev/null
  local t0 rc
  t0=$(date +%s.%N)
  "$bin" --gpu "$2" --shape "$shapes" --dtype f32,bf16 --cache "$work/$1.db" --quiet
  rc=$?
  awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { print a - b }' >"$work/$1.s"
  echo "$rc" >"$work/$1.rc"
  echo "exit $rc after $(cat "$work/$1.s") s"
}

# verified NAME: how many problems' last run in the log has a winner whose trial passed
verified() {
  local n=0 ok=0
  for s in ${shapes//,/ }; do
    for t in f32 bf16; do
      n=$((n + 1))
      "$bin" log --cache "$work/$1.db" --shape "$s" --dtype "$t" --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
w = [t for t in r["trials"] if t["config"] == r["winner"]]
sys.exit(0 if r["status"] == "ok" and w and w[0]["status"] == "ok" else 1)' 2>/dev/null && ok=$((ok + 1))
    done
  done
  echo "$ok/$n"
}

# every winner of the --gpu all cache through the runtime on every GPU, checked against float64
check() {
  local good=0 n=0
  echo; echo "## the --gpu all winners checked again on each of $ngpus GPUs (softmax-tune bench)"
  for ((g = 0; g < ngpus; g++)); do
    for s in ${shapes//,/ }; do
      for t in f32 bf16; do
        n=$((n + 1))
        if "$bin" bench --gpu "$g" --shape "$s" --dtype "$t" --reps 5 --cache "$work/all.db" >"$work/bench.txt" 2>&1 &&
           grep -q "verified against float64" "$work/bench.txt"; then
          good=$((good + 1))
        else
          echo "GPU $g $s $t:"; cat "$work/bench.txt"
        fi
      done
    done
  done
  echo "$good/$n" >"$work/check"
  echo "re-verified $good of $n"
}

report() {
  local one all
  one=$(cat "$work/one.s" 2>/dev/null || echo 0) all=$(cat "$work/all.s" 2>/dev/null || echo 0)
  echo; echo "## report"
  printf '%-24s %10s %6s %14s\n' run "wall s" exit "winners ok"
  printf '%-24s %10.1f %6s %14s\n' "--gpu 0" "$one" "$(cat "$work/one.rc" 2>/dev/null)" "$(verified one)"
  printf '%-24s %10.1f %6s %14s\n' "--gpu all ($ngpus GPUs)" "$all" "$(cat "$work/all.rc" 2>/dev/null)" "$(verified all)"
  awk -v a="$all" -v b="$one" 'BEGIN { r = b > 0 ? a / b : 0; printf "ratio all/one %.3f (target <= 0.55 on 2 GPUs): %s\n", r, (r > 0 && r <= 0.55) ? "met" : "NOT met" }'
  echo "--gpu all winners re-verified through the runtime on every GPU: $(cat "$work/check" 2>/dev/null || echo 'not run')"
}

[ $# -gt 0 ] || set -- warm one all check report
for phase in "$@"; do
  case $phase in
    warm) tune warm all >/dev/null; echo; echo "## warm-up run (--gpu all, thrown away): $(cat "$work/warm.s") s" ;;
    one) tune one 0 ;;
    all) tune all all ;;
    check) check ;;
    report) report ;;
    *) echo "multi_gpu.sh: unknown phase '$phase' (warm, one, all, check, report)"; exit 2 ;;
  esac
done
