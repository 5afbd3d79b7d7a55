#!/usr/bin/env bash
# families.sh DTYPE:SHAPE ... — on the GPU machine, with .carry/ packed by bench/carry.sh: tune
# each problem afresh and print, from its log, the best verified config of each family (hold
# and xchg), with its fraction of copy, and every config that failed verification. This is
# how a new kernel family is compared with the old ones in one run. TEMPLATES=DIR tunes with
# the templates in DIR (an older version, for an A/B in one run).
set -u
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=.carry/softmax-tune
db=/tmp/st_families.db
for p in "$@"; do
  d=${p%%:*} s=${p#*:}
  start=$(date +%s%N)
  $B --shape "$s" --dtype "$d" --force --quiet --cache "$db" ${TEMPLATES:+--templates "$TEMPLATES"} | grep -E "^winner"
  echo "$p: tuned in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  $B log --csv --shape "$s" --dtype "$d" --cache "$db" ${TEMPLATES:+--templates "$TEMPLATES"} | python3 -c '
import csv, sys
best, bad = {}, []
for r in csv.DictReader(sys.stdin):
    cfg = dict(kv.split("=") for kv in r["config"].split(","))
    fam = "%s/%s/passes=%s" % (cfg["hold"], cfg["xchg"], cfg["passes"])
    if r["status"] == "ok" and r["frac"]:
        if fam not in best or float(r["frac"]) > float(best[fam]["frac"]): best[fam] = r
    elif r["status"] == "failed": bad.append(r)
for fam, r in sorted(best.items(), key=lambda x: -float(x[1]["frac"])):
    print("  %-28s %s  %s regs, %s blocks/SM  %s" % (fam, r["frac"], r["regs"], r["blocks_sm"], r["config"]))
for r in bad: print("  %s %s: %s" % (r["status"].upper(), r["config"], r["reason"]))
'
done
