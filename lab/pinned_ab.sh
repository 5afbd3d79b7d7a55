#!/usr/bin/env bash
# pinned_ab.sh OLD NEW < PROBLEMS — does a change of a template move the speed of one config, and
# of the tuner's pick? Each line of stdin, "op dtype shape config|tune [flags...]", is tuned through
# each of two carried builds' command (bench/carry.sh's folders): with --config CONFIG (the config
# pinned: verified against float64, timed with the floor in the same run), or the whole fast sweep
# for `tune`; an empty cache and no kept cubins each, ROUNDS rounds (default 2) alternating which
# build goes first. Prints a line a run: problem, round, build, the winner's us, fraction of the
# floor (copy) and config. OLD = NEW: one build, each line once a round.
#   printf 'cross_entropy bf16 8192x32000 threads=512,...,hint=none --softcap 30\n' | bash lab/pinned_ab.sh .carry_old .carry
# From the repository root of the GPU machine. First use: a softcap cross-entropy row held as
# floats keeping z for the gradient pass (templates/ce.cu held_cap; docs/design/cross-entropy.md).
set -u
old=${1:?OLD carry} new=${2:?NEW carry}
export LD_LIBRARY_PATH=$PWD/$new/lib:/usr/local/cuda/lib64   # the command's liblua and sqlite
t0=$(date +%s) n=0
while read -r op d s cfg f; do
  [ -z "$op" ] || [ "${op#\#}" != "$op" ] && continue
  pin=(--config "$cfg"); [ "$cfg" = tune ] && pin=()
  for round in $(seq "${ROUNDS:-2}"); do
    order="$old $new"; [ $(( (n + round) % 2 )) = 1 ] && order="$new $old"
    [ "$old" = "$new" ] && order=$old   # one build: each line once a round
    for c in $order; do
      db=$(mktemp -u /tmp/pinned_ab.XXXXXX.db)
      "$c/softmax-tune" --op "$op" --dtype "$d" --shape "$s" "${pin[@]}" $f --cache "$db" --cubins none >/tmp/pinned_ab.log 2>&1
      echo "$op $d $s ${f:-} | round $round $c: $(awk '/^winner/ {print $2 " us, " $6 " of copy, " $9}' /tmp/pinned_ab.log)" \
           "$(grep -m1 -E 'WRONG|rror' /tmp/pinned_ab.log)"
      rm -f "$db"
    done
  done
  n=$((n + 1))
done
echo "pinned_ab: $(( $(date +%s) - t0 )) s"
