#!/usr/bin/env bash
# ring_ab.sh [ROUNDS] [SHAPE] — on the GPU machine, from the repository root, with .carry/ packed by
# bench/carry.sh: the long-row ring kernels pinned with --config (static ring against claim, bf16
# and f32), each under the committed templates and under each ring patch of lab/patches/, ROUNDS
# rounds (default 2) in turn, so that a variant's spread shows next to its neighbours'. Every
# pinned run verifies its kernel against float64 and times it against the copy in the same
# process; the table gives the tuner's fraction of copy, the kernel's and the copy's us. With
# SMS=N every run is on N of the GPU's SMs (--sms), the copy too: divide the whole GPU's copy
# us (a run without SMS) by the kernel's us for its fraction of that.
set -u
rounds=${1:-2}
shape=${2:-256x1048576}
B=.carry/softmax-tune
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=reduce=shfl,passes=1,hold=ring,rows=1,hint=none
CONFIGS="bf16:threads=1024,items=4,vec=8,$R,split=32,xchg=global
bf16:threads=1024,items=4,vec=8,$R,split=32,xchg=claim
bf16:threads=1024,items=2,vec=8,$R,split=64,xchg=claim
f32:threads=1024,items=2,vec=4,$R,split=128,xchg=global
f32:threads=1024,items=2,vec=4,$R,split=128,xchg=claim"

# one folder of templates per variant: the committed ones, then each patch applied to a copy
variants="committed=templates"
for p in lab/patches/ring-*.patch; do
  v=$(basename "$p" .patch)
  rm -rf "/tmp/ab_$v" && mkdir -p "/tmp/ab_$v" && cp -r templates "/tmp/ab_$v/"
  if (cd "/tmp/ab_$v" && git apply "$OLDPWD/$p"); then variants="$variants $v=/tmp/ab_$v/templates"
  else echo "skip $v: the patch does not apply"; fi
done

printf "%-18s %-5s %-34s %5s %s\n" variant dtype config round "frac   kern_us  copy_us"
for round in $(seq "$rounds"); do
  for c in $CONFIGS; do
    d=${c%%:*} cfg=${c#*:}
    for vt in $variants; do
      v=${vt%%=*} tpl=${vt#*=}
      f=$($B --shape "$shape" --dtype "$d" --templates "$tpl" --cache /tmp/ab.db --quiet ${SMS:+--sms $SMS} --config "$cfg" 2>&1 |
          awk '/^copy floor/ {c = $3} /^winner/ {printf "%s %8s %8s\n", $6, $2, c} /^softmax-tune:/ {print "ERR:" substr($0, 1, 60)}' | head -1)
      short=$(echo "$cfg" | sed -E 's/.*items=([0-9]+).*split=([0-9]+),xchg=([a-z]+).*/items=\1 split=\2 \3/')
      printf "%-18s %-5s %-34s %5s %s\n" "$v" "$d" "$short" "$round" "${f:-none}"
    done
  done
done
