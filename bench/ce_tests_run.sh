#!/usr/bin/env bash
# ce_tests_run.sh — on the GPU machine, from the repository root, with .carry/ packed by
# bench/carry.sh: the cross-entropy GPU tests (the check kernel against the CPU rule, every
# family of both ops verified with each option, the check kernel's selftest), then the command
# with options: tune, answer from the cache, bench (int32 labels, weights, smoothing, z-loss,
# softcap), log, report and explain of the ops. Logs under $OUT (or /tmp/st_out); prints PASS or
# FAIL a step, and exits nonzero when any failed.
set -u
. "$(dirname "$0")/carry_env.sh"   # $out, the library path
export SOFTMAX_TUNE_CACHE=$out/ce_tests.db
rm -f "$SOFTMAX_TUNE_CACHE"
B=.carry/softmax-tune
fails=0
step() {
  local name=$1
  shift
  if timeout 580 "$@" >"$out/$name.log" 2>&1; then echo "PASS $name"; else echo "FAIL $name (status $?)"; grep -E "failed|FAIL|softmax-tune:" "$out/$name.log" | head -8; fails=1; fi
}
step verify_rule_ce .carry/test_verify_ce gpu
step gpu_ce .carry/test_gpu --ce
step tune_bf16 $B --op cross_entropy --shape 4096x128256 --dtype bf16 --quiet
step tune_cached $B --op cross_entropy --shape 4096x128256 --dtype bf16 --quiet --softcap 30
step tune_opts $B --op cross_entropy_loss --shape 8192x50257 --dtype bf16 --quiet --label-smoothing 0.1 --z-loss 1e-4 --softcap 30 --labels int32
step tune_weight $B --op cross_entropy --shape 777x32003 --dtype f32 --quiet --weight --ignore-index 5 --force
step bench_plain $B bench --op cross_entropy --shape 4096x128256 --dtype bf16 --reps 20
step bench_opts $B bench --op cross_entropy --shape 4096x128256 --dtype bf16 --reps 20 --label-smoothing 0.1 --z-loss 1e-4 --softcap 30 --labels int32
step bench_weight $B bench --op cross_entropy --shape 777x32003 --dtype f32 --reps 20 --weight --ignore-index 5
step bench_loss $B bench --op cross_entropy_loss --shape 8192x50257 --dtype bf16 --reps 20 --softcap 30
step log $B log --op cross_entropy_loss
step report $B report --op cross_entropy -o "$out/ce_report.html"
step explain $B explain --op cross_entropy --shape 2048x151936 --dtype bf16
grep -q "from the cache" "$out/tune_cached.log" || { echo "FAIL tune_cached: not answered from the cache"; fails=1; }
grep -q "floor (a kernel reading the logits" "$out/log.log" || { echo "FAIL log: the loss-only floor not named"; fails=1; }
grep -q "your cache entry 4096x128256 bf16 cross_entropy" "$out/explain.log" || { echo "FAIL explain: not from the tuned cross-entropy entry"; fails=1; }
for f in tune_bf16 tune_opts tune_weight bench_plain bench_opts bench_weight bench_loss explain; do echo "== $f"; grep -vE "^  [0-9]" "$out/$f.log" | head -8; done
exit $fails
