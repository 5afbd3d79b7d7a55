#!/usr/bin/env bash
# ce31_d.sh — which part of session 31's ce.cu change costs time: template copies in .carry_tv,
# one pinned config each, timed by the tuner against the copy in the same process (separate
# buffers: not in place), alternated twice. Fourth call: A (the session's first tree), B (A +
# griddepcontrol.wait in row_of), C (the new ce.cu without it), D (the new ce.cu). Fifth: A, S (A +
# the __syncwarp after row_of), O (the new ce.cu without that __syncwarp), D; then the runtime
# bench of the same configs (mean) through .carry_old and .carry, with and without programmatic
# dependent launch. Eighth: A, D (no wait), I (D with the label's loss from its holder only in place).
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
printf "variant\tdtype\tshape\twinner_us\tfrac\n"
while read d s cfg; do for rep in 1 2; do for v in A D I; do
  w=$(SOFTMAX_TUNE_CACHE=/tmp/tv_$v.db .carry/softmax-tune --shape $s --dtype $d --op cross_entropy --config $cfg \
      --templates .carry_tv/$v --force --quiet 2>&1 | grep -E "^winner")
  printf "%s\t%s\t%s\t%s\t%s\n" $v $d $s "$(echo $w | awk '{print $2}')" "$(echo $w | awk '{print $6}')"
done; done; done <<'L'
f32 1024x256000 threads=256,items=16,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=16,xchg=dsmem,hint=none
f32 2048x151936 threads=256,items=10,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=16,xchg=dsmem,hint=none
bf16 8192x50257 threads=512,items=7,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=2,xchg=dsmem,hint=none
L
