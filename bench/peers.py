#!/usr/bin/env python3
"""peers.py — softmax-tune against its peers on one GPU, in one run.

Times softmax-tune (through the Python binding, tuned kernels from the cache), torch.softmax,
a Triton one-program-per-row softmax (the tutorial's; n/a when cols > 65536), and optionally
torch.compile(mode="max-autotune-no-cudagraphs"), plus a torch copy of the same tensor, all with
triton.testing.do_bench (median, L2 cleared before each repetition). Each system's output is
checked against a float64 reference first. Prints a TSV with the columns of
shared/peers/h200.tsv: dtype, shape, system, ms, GB/s, frac_of_copy (copy time / system time).

    python3 bench/peers.py [--dtypes float32,bfloat16] [--shapes 4096x4096,...] [--inductor] [--out F]

softmax-tune's kernels come from the cache ($SOFTMAX_TUNE_CACHE or the default); tune the shapes
first (bench/device_run.sh does). SOFTMAX_TUNE_MISS decides what happens to untuned shapes.
"""

import argparse

import torch
import triton
import triton.language as tl

from benchlib import SHAPES, header, problems, time_systems, write
import softmax_tune  # noqa: E402
from softmax_tune_check import explain  # noqa: E402


@triton.jit
def _row_softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def triton_softmax(x):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    warps = 4 if block < 2048 else 8 if block < 4096 else 16 if block < 16384 else 32
    y = torch.empty_like(x)
    _row_softmax[(rows,)](y, x, x.stride(0), y.stride(0), cols, BLOCK=block, num_warps=warps)
    return y


def systems(args, x, dtype):
    out = torch.empty_like(x)
    yield "copy", lambda: out.copy_(x)
    yield "softmax_tune", lambda: softmax_tune.softmax(x, out=out)
    yield "torch", lambda: torch.softmax(x, -1)
    if x.shape[1] <= 65536:
        yield "triton_tutorial", lambda: triton_softmax(x)
    if args.inductor:
        torch._dynamo.reset()   # a fresh compile per shape: one function recompiled 9 times hits the limit
        f = torch.compile(lambda t: torch.softmax(t, -1), mode="max-autotune-no-cudagraphs", dynamic=False)
        yield "inductor_maxautotune", lambda: f(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="float32,bfloat16,float16")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--inductor", action="store_true", help="also torch.compile max-autotune (slow to compile)")
    ap.add_argument("--out", help="also write the TSV here")
    args = ap.parse_args()

    lines = header("GB/s counts one read + one write.",
                   "frac_of_copy = copy time / system time, copy = torch copy_ of the same tensor in the same run.",
                   "every output checked first by softmax-tune's rule (python/softmax_tune_check.py: float64 reference,"
                   " float32 error bounds rounded to the dtype); a failed check is marked WRONG (max error in ulps).",
                   "dtype\tshape\tsystem\tms\tGB/s\tfrac_of_copy")
    for dname, dtype, shape, rows, cols in problems(args.dtypes, args.shapes.split(",")):
        torch.manual_seed(rows * 7 + cols)
        x = (torch.randn(rows, cols, device="cuda", dtype=torch.float32) * 3).to(dtype)
        lines += time_systems((dname, shape), systems(args, x, dtype), lambda y: explain(y, x),
                              2 * x.numel() * x.element_size())
        del x
        torch.cuda.empty_cache()
    write(args.out, lines)


if __name__ == "__main__":
    main()
