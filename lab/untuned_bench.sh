#!/usr/bin/env bash
# untuned_bench.sh CARRY < PROBLEMS — how far is the untuned kernel (the set's, else the rule's
# compiled) from the tuned one, both timed by `softmax-tune bench` (the same timing, the floor in
# the same run)? Each line of stdin, "op dtype shape [flags...]": bench on an empty cache with
# SOFTMAX_TUNE_MISS=heuristic (the untuned kernel), then the problem tuned into a cache and bench
# again (the tuned kernel), ROUNDS times (default 2). Prints a line a run and, a problem, the mean
# of each and untuned/tuned as a speed ratio (1.0: the untuned kernel is as fast). Unlike
# pinned_ab.sh it times kernels the tuner refuses (local memory past --max-local: 128 bytes a thread;
# any before 2026-11-30), as a user's first call runs them.
#   printf 'cross_entropy bf16 65536x1500\n' | bash lab/untuned_bench.sh .carry
# From the repository root of the GPU machine. First use: the 16-bit cross-entropy gradient's
# adapted table configs that spill 32-72 bytes (lab/shapes/spill-untuned.txt).
set -u
c=${1:?CARRY}
export LD_LIBRARY_PATH=$PWD/$c/lib:/usr/local/cuda/lib64
t0=$(date +%s)
# us of the `softmax-tune` line of a bench log, or -
us() { awk '$1 == "softmax-tune" && $2 ~ /^[0-9.]+$/ {print $2; f = 1} END {if (!f) print "-"}' "$1"; }
while read -r op d s f; do
  [ -z "$op" ] || [ "${op#\#}" != "$op" ] && continue
  u=() t=()
  for round in $(seq "${ROUNDS:-2}"); do
    db=$(mktemp -u /tmp/untuned_bench.XXXXXX.db)
    SOFTMAX_TUNE_MISS=heuristic "$c/softmax-tune" bench --op "$op" --dtype "$d" --shape "$s" $f --cache "$db" \
      --cubins none >/tmp/untuned_bench.log 2>&1
    u+=("$(us /tmp/untuned_bench.log)")
    echo "$op $d $s ${f:-} | round $round untuned: ${u[-1]} us $(grep -m1 -E 'WRONG|rror' /tmp/untuned_bench.log)"
    "$c/softmax-tune" --op "$op" --dtype "$d" --shape "$s" $f --cache "$db" --cubins none >/tmp/untuned_bench.tune 2>&1
    "$c/softmax-tune" bench --op "$op" --dtype "$d" --shape "$s" $f --cache "$db" --cubins none >/tmp/untuned_bench.log 2>&1
    t+=("$(us /tmp/untuned_bench.log)")
    echo "$op $d $s ${f:-} | round $round tuned: ${t[-1]} us, $(awk '/^winner/ {print $9}' /tmp/untuned_bench.tune)" \
         "$(grep -m1 -E 'WRONG|rror' /tmp/untuned_bench.log)"
    rm -f "$db"
  done
  python3 -c 'import sys
u = [float(x) for x in sys.argv[2].split() if x != "-"]; t = [float(x) for x in sys.argv[3].split() if x != "-"]
print(sys.argv[1], "| untuned %s us, tuned %s us, untuned/tuned speed %s" % (
  "%.2f" % (sum(u) / len(u)) if u else "-", "%.2f" % (sum(t) / len(t)) if t else "-",
  "%.3f" % ((sum(t) / len(t)) / (sum(u) / len(u))) if u and t else "-"))' "$op $d $s ${f:-}" "${u[*]}" "${t[*]}"
done
echo "untuned_bench: $(( $(date +%s) - t0 )) s"
