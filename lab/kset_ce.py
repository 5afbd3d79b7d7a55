#!/usr/bin/env python3
"""kset_ce.py — does a kernel set serve cross-entropy, with and without a softcap, with nothing
compiled? In a fresh process (the set at $SOFTMAX_TUNE_KERNELS, an empty cache, no kept cubins):
bf16 cross_entropy fwd+bwd on a few shapes, softcap 0 and 30, each checked against
torch in float64 (the bf16 loss within 2^-8 relative, the gradient within 2^-8 of its largest
element: a bf16 rounding's reach; a probe, not the verifier), its first call's milliseconds, and softmax_tune.stats()
at the end (compiles must be 0).

    softmax-tune kernels --build sm_90 --op cross_entropy --dtype bf16 -o /tmp/ce.kernels
    SOFTMAX_TUNE_KERNELS=/tmp/ce.kernels python3 lab/kset_ce.py

Variants: SHAPES below (N x V).
"""
import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
d = tempfile.mkdtemp()
os.environ.setdefault("SOFTMAX_TUNE_CACHE", os.path.join(d, "cache.db"))
os.environ["SOFTMAX_TUNE_CUBINS"] = "none"
import softmax_tune  # noqa: E402

SHAPES = [(2048, 128256), (4096, 32000), (777, 50257)]
bad = 0
for n, v in SHAPES:
    for cap in (0.0, 30.0):
        for grad in (True,):   # fwd+bwd: the set of --op cross_entropy (loss-only is cross_entropy_loss's)
            x = (torch.randn(n, v, device="cuda") * 4).to(torch.bfloat16).requires_grad_(grad)
            y = torch.randint(0, v, (n,), device="cuda")
            torch.cuda.synchronize()
            t = time.perf_counter()
            loss = softmax_tune.cross_entropy(x, y, softcap=cap) if cap else softmax_tune.cross_entropy(x, y)
            if grad:
                loss.backward()
            torch.cuda.synchronize()
            ms = (time.perf_counter() - t) * 1e3
            x64 = x.detach().double().requires_grad_(grad)
            z = cap * torch.tanh(x64 / cap) if cap else x64
            ref = F.cross_entropy(z, y)
            if grad:
                ref.backward()
            lerr = abs(loss.double().item() - ref.item()) / abs(ref.item())
            gerr = (x.grad.double() - x64.grad).abs().max().item() / x64.grad.abs().max().item() if grad else 0.0
            ok = lerr < 2 ** -8 and gerr < 2 ** -8
            bad += not ok
            print("%dx%d softcap %g %s: first call %.1f ms, loss rel err %.2e, grad err %.2e of its max  %s" %
                  (n, v, cap, "fwd+bwd" if grad else "loss-only", ms, lerr, gerr, "ok" if ok else "WRONG"))
s = softmax_tune.stats()
print("stats:", s)
print("kset_ce: %d wrong, %d compiles" % (bad, s.get("compiles", -1)))
sys.exit(1 if bad or s.get("compiles", 1) else 0)
