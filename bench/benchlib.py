"""benchlib.py — what the Python benchmarks share (bench/peers.py, bench/backward.py,
bench/train_step.py): the public shapes and dtypes, the binding and the verification rule on
the path, the header line naming the GPU and versions, and the timing loop: each system's output
checked first, then its median time by triton.testing.do_bench (L2 cleared before each
repetition), a fraction of the first system's time (the copy or the floor) beside it."""

import datetime
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

SHAPES = ["32000x16384", "4096x4096", "1048576x128", "131072x1000", "65536x2048",
          "8192x32000", "2048x128256", "256x1048576", "32x16384"]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def device_line():
    dev = torch.cuda.get_device_properties(0)
    return "# %s (%d SMs), torch %s, triton %s, %s." % (dev.name, dev.multi_processor_count, torch.__version__,
                                                     triton.__version__, datetime.date.today().isoformat())


def header(*notes):
    """The table's first lines, printed: the GPU and versions, how times are taken, notes, and
    last the TSV's column names (the last note)."""
    lines = [device_line(), "# Median of triton.testing.do_bench (L2 cleared before each repetition)."]
    lines += ["# " + n for n in notes[:-1]] + [notes[-1]]
    print("\n".join(lines), flush=True)
    return lines


def problems(dtypes, shapes):
    """(dtype name, torch dtype, shape, rows, cols) of a comma-separated dtype list and shapes."""
    for dname in dtypes.split(","):
        for shape in shapes:
            rows, cols = map(int, shape.split("x"))
            yield dname, DTYPES[dname], shape, rows, cols


def median_ms(fn):
    """fn's median time in ms (triton.testing.do_bench: L2 cleared before each repetition)."""
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def time_systems(key, systems, check, nbytes=None):
    """TSV rows: key columns, system, ms[, GB/s of nbytes], the first system's ms / this one's.
    systems: (name, fn) pairs, the first the floor (not checked); check(output) -> (ok, err, why).
    A system that cannot run is a comment line, not a row; a wrong one is marked WRONG."""
    rows, base = [], None
    for name, fn in systems:
        try:
            ok, err, why = (True, 0.0, "") if base is None else check(fn())
            ms = median_ms(fn)
        except Exception as e:  # a peer that cannot run this shape is reported, not fatal
            print("# %s %s: %s" % (" ".join(key), name, (str(e).splitlines() or [""])[0][:200]), flush=True)
            continue
        base = ms if base is None else base
        row = "\t".join(list(key) + [name, "%.4f" % ms] + (["%.1f" % (nbytes / ms / 1e6)] if nbytes else [])
                        + ["%.3f" % (base / ms)])
        if not ok:
            row += "\tWRONG (max err %.3g ulp)" % err
            print("# %s %s WRONG: %s" % (" ".join(key), name, why), flush=True)
        rows.append(row)
        print(row, flush=True)
    return rows


def write(path, lines):
    if path:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
