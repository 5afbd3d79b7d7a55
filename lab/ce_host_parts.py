#!/usr/bin/env python3
"""ce_host_parts.py — where does an eager softmax_tune.cross_entropy call's host time go, and what
does the whole call in C++ (ops.cpp cross_entropy_call, cross_entropy.py _fast) save over the
Python path? Each line: a loop of 3000 calls then one synchronize, us a call, the median of 11
loops, every line's loops taking turns in a rotated order (the host's speed drifts between loops:
host_parts.py). Variants, loss-only (x without a gradient) and forward + backward (.backward()):
  torch          F.cross_entropy(x, labels)
  whole C++      softmax_tune.cross_entropy(x, labels), its _fast path (the default)
  Python path    the same with _fast off (cross_entropy._cpp_call = None): the checks in Python,
                 then the C++ library call (cross_entropy_forward, or cross_entropy_train)
  library call   _C.cross_entropy_forward on prepared rows (loss-only lines only): what is left
                 besides the checks (allocations, the library's look-up and two launches)
On the GPU machine, .carry/ packed and the C++ ops built (bench/host_run.sh build), from the
repository root:

    python3 lab/ce_host_parts.py [ROWSxCOLS ...]     (default 32x1000 4096x4096)
"""
import importlib
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import softmax_tune  # noqa: E402
from host_overhead import loop_us  # noqa: E402  (a loop of calls, one synchronize: us a call)
ce = importlib.import_module("softmax_tune.cross_entropy")


def rotated_us(fns, calls=3000, runs=11):
    """The median us a call of each fn, their loops taking turns, the order rotated each run."""
    for fn in fns:
        for _ in range(20):
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for r in range(runs):
        for i in range(len(fns)):
            k = (i + r) % len(fns)
            times[k].append(loop_us(fns[k], calls))
    return [statistics.median(t) for t in times]


def python_path(fn):
    """fn with cross_entropy's whole-call C++ path off."""
    def run():
        saved, ce._cpp_call = ce._cpp_call, None
        try:
            return fn()
        finally:
            ce._cpp_call = saved
    return run


def main():
    print("C++ ops:", softmax_tune.cpp_ops, " whole call in C++:", ce._cpp_call is not None, flush=True)
    for shape in sys.argv[1:] or ("32x1000", "4096x4096"):
        n, v = map(int, shape.split("x"))
        x = torch.randn(n, v, device="cuda")
        xg = x.clone().requires_grad_()
        labels = torch.randint(0, v, (n,), device="cuda")
        softmax_tune.cross_entropy(x, labels)   # the device's bad-label flag, the kernels loaded
        flag = ce._flag(x.get_device()).tensor
        lines = [("loss-only torch", lambda: F.cross_entropy(x, labels)),
                 ("loss-only whole C++", lambda: softmax_tune.cross_entropy(x, labels)),
                 ("loss-only Python path", python_path(lambda: softmax_tune.cross_entropy(x, labels)))]
        if ce._cpp is not None:
            lines.append(("loss-only library call",
                          lambda: ce._cpp(x, labels, None, -100, 2, 0.0, 0.0, 0.0, False, False, flag, False)))
        lines += [("fwd+bwd torch", lambda: F.cross_entropy(xg, labels).backward()),
                  ("fwd+bwd whole C++", lambda: softmax_tune.cross_entropy(xg, labels).backward()),
                  ("fwd+bwd Python path", python_path(lambda: softmax_tune.cross_entropy(xg, labels).backward()))]
        for (name, _), t in zip(lines, rotated_us([fn for _, fn in lines])):
            print("%-10s %-26s %7.2f us" % (shape, name, t), flush=True)


if __name__ == "__main__":
    main()
