#!/usr/bin/env bash
# attn_mirror.sh — on the GPU machine (issue 37, predictions 70-71): attention_softmax ($OP, or
# attention_softmax_backward) over causal scores, $BEFORE (default .carry) against $AFTER (default
# .carry_old; the build with pair=mirror): each tuned by the fast sweep and benched against the
# masked floor in the same process; then plain and pair=mirror configs pinned in $AFTER, same
# config otherwise; then the mirror kernel's correctness beyond the tuned shapes (odd Q, Q != K,
# an offset that falls back to one row a group, a softcap, f16). One table under $OUT.
set -u
out=${OUT:-/tmp/st_out}
OP=${OP:-attention_softmax}
BEFORE=${BEFORE:-.carry}
AFTER=${AFTER:-.carry_old}
mkdir -p "$out"
t=$out/attn_mirror_$OP.tsv
printf "dtype\tshape\tbuild\thow\tus\tfloor_us\tfrac\tconfig\n" >"$t"
bench() {   # bench CARRY HOW SHAPE DTYPE [tune args...]
  local c=$1 how=$2 s=$3 d=$4
  shift 4
  local env="LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/am_${c#.}_$how.db"
  env $env $c/softmax-tune --op $OP --shape "$s" --dtype "$d" --mask causal --scale 0.0883883 "$@" >/tmp/am.log 2>&1 \
    || { echo "$c $how $s $d: $(tail -2 /tmp/am.log)"; return; }
  local cfg; cfg=$(grep -E "^winner" /tmp/am.log | awk '{print $NF}')
  env $env $c/softmax-tune bench --op $OP --shape "$s" --dtype "$d" --mask causal --scale 0.0883883 --reps 60 >/tmp/amb.log 2>&1
  local fl b
  fl=$(grep -E "^masked floor" /tmp/amb.log | awk '{print $3}'); b=$(grep -E "^softmax-tune" /tmp/amb.log | awk '{print $2, $4}')
  printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$d" "$s" "$c" "$how" "${b% *}" "$fl" "${b#* }" "$cfg" >>"$t"
}
for d in bf16 f16; do
  for s in 16x1x4096x4096 4x1x8192x8192; do
    bench $BEFORE tuned "$s" "$d" --quiet
    bench $AFTER tuned "$s" "$d" --quiet
    # plain configs of a G-thread group a row (items = K / (8 G)): G=128 and G=256
    [ "$d" = bf16 ] && for tr in 256:2:128 512:4:128 256:1:256 512:2:256; do
      IFS=: read -r th rows g <<<"$tr"
      it=$(( ${s##*x} / 8 / g ))
      base=threads=$th,items=$it,vec=8,reduce=shfl,passes=1,hold=reg,rows=$rows,split=1,xchg=none,hint=none
      bench $AFTER pinned "$s" "$d" --force --quiet --config "$base,mask=causal,bias=none"
      bench $AFTER pinned "$s" "$d" --force --quiet --config "$base,mask=causal,bias=none,pair=mirror"
    done
  done
done
cat "$t"
# correctness beyond the tuned shapes: every element against float64 (the tuner's check)
B="$AFTER/softmax-tune --op $OP --mask causal --force --quiet"
export LD_LIBRARY_PATH=$PWD/$AFTER/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/am_check.db
M=threads=256,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=2,split=1,xchg=none,hint=none,mask=causal,bias=none,pair=mirror
for args in "--shape 16x1x4095x4095 --dtype bf16" "--shape 3x2x4097x4097 --dtype bf16" "--shape 16x1x4096x4096 --offset 1 --dtype bf16" \
            "--shape 8x1x2048x4096 --dtype bf16" "--shape 16x1x4096x4096 --softcap 30 --dtype bf16" "--shape 2x3x4093x4093 --dtype f16" \
            "--shape 16x1x4095x4096 --dtype bf16"; do
  cfg=$M
  # shellcheck disable=SC2086
  $B $args --config "$cfg" >/tmp/amc.log 2>&1; echo "check $args: rc=$? $(grep -E "^winner|verif|FAIL|error" /tmp/amc.log | head -2)"
done
