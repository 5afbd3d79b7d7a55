#!/usr/bin/env python3
"""attn_bw_few_rows.py — why the untuned attention backward of a few long rows runs far from its
floor: f16 16x8x1x3041 (128 rows of 3041) ran at 0.022 of the floor untuned against 0.875 tuned
(bench/results/untuned-fused-h100-2026-11-27.tsv), with a bias tensor in its forward.

    SOFTMAX_TUNE_MISS=heuristic PYTHONPATH=python python3 lab/attn_bw_few_rows.py [--shape BxHxQxK]

Variants, each in the same process after a warm-up call: the forward with a [1, H, Q, K] bias
tensor or none; the backward through autograd (as the bench times it) and through
attention.run_backward directly. For each: the library's counters (stats()) over 50 calls, host
time a call (wall clock, synchronized), and GPU time a call (CUDA events, L2 cleared), against
the floor (torch.add of y and dy) timed the same way.
"""
import argparse
import sys
import time

import torch

sys.path.insert(0, "python")
import softmax_tune  # noqa: E402
from softmax_tune import attention as attn  # noqa: E402


def gpu_ms(fn, n=50):
    flush = torch.empty(64 << 20, dtype=torch.int8, device="cuda")
    ts = []
    for _ in range(n):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return sorted(ts)[n // 2]


def host_us(fn, n=50):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="16x8x1x3041")
    ap.add_argument("--dtype", default="float16")
    a = ap.parse_args()
    B, H, Q, K = map(int, a.shape.split("x"))
    dt = getattr(torch, a.dtype)
    g = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.randn(B, H, Q, K, device="cuda", generator=g) * 4).to(dt)
    dy = torch.randn(B, H, Q, K, device="cuda", generator=g).to(dt)
    dst = torch.empty_like(x)
    for bias in (None, torch.randn(1, H, Q, K, device="cuda", generator=g).to(dt)):
        xg = x.detach().requires_grad_()
        y = softmax_tune.attention_softmax(xg, scale=128 ** -0.5, bias=bias)
        y0 = y.detach()
        kl = None
        variants = {
            "autograd": lambda: torch.autograd.grad(y, xg, dy, retain_graph=True)[0],
            "run_backward": lambda: attn.run_backward(None, y0, dy, kl, 128 ** -0.5, 0.0, False, -1, K - Q),
            "floor": lambda: torch.add(y0, dy, out=dst),
        }
        for name, fn in variants.items():
            fn()
            s0 = softmax_tune.stats()
            h = host_us(fn)
            ms = gpu_ms(fn)
            s1 = softmax_tune.stats()
            d = {k: s1[k] - s0[k] for k in s1 if s1[k] != s0[k]}
            print("bias=%s %-12s gpu %.4f ms  host %.1f us/call  stats %s" % (bias is not None, name, ms, h, d), flush=True)
        print("config:", softmax_tune.attention.config(x, backward=True))


if __name__ == "__main__":
    sys.exit(main())
