#!/usr/bin/env python3
"""rank.py — several configs of one problem timed the way bench/peers.py times softmax-tune
(triton.testing.do_bench through the runtime library), next to the copy and the Triton row
kernel, to check that the tuner's own timing ranks them as peers.py would.

    python3 lab/rank.py --shape 32x16384 --dtype bfloat16 [--rounds 5] CONFIG ...

Each config is tuned alone (softmax-tune --config) into its own cache, so the library launches
exactly that kernel; the tuner's fraction of copy is shown beside the do_bench one. Rounds run every system once each, in turn, so drift hits all alike;
the figure is the median over rounds. Needs the GPU machine's .carry/ (bench/carry.sh).
"""

import argparse
import ctypes
import os
import re
import statistics
import subprocess
import sys

import torch
import triton

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))   # peers.py, benchlib.py
sys.path.insert(0, os.path.join(ROOT, "python"))
import peers  # noqa: E402
import softmax_tune  # noqa: E402

ST_DTYPE = {"float32": (torch.float32, "f32", 0), "float16": (torch.float16, "f16", 1),
            "bfloat16": (torch.bfloat16, "bf16", 2)}


def tune_alone(binary, i, cfg, shape, dt, tmp):
    """Tune cfg alone (softmax-tune --config) into a cache of its own; its path and the tuner's
    fraction of copy."""
    db = os.path.join(tmp, "c%d.db" % i)
    if os.path.exists(db):
        os.remove(db)
    p = subprocess.run([binary, "--shape", shape, "--dtype", dt, "--config", cfg, "--cache", db, "--quiet"],
                       capture_output=True, text=True)
    m = re.search(r"([0-9.]+) of copy", p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError("tuning %s failed: %s" % (cfg, (p.stderr or p.stdout).strip().splitlines()[-1:]))
    return db, float(m.group(1))


def launcher(db, x, out, code):
    lib = softmax_tune._lib._load()
    h = ctypes.c_void_p()
    if lib.st_open(ctypes.byref(h), x.device.index or 0, db.encode()) != 0:
        raise RuntimeError(lib.st_error(None).decode())
    rows, cols = x.shape
    stream = torch.cuda.current_stream().cuda_stream

    def run():
        if lib.st_softmax(h, code, 0, x.data_ptr(), out.data_ptr(), rows, cols, stream) != 0:
            raise RuntimeError(lib.st_error(h).decode())
        return out
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", required=True)
    ap.add_argument("--dtype", default="float32", choices=sorted(ST_DTYPE))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--binary", default=os.path.join(ROOT, ".carry", "softmax-tune"))
    ap.add_argument("--tmp", default="/tmp/st_rank")
    ap.add_argument("configs", nargs="+")
    args = ap.parse_args()
    dtype, dt, code = ST_DTYPE[args.dtype]
    os.makedirs(args.tmp, exist_ok=True)
    rows, cols = map(int, args.shape.split("x"))
    x = (torch.randn(rows, cols, device="cuda") * 3).to(dtype)
    out = torch.empty_like(x)
    systems = [("copy", None, lambda: out.copy_(x))]
    if cols <= 65536:
        systems.append(("triton_tutorial", None, lambda: peers.triton_softmax(x)))
    for i, cfg in enumerate(args.configs):
        db, frac = tune_alone(args.binary, i, cfg, args.shape, dt, args.tmp)
        systems.append((cfg, frac, launcher(db, x, out, code)))
    for name, _, fn in systems[1:]:
        ok, err, why = peers.explain(fn(), x)
        if not ok:
            raise SystemExit("rank.py: %s is WRONG (max err %.3g ulp): %s" % (name, err, why))
    times = {name: [] for name, _, _ in systems}
    for _ in range(args.rounds):
        for name, _, fn in systems:
            times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
    copy = statistics.median(times["copy"])
    print("# %s %s %s, median of %d rounds of do_bench" % (torch.cuda.get_device_name(), args.dtype, args.shape,
                                                          args.rounds))
    print("%9s %8s %8s  %s" % ("us", "of copy", "tuner", "system"))
    for name, frac, _ in sorted(systems, key=lambda s: statistics.median(times[s[0]])):
        t = statistics.median(times[name])
        print("%9.2f %8.3f %8s  %s" % (t * 1e3, copy / t, "%.3f" % frac if frac else "-", name))


if __name__ == "__main__":
    main()
