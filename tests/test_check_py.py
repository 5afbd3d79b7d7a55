#!/usr/bin/env python3
"""test_check_py.py — python/softmax_tune_check.py, the verification rule in torch (what
bench/peers.py and tests/test_python.py judge outputs by): right outputs pass (the float64
reference rounded to the dtype, and float32 math rounded once), wrong ones fail (an element
3 ulps off, every element 2 ulps off, a row not propagating its NaN, an all -inf row as 0), for
f32, f16, bf16, softmax and log_softmax, rows of 7 to 70000, and f16 rows of 1048576 (mostly subnormal outputs).
On CUDA when torch sees a GPU, else on the CPU. Exit 77 (skipped) without torch."""

import os
import sys

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from softmax_tune_check import explain, ulp  # noqa: E402

dev = "cuda" if torch.cuda.is_available() else "cpu"
failures = 0


def expect(ok, want, what):
    global failures
    if ok != want:
        failures += 1
        print("FAIL: %s: %s" % (what, "rejected" if want else "accepted"))


def off(y, n):
    """y moved by n ulps of its dtype (2^-12 of itself for f32: its float32 bound is wider)."""
    v = y.double()
    step = v.abs() * 2.0 ** -12 + 2.0 ** -149 if y.dtype == torch.float32 else n * ulp(v, y.dtype)
    return (v + step).to(y.dtype)


torch.manual_seed(2026)
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for log in (False, True):
        f = torch.log_softmax if log else torch.softmax
        for rows, cols in ((6, 7), (6, 1000), (6, 70000)) + (((5, 1048576),) if dtype == torch.float16 else ()):
            x = (torch.randn(rows, cols, device=dev) * 4).to(dtype)
            x[1, ::4] = -float("inf")
            x[2] = -float("inf")
            x[3, cols // 2] = float("nan")
            what = "%s %dx%d %s" % (str(dtype)[6:], rows, cols, "log_softmax" if log else "softmax")
            right = f(x.double(), -1).to(dtype)
            # torch's own float32 softmax on the CPU sums a row of 1M by long running sums that
            # err by ~2e-4, past the rule's float32 bound: a kernel that erred so would fail too
            f32 = () if cols > 70000 and dev == "cpu" else (("float32", f(x.float(), -1).to(dtype)),)
            for name, y in (("rounded", right),) + f32:
                ok, err, why = explain(y, x, log)
                expect(ok, True, "%s %s (max err %.3g ulp) %s" % (what, name, err, why))
            at = 0 if log else int(x[0].float().argmax())
            y = right.clone()
            y[0, at] = off(y[0, at], 3)
            expect(explain(y, x, log)[0], False, what + " one element off")
            y = right.clone()
            y[0] = off(y[0], 2)
            y[4:] = off(y[4:], 2)
            expect(explain(y, x, log)[0], False, what + " every element off")
            y = right.clone()
            y[3] = f(torch.nan_to_num(x[3].double(), nan=-float("inf")), -1).to(dtype)
            expect(explain(y, x, log)[0], False, what + " NaN row not propagated")
            y = right.clone()
            y[2] = 0
            expect(explain(y, x, log)[0], False, what + " all -inf row as 0")
print("test_check_py (%s): %d failed" % (dev, failures))
sys.exit(1 if failures else 0)
