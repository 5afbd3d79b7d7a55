#!/usr/bin/env bash
# ce_pin.sh — on the GPU machine (predictions 66, 69): each line of $PIN_LIST (default lab/ce_pin.txt; shape dtype config)
# pinned (--config: verified, timed, stored) and benched against the copy in the same process, for
# softmax (unless PIN_SOFTMAX=0) and cross_entropy with .carry, and cross_entropy with .carry_old.
# One table under $OUT.
set -u
out=${OUT:-/tmp/st_out}
mkdir -p "$out"
printf "dtype\tshape\tbuild\top\tus\tcopy_us\tfrac\tconfig\n" >"$out/pinned.tsv"
one() {   # one CARRY OP SHAPE DTYPE CONFIG
  local c=$1 op=$2 s=$3 d=$4 cfg=$5
  LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/pin_${c#.}.db \
    $c/softmax-tune --shape "$s" --dtype "$d" --op "$op" --config "$cfg" --quiet >/tmp/pin.log 2>&1 || { tail -2 /tmp/pin.log; return; }
  LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/pin_${c#.}.db \
    $c/softmax-tune bench --shape "$s" --dtype "$d" --op "$op" --reps 60 >/tmp/pinb.log 2>&1
  local fl b
  fl=$(grep -E "^copy" /tmp/pinb.log | awk '{print $(NF-2)}'); b=$(grep -E "^softmax-tune" /tmp/pinb.log | awk '{print $2, $4}')
  printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$d" "$s" "$c" "$op" "${b% *}" "$fl" "${b#* }" "$cfg" >>"$out/pinned.tsv"
}
grep -v "^#" "${PIN_LIST:-lab/ce_pin.txt}" | while read -r s d cfg; do
  [ "${PIN_SOFTMAX:-1}" = 0 ] || one .carry softmax "$s" "$d" "$cfg"
  one .carry cross_entropy "$s" "$d" "$cfg"; one .carry_old cross_entropy "$s" "$d" "$cfg"
done
cat "$out/pinned.tsv"
