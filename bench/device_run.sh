#!/usr/bin/env bash
# device_run.sh [tests] [tune] [sass] [full] [peers] [train] — on the GPU machine, from the repository
# root, with .carry/ packed by bench/carry.sh: the GPU tests, tuning of the nine peer shapes in
# f32, bf16 and f16 ($TUNE_DTYPES; time per shape), the winners' SASS (16-byte accesses, local memory), sweeps of
# the full grid for the problems in $FULL (dtype:shape ..., the pruning loss; $FULL_LIMIT seconds
# each, default 280), bench/peers.py against them, the cache-hit latency; train: bench/train_step.py
# and bench/backward.py --quick (the backward kernels, not run by default). Logs go to $OUT (or
# /tmp/st_out); the last lines printed are the summary table.
set -u
. "$(dirname "$0")/carry_env.sh"
B=.carry/softmax-tune
SHAPES="32000x16384 4096x4096 1048576x128 131072x1000 65536x2048 8192x32000 2048x128256 256x1048576 32x16384"
steps=${*:-tests tune peers}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader

run_tests() {
  local fails=0
  for t in ".carry/test_gpu" ".carry/test_runtime gpu" "python3 tests/test_python.py" "python3 tests/test_python_train.py" \
           "bash tests/gpu_tune.sh $B" ".carry/example /tmp/st_example.db"; do
    [ "$t" = ".carry/example /tmp/st_example.db" ] && $B --shape 1024x2048 --cache /tmp/st_example.db --quiet >/dev/null
    name=$(echo "$t" | tr -c 'a-z0-9\n' '_' | cut -c1-40)
    mkdir -p /tmp/st_tests
    if timeout 300 $t >"/tmp/st_tests/$name.log" 2>&1; then echo "PASS $t"; else echo "FAIL $t"; grep -E "failed|FAIL" "/tmp/st_tests/$name.log" | head -8; fails=1; fi
  done
  tar -C /tmp/st_tests -czf "$out/tests.tgz" .
  return $fails
}

run_tune() {
  : >"$out/tune_times.tsv"
  mkdir -p /tmp/st_tune
  for d in ${TUNE_DTYPES:-f32 bf16 f16}; do
    for s in $SHAPES; do
      start=$(date +%s%N)
      $B --shape "$s" --dtype "$d" --quiet >"/tmp/st_tune/${d}_$s.log" 2>&1
      rc=$?
      t=$(( ($(date +%s%N) - start) / 1000000 ))
      w=$(grep -E "^winner" "/tmp/st_tune/${d}_$s.log" | awk '{print $6, $9}')
      printf "%s\t%s\t%d.%03d s\trc=%d\t%s\n" "$d" "$s" $((t / 1000)) $((t % 1000)) "$rc" "$w" | tee -a "$out/tune_times.tsv"
      $B log --csv --shape "$s" --dtype "$d" >"/tmp/st_tune/${d}_$s.csv"
    done
  done
  tar -C /tmp/st_tune -czf "$out/tune_logs.tgz" .
}

# Each tuned winner compiled again and read with cuobjdump: 128-bit global loads and stores,
# and local memory (which the tuner prunes, so it must be 0).
run_sass() {
  local arch
  arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
  printf "%-5s %-12s %6s %6s %5s  %s\n" dtype shape LDG128 STG128 LDL/STL winner | tee "$out/sass.txt"
  for d in f32 bf16; do
    for s in $SHAPES; do
      cfg=$(grep -E "^winner" "/tmp/st_tune/${d}_$s.log" | awk '{print $NF}')
      [ -n "$cfg" ] || continue
      $B compile --shape "$s" --dtype "$d" --arch "$arch" --config "$cfg" -o /tmp/w.cubin >/dev/null 2>&1 || continue
      cuobjdump -sass /tmp/w.cubin >/tmp/w.sass
      printf "%-5s %-12s %6d %6d %5d  %s\n" "$d" "$s" "$(grep -cE 'LDG\.E[.A-Z0-9]*\.128' /tmp/w.sass)" \
        "$(grep -cE 'STG\.E[.A-Z0-9]*\.128' /tmp/w.sass)" "$(grep -cE '\b(LDL|STL)' /tmp/w.sass)" "$cfg" | tee -a "$out/sass.txt"
    done
  done
}

# The space and the rest of the full grid in one sweep each: how much pruning loses.
run_full() {
  : >"$out/full.txt"
  for p in ${FULL:-f32:4096x4096 bf16:8192x32000}; do
    start=$(date +%s)
    timeout "${FULL_LIMIT:-280}" $B --shape "${p#*:}" --dtype "${p%%:*}" --space full --cache /tmp/st_full.db --quiet >"/tmp/full_$p.log" 2>&1
    echo "$p ($(( $(date +%s) - start )) s): $(grep -E '^(winner|swept|pruned space)' "/tmp/full_$p.log" | tr -s ' ' | tr '\n' ';')" | tee -a "$out/full.txt"
  done
}

run_peers() {
  SOFTMAX_TUNE_MISS=error timeout 400 python3 bench/peers.py --out "$out/peers.tsv" >"$out/peers.log" 2>&1
  SOFTMAX_TUNE_MISS=error python3 bench/latency.py --shape 4096x4096 --runs 5 | tee "$out/latency.txt"
  for s in 32000x16384 256x1048576; do $B bench --shape $s --reps 50; done | tee "$out/bench.txt"
  python3 - "$out/peers.tsv" <<'PY'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")][1:]
best = collections.defaultdict(float); ours = {}
for r in rows:
    key = (r[0], r[1])
    if r[2] == "softmax_tune": ours[key] = r[5] + (" WRONG" if len(r) > 6 else "")
    elif r[2] != "copy": best[key] = max(best[key], float(r[5]))
print("dtype     shape          softmax_tune  best_peer_here")
for k in ours: print("%-9s %-14s %-13s %.3f" % (k[0], k[1], ours[k], best[k]))
PY
}

run_train() {
  timeout 200 python3 bench/train_step.py --out "$out/train_step.tsv" >"$out/train_step.log" 2>&1
  timeout 400 python3 bench/backward.py --quick --out "$out/backward.tsv" >"$out/backward.log" 2>&1
  grep -v "^#" "$out/train_step.tsv" "$out/backward.tsv"
}

for s in $steps; do "run_$s"; done
