#!/usr/bin/env bash
# attn32_apex.sh — issue 37's peer: Apex's Megatron fused softmax built on the GPU machine
# (bench/apex_build.py over .peers/apex, carried), then the quick attention table with it
# (bench/attention_softmax.py --quick, causal and padding, each problem tuned first). Under $OUT.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
t0=$(date +%s)
which nvcc || ls /usr/local/cuda/bin/nvcc
export PATH=$PATH:/usr/local/cuda/bin
timeout 420 python3 bench/apex_build.py >"$out/apex_build.log" 2>&1
echo "apex_build: rc=$? $(( $(date +%s) - t0 )) s"; grep -E "error|apex_build" "$out/apex_build.log" | head -8; tail -2 "$out/apex_build.log"
SOFTMAX_TUNE_CACHE=/tmp/a_py.db timeout $(( 590 - ($(date +%s) - t0) )) python3 bench/attention_softmax.py --quick \
  --tune .carry/softmax-tune --out "$out/attn-quick.tsv" >"$out/attn-quick.log" 2>&1
echo "quick: rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^# .*(apex|WRONG)|Apex" "$out/attn-quick.log" | cut -c1-250 | head -20
grep -vE "^#" "$out/attn-quick.tsv" | grep -E "floor|softmax_tune|apex|inductor\b"
