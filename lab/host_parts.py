#!/usr/bin/env python3
"""host_parts.py — where does an eager softmax_tune.softmax call's host time go, next to torch's?
Each line: a loop of 3000 calls then one synchronize, median of 5 loops, us a call, with the C++
ops where built (softmax_tune._C: bench/host_run.sh build), then the GPU time a kernel back to back.
On the GPU machine, .carry/ packed, from the repository root:

    python3 lab/host_parts.py [ROWSxCOLS]

On an H100 (2026-11-26): an eager 32x1000 call 6.4 us against torch's 6.8 in one
process, where two loops one after the other had read 10.1 against 7.9: the host's speed drifts
by a third between loops, so bench/host_overhead.py takes turns since d8562d7
(docs/design/python-host.md).
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import softmax_tune  # noqa: E402


def us(fn, calls=3000, runs=5):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(t)


def main():
    r, c = map(int, (sys.argv[1] if len(sys.argv) > 1 else "32x1000").split("x"))
    x = torch.randn(r, c, device="cuda")
    y = torch.empty_like(x)
    C = softmax_tune._cpp
    print("C++ ops:", C is not None)
    parts = [("torch.softmax(x, -1)", lambda: torch.softmax(x, -1)),
             ("torch.softmax(x, -1, out=y)", lambda: torch.softmax(x, -1, out=y)),
             ("torch.empty_like(x)", lambda: torch.empty_like(x)),
             ("torch.empty(r, c, device)", lambda: torch.empty(r, c, device="cuda")),
             ("softmax_tune.softmax(x)", lambda: softmax_tune.softmax(x)),
             ("softmax_tune.softmax(x, out=y)", lambda: softmax_tune.softmax(x, out=y)),
             ("torch.compiler.is_compiling()", torch.compiler.is_compiling),
             ("x.add_(0) (one launch)", lambda: x.add_(0))]
    if C is not None:
        parts += [("_C.softmax(x, -1, False)", lambda: C.softmax(x, -1, False)),
                  ("_C.softmax_out(x, -1, False, y)", lambda: C.softmax_out(x, -1, False, y)),
                  ("torch.ops.softmax_tune.softmax(x, False)", lambda: torch.ops.softmax_tune.softmax(x, False))]
    with torch.no_grad():
        parts.append(("no_grad: softmax_tune.softmax(x)", lambda: softmax_tune.softmax(x)))
    for name, fn in parts:
        print("%-44s %7.2f us" % (name, us(fn)), flush=True)
    # GPU time of one kernel, back to back (events around 3000 launches)
    for name, fn in (("torch", lambda: torch.softmax(x, -1, out=y)), ("softmax_tune", lambda: softmax_tune.softmax(x, out=y))):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(50_000_000)   # the host queues all launches while the GPU waits
        e0.record()
        for _ in range(1000):
            fn()
        e1.record()
        torch.cuda.synchronize()
        print("GPU time a kernel, back to back, %-12s %7.2f us" % (name, e0.elapsed_time(e1)))


if __name__ == "__main__":
    main()
