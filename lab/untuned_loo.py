#!/usr/bin/env python3
"""untuned_loo.py — leave-one-out estimate of the untuned path, offline, from tuning logs.

For each problem tuned in CACHE (a full pruned sweep, every trial in the log), the default table
is written without it, `softmax-tune explain --arch sm_XX` picks its config from the others
(templates/untuned.lua), and that config's time in the problem's own log is compared with the
fastest: untuned/tuned as fractions of copy (first-round timings of one sweep, so like with like).
A config the sweep never tried is counted as unknown. --table none: today's heuristic alone.

    python3 lab/untuned_loo.py --cache all.db --table templates/defaults/sm_90.tsv [--bin build/softmax-tune]
"""
import argparse
import math
import os
import sqlite3
import subprocess
import sys
import tempfile


def explain(binary, arch, shape, dtype, op, table):
    env = dict(os.environ, SOFTMAX_TUNE_TABLE=table)
    out = subprocess.run([binary, "explain", "--arch", arch, "--shape", shape, "--dtype", dtype, "--op", op],
                         env=env, capture_output=True, text=True, check=True).stdout
    fields = dict(line.split(None, 1) for line in out.splitlines() if line.strip())
    return fields["kernel"].strip(), fields["source"].strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--table", required=True, help="the full table; 'none' for the heuristic alone")
    ap.add_argument("--bin", default="build/softmax-tune")
    ap.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    db = sqlite3.connect(a.cache)
    runs = db.execute("select id, dtype, op, rows, cols from runs where status = 'tuned' or winner is not null").fetchall()
    lines = open(a.table).read().splitlines() if a.table != "none" else []
    ratios, unknown = [], []
    print("dtype\tshape\top\tpredicted\tbest\tratio\tsource")
    seen = set()
    for run, dtype, op, rows, cols in runs:
        if (dtype, op, rows, cols) in seen:
            continue
        seen.add((dtype, op, rows, cols))
        trials = dict(db.execute("select config, max(frac) from trials where run = ? and status = 'ok' group by config", (run,)))
        if not trials:
            continue
        best = max(trials.values())
        key = "%s\t%s\t%d\t%d\t" % (dtype, op, rows, cols)
        same_es = [l for l in lines if not l.startswith(key)]
        with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
            f.write("\n".join(same_es) + "\n")
        table = "none" if a.table == "none" else f.name
        cfg, source = explain(a.bin, a.arch, "%dx%d" % (rows, cols), dtype, op, table)
        source = source.replace(f.name, "(less this problem)")
        os.unlink(f.name)
        got = trials.get(cfg)
        if got is None:
            unknown.append((dtype, rows, cols, cfg))
            print("%s\t%dx%d\t%s\t?\t%.3f\t?\t%s" % (dtype, rows, cols, op, best, source))
            continue
        ratios.append(got / best)
        print("%s\t%dx%d\t%s\t%.3f\t%.3f\t%.3f\t%s" % (dtype, rows, cols, op, got, best, got / best, source))
    g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print("# %d problems, %d with the predicted config in their log: geomean untuned/tuned %.3f, worst %.3f, "
          "below 0.85: %d; %d predicted configs not in the log" % (len(seen), len(ratios), g, min(ratios),
                                                                     sum(r < 0.85 for r in ratios), len(unknown)))


if __name__ == "__main__":
    sys.exit(main())
