#!/usr/bin/env bash
# attn_ab.sh — on the GPU machine (.carry from bench/carry.sh, two template trees in .carry_tv/A
# and .carry_tv/B): each problem of stdin ("op dtype shape [mask | flags...]" a line: a 4th word
# without "--" is attention's mask, else the words are the command's flags, e.g.
# "cross_entropy bf16 2048x262144 --softcap 30") tuned by the one binary with --templates A,
# then B, twice over; prints the copy floor and the winner (us, fraction, config) of each.
# SASS=1: also each winner's SASS instruction count (cuobjdump), second round. ROUNDS=N: N
# rounds (default 2). OLD=BIN: a third variant, "old", that binary with its own built-in templates
# (an older build: what a change of the generator or the runtime did, in the same call).
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64
t0=$(date +%s)
while read -r op d s m; do
  case $m in --*) f=$m ;; *) f="--mask $m" ;; esac
  for round in $(seq "${ROUNDS:-2}"); do
    for v in A B ${OLD:+old}; do
      bin=.carry/softmax-tune tv="--templates .carry_tv/$v"
      [ $v = old ] && bin=$OLD tv=
      SOFTMAX_TUNE_CACHE=/tmp/ab_$v.db $bin --op $op --shape $s --dtype $d $f $tv --quiet --force >/tmp/ab.log 2>&1
      w=$(grep -E '^winner' /tmp/ab.log)
      echo "$op $d $s $f $round $v: $(grep -E '^copy floor' /tmp/ab.log | awk '{print $3}') | $(echo "$w" | awk '{print $2, $6}') ${w##* }"
      if [ "${SASS:-0}" = 1 ] && [ $round = 2 ] && command -v cuobjdump >/dev/null; then
        $bin compile --op $op --shape $s --dtype $d $f $tv --config "${w##* }" \
          --arch sm_90 -o /tmp/ab_$v.cubin >/dev/null 2>&1 &&
          echo "   SASS $v: $(cuobjdump -sass /tmp/ab_$v.cubin | grep -cE '^\s+/\*[0-9a-f]+\*/') instructions"
      fi
    done
  done
done
echo "ab: $(( $(date +%s) - t0 )) s"
