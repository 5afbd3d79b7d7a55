#!/usr/bin/env bash
# attn32_floor.sh — prediction 76 on the GPU machine: the tuner's masked floors (st_attn_floor,
# st_attn_bw_floor) of .carry_old (one 16-byte vector in flight a thread) and .carry (four), each
# build tuning bf16 16x1x4096x4096 causal and padding, forward and backward, twice alternated
# (their "copy floor" and winner lines); then bench/attention_softmax.py's Triton floor on the
# causal ones with .carry (--quick: bf16, S 1024 and 4096, decode). Logs under $OUT.
set -u
out=${OUT:-/tmp/st_out}
mkdir -p "$out"
t0=$(date +%s)
for round in 1 2; do
  for c in .carry_old .carry; do
    for op in attention_softmax attention_softmax_backward; do
      for m in causal padding; do
        LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/f_${c#.}.db \
          $c/softmax-tune --op $op --shape 16x1x4096x4096 --dtype bf16 --mask $m --quiet --force >/tmp/f.log 2>&1
        echo "$round $c $op $m: $(grep -E '^copy floor' /tmp/f.log | awk '{print $3, "us"}') | $(grep -E '^winner' /tmp/f.log | awk '{print $2, "us", $6}')"
      done
    done
  done
done
echo "tuned: $(( $(date +%s) - t0 )) s"
. bench/carry_env.sh
SOFTMAX_TUNE_CACHE=/tmp/f_py.db timeout 300 python3 bench/attention_softmax.py --quick --masks causal --tune .carry/softmax-tune \
  --out "$out/attn-quick.tsv" >"$out/attn-quick.log" 2>&1
echo "quick: rc=$? $(( $(date +%s) - t0 )) s"
grep -vE "^#" "$out/attn-quick.tsv" | grep -E "floor|softmax_tune|inductor\b" | column -t
