#!/usr/bin/env bash
# attn_tests_run.sh — on the GPU machine, from the repository root, with .carry/ packed by
# bench/carry.sh: attention_softmax's GPU tests (test_gpu --attn: every mask and bias kind, both
# families, each dtype, the check kernel held to the CPU rule), then the command: tune (causal,
# padding, causal+window with ALiBi and a softcap, no mask over long rows, a decode shape), an
# answer from the cache, bench of the tuned kernels through st_attention_softmax, log, explain and
# cache list of the op; softmax of the same rows for comparison. Logs under $OUT (or
# /tmp/st_out); prints PASS or FAIL a step, and exits nonzero when any failed.
set -u
. "$(dirname "$0")/carry_env.sh"   # $out, the library path
export SOFTMAX_TUNE_CACHE=$out/attn_tests.db
rm -f "$SOFTMAX_TUNE_CACHE"
B=.carry/softmax-tune
A="--op attention_softmax"
fails=0
step() {
  local name=$1
  shift
  if timeout 580 "$@" >"$out/$name.log" 2>&1; then echo "PASS $name"; else echo "FAIL $name (status $?)"; grep -E "failed|FAIL|softmax-tune:" "$out/$name.log" | head -8; fails=1; fi
}
step gpu_attn .carry/test_gpu --attn
step tune_causal $B $A --shape 2x16x2048x2048 --dtype bf16 --mask causal --scale 0.125 --quiet
step tune_cached $B $A --shape 2x16x2048x2048 --dtype bf16 --mask causal --scale 0.125 --quiet
step tune_padding $B $A --shape 4x8x512x4096 --dtype f16 --mask padding --scale 0.125 --quiet
step tune_window $B $A --shape 1x8x4096x4096 --dtype bf16 --mask causal+window --window 256 --alibi --softcap 30 --quiet
step tune_none_long $B $A --shape 1x4x64x65536 --dtype f32 --quiet
step tune_decode $B $A --shape 8x32x1x32768 --dtype bf16 --mask causal --scale 0.0883883 --quiet
step tune_softmax $B --shape 65536x2048 --dtype bf16 --quiet
step bench_causal $B bench $A --shape 2x16x2048x2048 --dtype bf16 --mask causal --scale 0.125 --reps 20
step bench_padding $B bench $A --shape 4x8x512x4096 --dtype f16 --mask padding --reps 20
step bench_window $B bench $A --shape 1x8x4096x4096 --dtype bf16 --mask causal+window --window 256 --alibi --softcap 30 --reps 20
step bench_decode $B bench $A --shape 8x32x1x32768 --dtype bf16 --mask causal --reps 20
step log $B log $A --mask causal
step cache_list $B cache list $A --mask padding
step explain $B explain $A --shape 2x16x1024x1024 --dtype bf16 --mask causal
grep -q "from the cache" "$out/tune_cached.log" || { echo "FAIL tune_cached: not answered from the cache"; fails=1; }
grep -q "attention_softmax:padding:none" "$out/cache_list.log" || { echo "FAIL cache_list: no padding entry"; fails=1; }
for f in tune_causal tune_padding tune_window tune_none_long tune_decode tune_softmax bench_causal bench_padding bench_window bench_decode explain; do
  echo "== $f"; grep -vE "^  [0-9]" "$out/$f.log" | head -9
done
exit $fails
