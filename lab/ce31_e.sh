#!/usr/bin/env bash
# ce31_e.sh — the runtime bench (mean reduction, count + loss kernel) of one pinned config through
# three builds: .carry_old (the session's first tree), .carry_nw (this tree without the
# griddepcontrol.wait in row_of), .carry (this tree), with and without programmatic dependent launch.
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
printf "tree\tnopdl\tdtype\tshape\tbench_us\tfloor_us\tfrac\n"
while read d s cfg; do
  for c in .carry_old .carry_nw .carry; do
    LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/ab$c.db $c/softmax-tune --shape $s --dtype $d --op cross_entropy --config $cfg --quiet 2>&1 | grep -E "^winner" | cut -c1-60
  done
  for nopdl in 1 0; do for rep in 1 2; do for c in .carry_old .carry_nw .carry; do
    r=$(LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64 SOFTMAX_TUNE_CACHE=/tmp/ab$c.db SOFTMAX_TUNE_NO_PDL=$nopdl $c/softmax-tune bench --shape $s --dtype $d --op cross_entropy --reps 60 2>&1)
    fl=$(echo "$r" | grep -E "^copy" | awk '{print $(NF-2)}'); b=$(echo "$r" | grep -E "^softmax-tune" | awk '{print $2, $4}')
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" $c $nopdl $d $s "$(echo $b | cut -d' ' -f1)" "$fl" "$(echo $b | cut -d' ' -f2)"
  done; done; done
done <<'L'
f32 1024x256000 threads=256,items=16,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=16,xchg=dsmem,hint=none
bf16 8192x50257 threads=512,items=7,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=2,xchg=dsmem,hint=none
L
