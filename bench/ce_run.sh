#!/usr/bin/env bash
# ce_run.sh — on the GPU machine, from the repository root, with .carry/ packed by bench/carry.sh:
# tune the cross-entropy ops on the issue's five LLM-head shapes (bf16 and f32; fwd_bwd is op
# cross_entropy against a copy of the logits, loss_only cross_entropy_loss against a read of
# them), then time each winner through the runtime (softmax-tune bench: the mean's factor
# included). $CE_SHAPES, $CE_DTYPES and $CE_OPS narrow it; $CARRY names another packed build (an A/B).
# Logs under $OUT (or /tmp/st_out).
set -u
out=${OUT:-/tmp/st_out}
mkdir -p "$out" /tmp/st_ce
c=${CARRY:-.carry}
export LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SOFTMAX_TUNE_CACHE=${SOFTMAX_TUNE_CACHE:-/tmp/st_cache.db}
B=$c/softmax-tune
printf "dtype\tshape\top\ttune_s\twinner_frac\tbench_us\tfloor_us\tbench_frac\tconfig\n" | tee "$out/ce_run.tsv"
for op in ${CE_OPS:-cross_entropy cross_entropy_loss}; do
  for d in ${CE_DTYPES:-bf16 f32}; do
    for s in ${CE_SHAPES:-4096x128256 8192x50257 16384x32000 2048x151936 1024x256000}; do
      log=/tmp/st_ce/${op}_${d}_$s
      start=$(date +%s%N)
      $B --shape "$s" --dtype "$d" --op "$op" --quiet >"$log.tune" 2>&1
      t=$(( ($(date +%s%N) - start) / 1000000 ))
      $B bench --shape "$s" --dtype "$d" --op "$op" --reps 60 >"$log.bench" 2>&1
      w=$(grep -E "^winner" "$log.tune" | awk '{print $6}')
      cfg=$(grep -E "^winner" "$log.tune" | awk '{print $NF}')
      fl=$(grep -E "^(copy|read floor)" "$log.bench" | awk '{print $(NF-2)}')
      b=$(grep -E "^softmax-tune" "$log.bench" | awk '{print $2, $4}')
      printf "%s\t%s\t%s\t%d.%03d\t%s\t%s\t%s\t%s\t%s\n" "$d" "$s" "$op" $((t / 1000)) $((t % 1000)) "${w:-FAIL}" \
        "$(echo "$b" | cut -d' ' -f1)" "$fl" "$(echo "$b" | cut -d' ' -f2)" "$cfg" | tee -a "$out/ce_run.tsv"
      grep -qE "^winner" "$log.tune" || tail -3 "$log.tune"
      grep -qE "^softmax-tune" "$log.bench" || tail -2 "$log.bench"
    done
  done
done
tar -C /tmp/st_ce -czf "$out/ce_logs.tgz" .
