#!/usr/bin/env bash
# bench_ab.sh OLD NEW < PROBLEMS — does a change of the kernels (templates, generator, runtime)
# move the speed of the kernel an untuned call gets? Each problem of stdin ("op dtype shape
# [flags...]" a line, e.g. "attention_softmax bf16 512x16x64x20 --mask causal --softcap 50")
# benched through each of two carried builds' command (bench/carry.sh's folders; `softmax-tune
# bench`: the runtime's kernel, checked against float64, timed with its floor in the same run),
# an empty cache and SOFTMAX_TUNE_MISS=heuristic each, ROUNDS rounds (default 2) alternating
# which build goes first. Prints a line a run: problem, round, build, floor us, kernel us,
# fraction of the floor.
#   printf 'attention_softmax bf16 512x16x64x20\n' | bash lab/bench_ab.sh .carry_old .carry
# From the repository root of the GPU machine. First use: the attention softcap kernel compiled
# apart (its own source) against both in one kernel, on the classes whose plain kernel took more
# registers apart (docs/design/attention.md).
set -u
old=${1:?OLD carry} new=${2:?NEW carry}
export LD_LIBRARY_PATH=$PWD/$new/lib:/usr/local/cuda/lib64   # the command's liblua and sqlite
t0=$(date +%s) n=0
while read -r op d s f; do
  [ -z "$op" ] || [ "${op#\#}" != "$op" ] && continue
  for round in $(seq "${ROUNDS:-2}"); do
    order="$old $new"; [ $(( (n + round) % 2 )) = 1 ] && order="$new $old"
    for c in $order; do
      db=$(mktemp -u /tmp/bench_ab.XXXXXX.db)
      SOFTMAX_TUNE_CACHE=$db SOFTMAX_TUNE_CUBINS=none SOFTMAX_TUNE_MISS=heuristic \
        "$c/softmax-tune" bench --op "$op" --dtype "$d" --shape "$s" $f >/tmp/bench_ab.log 2>&1
      floor=$(awk '/floor|^copy/ {print $(NF-2); exit}' /tmp/bench_ab.log)
      echo "$op $d $s ${f:-} | round $round $c: floor $floor us, $(awk '/^softmax-tune/ {print $2 " us, " $4 " of the floor"}' /tmp/bench_ab.log)" \
           "$(grep -m1 -E 'WRONG|error|rror:' /tmp/bench_ab.log)"
      rm -f "$db"
    done
  done
  n=$((n + 1))
done
echo "bench_ab: $(( $(date +%s) - t0 )) s"
