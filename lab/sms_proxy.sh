#!/usr/bin/env bash
# sms_proxy.sh [DTYPE:SHAPE ...] — on the GPU machine, from the repository root, with .carry/
# packed by bench/carry.sh: cold fast tunes of each problem on the whole GPU and then on $SMS
# (default "96 88") of its SMs (--sms: a green context; the copy floor runs there too), each
# winner's us also divided into the whole GPU's copy us of the same problem. 88-96 of an H100's
# 132 SMs must each move what an H200's 132 move (lab/green_probe.cu): what the tuner would
# find where memory is faster per SM. Prints "dtype shape sms winner_us copy_us frac frac_of_whole config".
set -u
B=.carry/softmax-tune
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
problems=${*:-bf16:256x1048576 f32:256x1048576}
printf "%-5s %-12s %5s %10s %10s %6s %6s  %s\n" dtype shape sms winner_us copy_us frac whole config
for p in $problems; do
  d=${p%%:*} s=${p#*:} whole=
  for n in all ${SMS:-96 88}; do
    line=$($B --shape "$s" --dtype "$d" --cache /tmp/sms_proxy.db --force --quiet $([ "$n" = all ] || echo --sms "$n") 2>&1 |
           awk '/^copy floor/ {c = $3} /^winner/ {print $2, c, $6, $NF} /^softmax-tune:/ {print "- - - ERR:" $0}')
    set -- $line
    [ "$n" = all ] && whole=${2:-}
    f=$(awk -v w="${1:-0}" -v c="$whole" 'BEGIN { if (w > 0 && c > 0) printf "%.3f", c / w; else print "-" }')
    printf "%-5s %-12s %5s %10s %10s %6s %6s  %s\n" "$d" "$s" "$n" "${1:--}" "${2:--}" "${3:--}" "$f" "${4:-}"
  done
done
