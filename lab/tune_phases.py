#!/usr/bin/env python3
"""tune_phases.py — where does a cold tune's time go? For each problem and build, a fresh process
with an empty cache and no kept cubins (SOFTMAX_TUNE_CUBINS=none): its wall time, the sweep's
seconds, and from its run's trials the compiles' milliseconds (sum, median, max: NVRTC, on as many
threads as the host has cores) and the first-round kernel time. Builds take turns problem to
problem, as bench/tune_time_fused.py's.

    python3 lab/tune_phases.py OUTDIR BIN [BIN ...] -- SHAPE DTYPE OP [ARGS...] [-- SHAPE ...]

Variants: any problem the command tunes (its arguments after the op: --softcap 30, --mask causal).
"""
import os
import sqlite3
import statistics
import subprocess
import sys
import time


def label(binary):
    tree = os.path.join(os.path.dirname(os.path.abspath(binary)), "TREE")
    return open(tree).read().strip() if os.path.exists(tree) else binary


def phases(db):
    con = sqlite3.connect(db)
    sec = con.execute("select seconds from runs order by id desc limit 1").fetchone()
    ms = [r[0] for r in con.execute("select compile_ms from trials where compile_ms > 0")]
    con.close()
    return (sec[0] if sec else 0.0), ms


def main():
    a = sys.argv[1:]
    cut = a.index("--")
    out, bins = a[0], a[1:cut]
    probs, cur = [], []
    for w in a[cut + 1:] + ["--"]:
        if w == "--":
            if cur:
                probs.append(cur)
            cur = []
        else:
            cur.append(w)
    os.makedirs(out, exist_ok=True)
    os.environ["SOFTMAX_TUNE_CUBINS"] = "none"
    print("problem\tsystem\twall_s\tsweep_s\tcompiles\tcompile_ms_sum\tcompile_ms_median\tcompile_ms_max")
    for i, p in enumerate(probs):
        for b in (bins if i % 2 == 0 else bins[::-1]):
            db = "%s/%s-%d.db" % (out, label(b), i)
            if os.path.exists(db):
                os.remove(db)
            t0 = time.time()
            r = subprocess.run([b, "--shape", p[0], "--dtype", p[1], "--op", p[2], "--cache", db, "--quiet"] + p[3:],
                               capture_output=True, text=True)
            wall = time.time() - t0
            sec, ms = phases(db) if r.returncode == 0 else (0.0, [])
            print("%s\t%s\t%.2f\t%.2f\t%d\t%.0f\t%.0f\t%.0f" % (" ".join(p), label(b), wall, sec, len(ms), sum(ms),
                  statistics.median(ms) if ms else 0, max(ms) if ms else 0), flush=True)
            if r.returncode:
                print(r.stderr[-500:])


if __name__ == "__main__":
    main()
