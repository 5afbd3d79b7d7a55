#!/usr/bin/env python3
"""class_ab.py — width classes against exact-width kernels, on problems of a random seed: is a
kernel tuned for a width class as fast at a width it was not tuned at as the exact kernel the
old templates tuned for that width?

    python3 bench/class_ab.py --old DIR --new DIR --shapes FILE [--out TABLE.tsv]

DIR: a folder packed by bench/carry.sh (softmax-tune, lib/). For each problem 'RxC dtype op' of
FILE (bench/random_shapes.py's format, forward or backward ops):
  old    the old build tunes RxC (its kernel bakes C), then `softmax-tune bench --shape RxC` runs it;
  class  the new build tunes Rx(C'), C' the other end of C's width class (the class's narrowest
         width when C is nearer its widest, else the widest; C itself for a class of one width),
         then `softmax-tune bench --shape RxC` runs that kernel at C (found by its class).
Each build tunes the whole list in one process (`--shapes`, its own cache), then benches each
problem in a process of its own: the cached kernel through the runtime library, checked against
float64 at RxC, timed against a copy of the same bytes in the same process (fraction of copy; the
add floor for the backward ops). The table: dtype, shape, op, tuned_at, old_frac, class_frac,
ratio (class / old), old_config, class_config; then geomean and worst of ratio.
"""
import argparse
import math
import os
import subprocess
import sys


def width_class(cols):
    """gen_width_class (generator/gen.c): widths up to 64 alone; each octave above in 8 classes."""
    step = 1
    if cols > 64:
        k = (cols - 1).bit_length() - 1   # cols in (2^k, 2^(k+1)]
        step = 1 << (k - 3)
    hi = (cols + step - 1) // step * step
    return hi - step + 1, min(hi, 0x7fffffff)


def other_end(cols):
    lo, hi = width_class(cols)
    return lo if cols - lo > hi - cols else hi


def tool(build, args, cache, timeout):
    env = dict(os.environ, SOFTMAX_TUNE_CACHE=cache, LD_LIBRARY_PATH=os.path.join(build, "lib") + ":" +
               os.environ.get("LD_LIBRARY_PATH", ""))
    return subprocess.run([os.path.join(build, "softmax-tune")] + args, env=env, capture_output=True, text=True,
                          timeout=timeout)


def bench(build, cache, dtype, shape, op):
    """(fraction of the floor, "") of the cached kernel at shape, or (None, the error)."""
    r = tool(build, ["bench", "--gpu", "0", "--shape", shape, "--dtype", dtype, "--op", op], cache, 120)
    for line in r.stdout.splitlines():
        if line.startswith("softmax-tune "):
            return float(line.split()[-1]), ""
    return None, (r.stderr.strip() or r.stdout.strip())[:200]


def config_of(build, cache, dtype, shape, op):
    r = tool(build, ["explain", "--gpu", "0", "--shape", shape, "--dtype", dtype, "--op", op], cache, 60)
    for line in r.stdout.splitlines():
        if line.startswith("kernel "):
            return line.split()[1]
    return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--out", default="-")
    ap.add_argument("--work", default="/tmp/class_ab")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    head, probs = [], []
    for line in open(a.shapes):
        if line.startswith("#"):
            head.append(line.strip())
        elif line.strip():
            shape, dtype, op = line.split()
            probs.append((dtype, shape, op))
    other = os.path.join(a.work, "other.txt")
    with open(other, "w") as f:
        for dtype, shape, op in probs:
            r, c = map(int, shape.split("x"))
            f.write("%dx%d %s %s\n" % (r, other_end(c), dtype, op))
    caches = {"old": os.path.join(a.work, "old.db"), "new": os.path.join(a.work, "new.db")}
    for c in caches.values():
        if os.path.exists(c):
            os.remove(c)
    for name, build, lst in (("old", a.old, a.shapes), ("new", a.new, other)):
        r = tool(build, ["--gpu", "0", "--shapes", lst, "--quiet"], caches[name], 1800)
        print("%s tune: rc %d %s" % (name, r.returncode, r.stderr.strip()[-300:]), file=sys.stderr)
    rows, ratios = [], []
    for dtype, shape, op in probs:
        r, c = map(int, shape.split("x"))
        of, oerr = bench(a.old, caches["old"], dtype, shape, op)
        nf, nerr = bench(a.new, caches["new"], dtype, shape, op)
        ratio = nf / of if of and nf else None
        if ratio:
            ratios.append(ratio)
        rows.append([dtype, shape, op, "%dx%d" % (r, other_end(c)), "%.3f" % of if of else "-", "%.3f" % nf if nf else "-",
                     "%.3f" % ratio if ratio else "-", config_of(a.old, caches["old"], dtype, shape, op),
                     config_of(a.new, caches["new"], dtype, shape, op), (oerr + " " + nerr).strip()])
        print("\t".join(rows[-1]), file=sys.stderr)
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines()
    tree = lambda d: open(os.path.join(d, "TREE")).read().strip() if os.path.exists(os.path.join(d, "TREE")) else "?"
    out.write("# width classes against exact-width kernels: bench/class_ab.py on %s; old tree %s, new tree %s; %s\n"
              % (gpu[0] if gpu else "?", tree(a.old), tree(a.new), " ".join(head)))
    out.write("dtype\tshape\top\ttuned_at\told_frac\tclass_frac\tratio\told_config\tclass_config\tnote\n")
    for row in rows:
        out.write("\t".join(row) + "\n")
    if ratios:
        g = math.exp(sum(map(math.log, ratios)) / len(ratios))
        out.write("# %d problems: class / old geomean %.3f, worst %.3f, under 0.93: %d; not run: %d\n"
                  % (len(ratios), g, min(ratios), sum(x < 0.93 for x in ratios), len(probs) - len(ratios)))


if __name__ == "__main__":
    main()
