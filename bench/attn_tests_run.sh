#!/usr/bin/env bash
# attn_tests_run.sh — on the GPU machine, from the repository root, with .carry/ packed by
# bench/carry.sh: attention_softmax's GPU tests (test_gpu --attn: every mask and bias kind, both
# families, each dtype, the check kernel held to the CPU rule), then the command: tune (causal,
# padding, causal+window with ALiBi and a softcap, no mask over long rows, a decode shape), an
# answer from the cache, bench of the tuned kernels through st_attention_softmax, log, explain and
# cache list of the op; softmax of the same rows for comparison. Then the same for
# attention_softmax_backward (test_gpu --attn-bw; tune, cache, bench through
# st_attention_softmax_backward, log, cache list, explain; a softcap's x as the third input).
#   attn_tests_run.sh [all|fwd|bw]   which op's steps (default all)
# Logs under $OUT (or /tmp/st_out); prints PASS or FAIL a step, and exits nonzero when any failed.
set -u
which=${1:-all}
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
fwd_steps() {
step gpu_attn .carry/test_gpu --attn
step tune_causal $B $A --shape 2x16x2048x2048 --dtype bf16 --mask causal --scale 0.125 --quiet
step tune_cached $B $A --shape 2x16x2048x2048 --dtype bf16 --mask causal --scale 0.125 --quiet
step tune_padding $B $A --shape 4x8x512x4096 --dtype f16 --mask padding --scale 0.125 --quiet
step tune_window $B $A --shape 1x8x4096x4096 --dtype bf16 --mask causal+window --window 256 --alibi --softcap 30 --quiet
step tune_none_long $B $A --shape 1x4x64x65536 --dtype f32 --quiet
step tune_decode $B $A --shape 8x32x1x32768 --dtype bf16 --mask causal --scale 0.0883883 --quiet
step tune_padding_causal $B $A --shape 4x8x1024x1024 --dtype bf16 --mask causal+padding --scale 0.125 --quiet
step tune_bias_tensor $B $A --shape 2x8x1024x1024 --dtype bf16 --mask causal --bias-tensor --scale 0.125 --quiet
step tune_softmax $B --shape 65536x2048 --dtype bf16 --quiet
step bench_causal $B bench $A --shape 2x16x2048x2048 --dtype bf16 --mask causal --scale 0.125 --reps 20
step bench_padding $B bench $A --shape 4x8x512x4096 --dtype f16 --mask padding --reps 20
step bench_window $B bench $A --shape 1x8x4096x4096 --dtype bf16 --mask causal+window --window 256 --alibi --softcap 30 --reps 20
step bench_decode $B bench $A --shape 8x32x1x32768 --dtype bf16 --mask causal --reps 20
step bench_padding_causal $B bench $A --shape 4x8x1024x1024 --dtype bf16 --mask causal+padding --scale 0.125 --reps 20
step bench_bias_tensor $B bench $A --shape 2x8x1024x1024 --dtype bf16 --mask causal --bias-tensor --scale 0.125 --reps 20
step log $B log $A --mask causal
step cache_list $B cache list $A --mask padding
step explain $B explain $A --shape 2x16x1024x1024 --dtype bf16 --mask causal
grep -q "from the cache" "$out/tune_cached.log" || { echo "FAIL tune_cached: not answered from the cache"; fails=1; }
grep -q "attention_softmax:padding:none" "$out/cache_list.log" || { echo "FAIL cache_list: no padding entry"; fails=1; }
for f in tune_causal tune_padding tune_window tune_none_long tune_decode tune_padding_causal tune_bias_tensor tune_softmax \
         bench_causal bench_padding bench_window bench_decode bench_padding_causal bench_bias_tensor explain; do
  echo "== $f"; grep -vE "^  [0-9]" "$out/$f.log" | head -9
done
}

bw_steps() {
local W="--op attention_softmax_backward"
step gpu_attn_bw .carry/test_gpu --attn-bw
step bw_tune_causal $B $W --shape 2x16x2048x2048 --dtype bf16 --mask causal --scale 0.125 --quiet
step bw_tune_cached $B $W --shape 2x16x2048x2048 --dtype bf16 --mask causal --scale 0.125 --quiet
step bw_tune_padding $B $W --shape 4x8x512x4096 --dtype f16 --mask padding --scale 0.125 --quiet
step bw_tune_window $B $W --shape 1x8x4096x4096 --dtype bf16 --mask causal+window --window 256 --softcap 30 --quiet
step bw_tune_decode $B $W --shape 8x32x1x32768 --dtype bf16 --mask causal --scale 0.0883883 --quiet
step bw_tune_padding_causal $B $W --shape 4x8x1024x1024 --dtype bf16 --mask causal+padding --scale 0.125 --quiet
step bw_tune_softmax_bw $B --op softmax_backward --shape 65536x2048 --dtype bf16 --quiet
step bw_bench_causal $B bench $W --shape 2x16x2048x2048 --dtype bf16 --mask causal --scale 0.125 --reps 20
step bw_bench_padding $B bench $W --shape 4x8x512x4096 --dtype f16 --mask padding --scale 0.125 --reps 20
step bw_bench_window $B bench $W --shape 1x8x4096x4096 --dtype bf16 --mask causal+window --window 256 --softcap 30 --reps 20
step bw_bench_decode $B bench $W --shape 8x32x1x32768 --dtype bf16 --mask causal --scale 0.0883883 --reps 20
step bw_log $B log $W --mask causal
step bw_cache_list $B cache list $W --mask padding
step bw_explain $B explain $W --shape 2x16x1024x1024 --dtype bf16 --mask causal
grep -q "from the cache" "$out/bw_tune_cached.log" || { echo "FAIL bw_tune_cached: not answered from the cache"; fails=1; }
grep -q "attention_softmax_backward:padding:none" "$out/bw_cache_list.log" || { echo "FAIL bw_cache_list: no padding entry"; fails=1; }
for f in bw_tune_causal bw_tune_padding bw_tune_window bw_tune_decode bw_tune_softmax_bw bw_bench_causal bw_bench_padding \
         bw_bench_window bw_bench_decode bw_explain; do
  echo "== $f"; grep -vE "^  [0-9]" "$out/$f.log" | head -9
done
}

case $which in
  fwd) fwd_steps ;;
  bw) bw_steps ;;
  all) fwd_steps; bw_steps ;;
  *) echo "attn_tests_run.sh: unknown '$which' (all, fwd or bw)"; exit 2 ;;
esac
exit $fails
