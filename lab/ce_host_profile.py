#!/usr/bin/env python3
"""ce_host_profile.py — where softmax_tune.cross_entropy's host time goes (issue 39): us a call of
its pieces at 32x1000 f32 (launch-bound), each a loop of 2000 calls and one synchronize, then
cProfile of 500 forward + backward calls, by own time."""
import cProfile
import pstats
import time

import torch
import torch.nn.functional as F

import softmax_tune
import sys
ce = sys.modules["softmax_tune.cross_entropy"]

x = torch.randn(32, 1000, device="cuda", requires_grad=True)
labels = torch.randint(0, 1000, (32,), device="cuda")


def per_call(fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


x2, t1 = x.detach(), labels
g = torch.ones((), device="cuda")
grad = torch.empty_like(x2)
pieces = [
    ("torch F.cross_entropy fwd+bwd", lambda: F.cross_entropy(x, labels).backward()),
    ("ours fwd+bwd", lambda: softmax_tune.cross_entropy(x, labels).backward()),
    ("ours fwd, grad wanted (no backward)", lambda: softmax_tune.cross_entropy(x, labels)),
    ("ours loss only (no_grad)", lambda: torch.no_grad()(softmax_tune.cross_entropy)(x, labels)),
    ("run() with grad", lambda: ce.run(x2, t1, None, -100, "mean", 0.0, 0.0, None, True)),
    ("run() loss only", lambda: ce.run(x2, t1, None, -100, "mean", 0.0, 0.0, None, False)),
    ("scale_(grad, 1)", lambda: ce.scale_(grad, g)),
    ("torch empty(32,1000)", lambda: torch.empty(32, 1000, device="cuda")),
]
print("cpp_ops", softmax_tune.cpp_ops, "ce C++ call", ce._cpp is not None)
for name, fn in pieces:
    print("%-40s %8.1f us" % (name, per_call(fn)))
prof = cProfile.Profile()
prof.enable()
for _ in range(500):
    softmax_tune.cross_entropy(x, labels).backward()
torch.cuda.synchronize()
prof.disable()
pstats.Stats(prof).sort_stats("tottime").print_stats(25)
