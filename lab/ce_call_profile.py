#!/usr/bin/env python3
"""ce_call_profile.py — where does a Python cross-entropy call spend its GPU time beyond the loss
kernel? What the GPU runs for one softmax_tune.cross_entropy forward + backward (torch.autograd.grad
of the mean loss), from torch.profiler's kernel trace: each operation's name, start (us after the
first one's) and duration, one call after the L2 clear and hold the bench uses; then the call and a
copy of the logits timed in interleaved rounds (benchlib). On the GPU machine, .carry/ packed and the
C++ ops built (bench/host_run.sh build), from the repository root:

    python3 lab/ce_call_profile.py [--shapes 8192x50257,2048x151936] [--dtypes bfloat16,float32]

On an H100 (2026-11-26, 80403ef): st_ce_count 3.9 us, the loss kernel 595 us, st_ce_reduce 5.5 us,
autograd's fill 1.1 us, st_ce_scale 1.8 us at bf16 8192x50257 (docs/design/cross-entropy.md).
"""
import argparse
import importlib
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import benchlib  # noqa: E402
import softmax_tune  # noqa: E402
ce = importlib.import_module("softmax_tune.cross_entropy")


def trace(fn, cache):
    """The GPU operations of an L2 clear, a hold and one fn(): (name, start us, duration us)."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        cache.zero_()
        torch.cuda._sleep(benchlib.HOLD)
        fn()
        torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    ev.sort(key=lambda e: e.time_range.start)
    t0 = ev[0].time_range.start   # the L2 clear, then the hold, then the call's operations
    return [(e.name, e.time_range.start - t0, e.time_range.end - e.time_range.start) for e in ev]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192x50257,2048x151936")
    ap.add_argument("--dtypes", default="bfloat16")
    args = ap.parse_args()
    cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    print("# %s; C++ ops: %s" % (benchlib.device_line(), bool(softmax_tune.cpp_ops and ce._cpp_train is not None)))
    for dname, shape in [(d, s) for d in args.dtypes.split(",") for s in args.shapes.split(",")]:
        dtype = getattr(torch, dname)
        n, v = map(int, shape.split("x"))
        g = torch.Generator(device="cuda").manual_seed(n + v)
        x = (torch.randn(n, v, device="cuda", generator=g) * 2).to(dtype).requires_grad_()
        t = torch.randint(0, v, (n,), device="cuda", generator=g)
        t[torch.rand(n, device="cuda", generator=g) < 0.05] = -100

        def fwd_bwd():
            loss = softmax_tune.cross_entropy(x, t)
            return torch.autograd.grad(loss, x)[0]
        dst, xd = torch.empty_like(x), x.detach()
        print("# %s %s, kernel %s" % (dname, shape, ce.config(x)))
        for name, start, dur in trace(fwd_bwd, cache):
            print("%-60.60s start %8.1f us  dur %8.1f us" % (name, start, dur))
        ms = benchlib.interleaved_ms([lambda: dst.copy_(xd), fwd_bwd], rounds=40)
        print("%s %s: copy %.4f ms, fwd_bwd %.4f ms, fraction %.3f" % (dname, shape, ms[0], ms[1], ms[0] / ms[1]))


if __name__ == "__main__":
    main()
