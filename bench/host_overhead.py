#!/usr/bin/env python3
"""host_overhead.py — what the Python path costs around one softmax_tune launch, next to
torch and the Triton tutorial kernel: host microseconds per call (no synchronization), and
do_bench's median with and without a preallocated output; then the training path (forward
with requires_grad and its backward, through the custom op and autograd) and the backward op
alone, each next to torch's.

    python3 bench/host_overhead.py --shape 4096x4096 [--dtype float32]
"""
import argparse
import os
import sys
import time

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import softmax_tune  # noqa: E402
from peers import triton_softmax  # noqa: E402


def host_us(fn, n=2000):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="4096x4096")
    ap.add_argument("--dtype", default="float32")
    a = ap.parse_args()
    rows, cols = map(int, a.shape.split("x"))
    x = torch.randn(rows, cols, device="cuda").to(getattr(torch, a.dtype))
    y = torch.empty_like(x)
    cases = [("copy", lambda: y.copy_(x)), ("torch", lambda: torch.softmax(x, -1)),
             ("softmax_tune", lambda: softmax_tune.softmax(x)),
             ("softmax_tune out=", lambda: softmax_tune.softmax(x, out=y))]
    if cols <= 65536:
        cases.append(("triton_tutorial", lambda: triton_softmax(x)))
    xg, dy = x.detach().requires_grad_(), torch.randn_like(x)
    yt = torch.softmax(x, -1)
    cases += [("torch fwd+bwd", lambda: torch.softmax(xg, -1).backward(dy)),
              ("softmax_tune fwd+bwd", lambda: softmax_tune.softmax(xg).backward(dy)),
              ("torch bwd", lambda: torch._softmax_backward_data(dy, yt, -1, x.dtype)),
              ("softmax_tune bwd", lambda: torch.ops.softmax_tune.softmax_backward(yt, dy, False))]
    copy_ms = None
    print("%s %s: system, host us per call, do_bench median us, fraction of copy" % (a.dtype, a.shape))
    for name, fn in cases:
        try:
            ms = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
        except RuntimeError as e:   # a library without st_softmax_backward
            print("%-18s %s" % (name, str(e).splitlines()[0][:150]))
            continue
        copy_ms = copy_ms or ms
        print("%-20s %8.1f %9.2f %6.3f" % (name, host_us(fn), ms * 1e3, copy_ms / ms))


if __name__ == "__main__":
    main()
