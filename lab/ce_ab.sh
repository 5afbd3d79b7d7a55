#!/usr/bin/env bash
# ce_ab.sh — on the GPU machine (prediction 65): cross_entropy's tuned fwd_bwd with the tree before
# (.carry_old, from bench/carry.sh of that tree) and after (.carry), one after the other in one
# call: bench/ce_run.sh with each (its own cache), then the old winner's config pinned in the new
# build (the label loads hoisted alone, the space as it was). Tables under $OUT.
set -u
out=${OUT:-/tmp/st_out}
mkdir -p "$out"
swap() { mv .carry .carry_tmp && mv .carry_old .carry && mv .carry_tmp .carry_old; }
export CE_OPS=cross_entropy
swap; OUT=$out/old SOFTMAX_TUNE_CACHE=/tmp/ab_old.db bash bench/ce_run.sh >/dev/null 2>&1; swap
OUT=$out/new SOFTMAX_TUNE_CACHE=/tmp/ab_new.db bash bench/ce_run.sh >/dev/null 2>&1
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SOFTMAX_TUNE_CACHE=/tmp/ab_pin.db
printf "dtype\tshape\tbench_us\tfloor_us\tbench_frac\tconfig (old winner, new build)\n" >"$out/pinned.tsv"
tail -n +2 "$out/old/ce_run.tsv" | while IFS=$'\t' read -r d s _op _t _w _b _f _bf cfg; do
  .carry/softmax-tune --shape "$s" --dtype "$d" --op cross_entropy --config "$cfg" --quiet >/tmp/pin.log 2>&1 || tail -2 /tmp/pin.log
  .carry/softmax-tune bench --shape "$s" --dtype "$d" --op cross_entropy --reps 60 >/tmp/pinb.log 2>&1
  fl=$(grep -E "^copy" /tmp/pinb.log | awk '{print $(NF-2)}'); b=$(grep -E "^softmax-tune" /tmp/pinb.log | awk '{print $2, $4}')
  printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$d" "$s" "${b% *}" "$fl" "${b#* }" "$cfg" >>"$out/pinned.tsv"
done
for f in old/ce_run.tsv new/ce_run.tsv pinned.tsv; do echo "== $f"; cut -f1-9 "$out/$f" | column -t; done
