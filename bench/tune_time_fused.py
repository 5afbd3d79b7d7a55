#!/usr/bin/env python3
"""tune_time_fused.py — how long a cold `softmax-tune` takes on the fused ops (cross-entropy and
attention), whole process: a fresh process, an empty cache and no kept cubins
(SOFTMAX_TUNE_CUBINS=none), wall time around it. With two builds (A/B), each problem is tuned by
both in turn, the order alternating problem to problem, so both meet the same machine.

  python3 bench/tune_time_fused.py OUTDIR BIN [BIN_B] [--tsv PATH] [--limit SECONDS] [--family F]

--family cross_entropy or attention: that family's problems alone.

Columns: problem (shape dtype op options), system (BIN's label: its folder's TREE file or its
path), wall_s, sweep_s and configs (the tuner's "swept N configs in S s"), frac (the winner's
fraction of the floor, as the tuner measured it). A summary line per system and op family:
median and worst wall.
"""
import os
import re
import statistics
import subprocess
import sys
import time

CE_SHAPES = ["4096x128256", "8192x50257", "16384x32000", "2048x151936", "1024x256000"]
# (shape, dtype, op, extra arguments)
PROBLEMS = ([(s, d, op, []) for op in ("cross_entropy", "cross_entropy_loss") for d in ("bf16", "f32") for s in CE_SHAPES] +
            [(s, "bf16", op, ["--softcap", "30"]) for op in ("cross_entropy", "cross_entropy_loss")
             for s in ("2048x262144", "4096x128256")] +
            [("16x12x512x512", "bf16", "attention_softmax", ["--mask", "padding"]),
             ("8x8x1024x1024", "f16", "attention_softmax", ["--bias-tensor"]),
             ("2x16x4096x4096", "bf16", "attention_softmax", ["--mask", "causal", "--softcap", "50"]),
             ("8x32x1x4096", "bf16", "attention_softmax", ["--mask", "causal"]),
             ("16x12x512x512", "bf16", "attention_softmax_backward", ["--mask", "padding"]),
             ("4x16x2048x2048", "bf16", "attention_softmax_backward", ["--mask", "causal"])])


def label(binary):
    tree = os.path.join(os.path.dirname(os.path.abspath(binary)), "TREE")
    return open(tree).read().strip() if os.path.exists(tree) else binary


def tune(binary, out, i, prob):
    shape, dtype, op, extra = prob
    db = "%s/%s-%d.db" % (out, label(binary).replace("/", "_"), i)
    if os.path.exists(db):
        os.remove(db)
    cmd = [binary, "--shape", shape, "--dtype", dtype, "--op", op, "--cache", db] + extra
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    sw = re.search(r"swept (\d+) configs in ([\d.]+) s", p.stdout)
    win = re.search(r"^winner .*?([\d.]+) of copy", p.stdout, re.M)
    gpu = re.search(r"^GPU \d+: ([^,]+)", p.stdout, re.M)
    return {"wall": wall, "rc": p.returncode, "configs": sw and int(sw.group(1)), "sweep": sw and float(sw.group(2)),
            "frac": win and float(win.group(1)), "gpu": gpu and gpu.group(1), "log": " ".join(cmd) + "\n" + p.stdout + p.stderr}


def main():
    a = sys.argv[1:]
    opt = {"tsv": None, "limit": "540", "family": ""}
    pos = []
    while a:
        x = a.pop(0)
        if x.startswith("--"):
            opt[x[2:]] = a.pop(0)
        else:
            pos.append(x)
    out, bins = pos[0], pos[1:]
    os.makedirs(out, exist_ok=True)
    os.environ["SOFTMAX_TUNE_CUBINS"] = "none"   # cold: every config compiled
    t_start, limit = time.time(), float(opt["limit"])
    subprocess.run([bins[0], "--shape", "32x16384", "--cache", out + "/warm.db", "--quiet"], capture_output=True)
    rows, gpu = [], None
    with open(out + "/tune_time_fused.log", "w") as log:
        for i, prob in enumerate(p for p in PROBLEMS if p[2].startswith(opt["family"])):
            if time.time() - t_start > limit:
                break
            order = bins if i % 2 == 0 else bins[::-1]
            for b in order:
                r = tune(b, out, i, prob)
                gpu = gpu or r["gpu"]
                log.write("## rc %d wall %.2f\n%s\n" % (r["rc"], r["wall"], r["log"]))
                rows.append((prob, label(b), r))
    fmt = lambda x, f: "" if x is None else f % x
    lines = ["# bench/tune_time_fused.py on %s, %s: cold processes (empty cache, SOFTMAX_TUNE_CUBINS=none), wall time "
             "around each; systems alternate problem to problem" % (gpu or "unknown GPU", time.strftime("%Y-%m-%d")),
             "shape\tdtype\top\toptions\tsystem\twall_s\tsweep_s\tconfigs\tfrac\trc"]
    for (shape, dtype, op, extra), sysname, r in rows:
        lines.append("\t".join([shape, dtype, op, " ".join(extra) or "-", sysname, "%.2f" % r["wall"], fmt(r["sweep"], "%.2f"),
                                fmt(r["configs"], "%d"), fmt(r["frac"], "%.3f"), str(r["rc"])]))
    for sysname in dict.fromkeys(s for _, s, _ in rows):
        for fam in ("cross_entropy", "attention"):
            w = [r["wall"] for p, s, r in rows if s == sysname and p[2].startswith(fam)]
            if w:
                lines.append("# %s, %s: median wall %.2f s, worst %.2f s over %d problems" %
                             (sysname, fam, statistics.median(w), max(w), len(w)))
    text = "\n".join(lines) + "\n"
    with open(opt["tsv"] or out + "/tune-time-fused.tsv", "w") as f:
        f.write(text)
    print(text)
    print("total %.0f s" % (time.time() - t_start))


if __name__ == "__main__":
    main()
