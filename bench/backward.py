#!/usr/bin/env python3
"""backward.py — the backward table: softmax_backward (dx = y*(dy - sum(dy*y))) and
log_softmax_backward (dx = dy - exp(y)*sum(dy)) on one GPU, in one run, for softmax-tune (its
backward op through the binding, torch.ops.softmax_tune.softmax_backward: st_softmax_backward),
torch (torch._softmax_backward_data / torch._log_softmax_backward_data),
torch.compile(mode="max-autotune-no-cudagraphs") of the formula in float32, and the floor: a
kernel that reads two tensors and writes one (torch.add(y, dy, out=dx)), all with
triton.testing.do_bench (median, L2 cleared before each repetition). y is a real forward output
(torch's softmax of randn*3 in the dtype), dy randn; each system's dx is checked first against
float64 on the same y and dy (softmax_tune_check.backward_explain: float32 error bounds rounded
to the dtype). TSV columns: dtype, shape, op, system, ms, frac_of_floor (floor ms / system ms).

    python3 bench/backward.py [--quick] [--dtypes float32,bfloat16] [--shapes 4096x4096,...] [--ops ...] [--out F]

--quick: 4096x4096, 65536x2048, 2048x128256 and 32x16384 only. softmax-tune's backward kernels
come as its library chooses them (the cache, else SOFTMAX_TUNE_MISS).
"""

import argparse

import torch

from benchlib import SHAPES, header, problems, time_systems, write
import softmax_tune  # noqa: E402,F401  (registers torch.ops.softmax_tune)
from softmax_tune_check import backward_explain  # noqa: E402

QUICK = ["4096x4096", "65536x2048", "2048x128256", "32x16384"]
OPS = {"softmax_backward": False, "log_softmax_backward": True}


def formula(y, dy, log):
    """The backward in float32, rounded once to y's dtype: what torch.compile fuses."""
    yf, df = y.float(), dy.float()
    if log:
        return (df - torch.exp(yf) * df.sum(-1, keepdim=True)).to(y.dtype)
    return (yf * (df - (df * yf).sum(-1, keepdim=True))).to(y.dtype)


def systems(y, dy, log, dtype):
    out = torch.empty_like(y)
    yield "floor", lambda: torch.add(y, dy, out=out)
    yield "softmax_tune", lambda: torch.ops.softmax_tune.softmax_backward(y, dy, log)
    bw = torch._log_softmax_backward_data if log else torch._softmax_backward_data
    yield "torch", lambda: bw(dy, y, -1, dtype)
    torch._dynamo.reset()   # a fresh compile per problem: one function recompiled for each hits the limit
    f = torch.compile(formula, mode="max-autotune-no-cudagraphs", dynamic=False)
    yield "inductor_maxautotune", lambda: f(y, dy, log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--quick", action="store_true", help="shapes " + ",".join(QUICK))
    ap.add_argument("--no-inductor", action="store_true", help="leave out torch.compile (slow to compile)")
    ap.add_argument("--out", help="also write the TSV here")
    args = ap.parse_args()
    shapes = QUICK if args.quick else args.shapes.split(",")

    lines = header("floor = torch.add(y, dy, out=dx): reads two tensors and writes one, as a backward must;"
                   " frac_of_floor = floor ms / system ms.",
                   "every dx checked first against float64 on the same y and dy (python/softmax_tune_check.py"
                   " backward_explain); a failed check is marked WRONG (max error in ulps).",
                   "dtype\tshape\top\tsystem\tms\tfrac_of_floor")
    for dname, dtype, shape, rows, cols in problems(args.dtypes, shapes):
        for op in args.ops.split(","):
            log = OPS[op]
            torch.manual_seed(rows * 7 + cols)
            x = (torch.randn(rows, cols, device="cuda") * 3).to(dtype)
            y = (torch.log_softmax if log else torch.softmax)(x, -1)
            del x
            dy = torch.randn(rows, cols, device="cuda").to(dtype)
            peers = [s for s in systems(y, dy, log, dtype) if not (args.no_inductor and s[0].startswith("inductor"))]
            lines += time_systems((dname, shape, op), peers, lambda dx: backward_explain(dx, y, dy, log))
            del y, dy
            torch.cuda.empty_cache()
    write(args.out, lines)


if __name__ == "__main__":
    main()
