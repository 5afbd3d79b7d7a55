#!/usr/bin/env python3
"""class_host.py — the host time of a call whose width class the library has met, on a shape it
has not (a new width of the class), against a call repeating one shape: the dispatcher's promise
(a hash look-up, nothing more). bf16 softmax 256xW, W cycling over the 256 widths of the class
2817..3072, against W = 3000 every call; each call's output preallocated-free (the op's own),
the GPU kept busy so that launches queue; medians of 7 runs of 20000 calls, host clock.

    python3 bench/class_host.py
"""
import statistics
import time

import torch

import softmax_tune

rows = 256
x = torch.randn(rows, 3072, device="cuda", dtype=torch.bfloat16)
views = [x[:, :w] for w in range(2817, 3073)]   # every width of one class (not contiguous rows: copies avoided by .contiguous() once)
views = [v.contiguous() for v in views]
same = [views[3000 - 2817]] * len(views)
for v in views:   # each width met once: the class resolved, the allocator warm
    softmax_tune.softmax(v)
torch.cuda.synchronize()


def per_call_us(xs, n=20000):
    torch.cuda._sleep(1 << 30)   # the GPU busy: launches queue, the loop measures the host alone
    t0 = time.perf_counter()
    for i in range(n):
        softmax_tune.softmax(xs[i % len(xs)])
    t = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    return t


a = [per_call_us(same) for _ in range(7)]
b = [per_call_us(views) for _ in range(7)]
print("repeated shape: %.2f us a call; new widths of a known class: %.2f us a call; difference %.2f us "
      "(medians of 7 runs of 20000 calls, %s)" % (statistics.median(a), statistics.median(b),
                                                  statistics.median(b) - statistics.median(a),
                                                  torch.cuda.get_device_name(0)))
print("stats:", softmax_tune.stats())
