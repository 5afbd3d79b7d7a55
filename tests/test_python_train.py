#!/usr/bin/env python3
"""test_python_train.py — gradients through the PyTorch binding (python/softmax_tune): outputs
carry a grad_fn that runs the library's backward kernel (st_softmax_backward). For float32,
float16 and bfloat16, softmax and log_softmax: the backward op alone against float64 on the same
y and dy (softmax_tune_check.backward_explain), and end-to-end gradients against float64 torch
autograd (grad_explain: the forward rule's bounds carried through the backward, then rounded to
the dtype); torch's own kernels are held to the same rules where they compute in float32 and
round once (float32, and log_softmax: a rule that fails those is wrong; torch's 16-bit softmax
backward rounds grad*output to the dtype first, and is only reported).
Then torch.autograd.gradcheck in float32, any dim and strides, expanded gradients, empty and CPU
tensors (torch's own), the custom ops under torch.library.opcheck, torch.compile(fullgraph=True)
forward and backward, and a CUDA graph capturing forward and backward. All of it on the C++ ops
(softmax_tune._C) where they are built, then on the ctypes fallback (SOFTMAX_TUNE_NO_CPP=1).

Exit 77 (skipped) without torch or a CUDA GPU. A library without st_softmax_backward fails
(after checking that taking a gradient says so), unless ST_TEST_NO_BACKWARD_OK=1: then it exits
77 once that check passed."""

import os
import sys

from pyharness import expect, finish, host_path, raises, torch
import softmax_tune  # noqa: E402
from softmax_tune import _lib  # noqa: E402
from softmax_tune_check import backward_explain, explain, grad_explain  # noqa: E402

host_path(softmax_tune)

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def graded(dx, x, dy, log, what, dim=-1):
    """dx = d(sum(dy * softmax(x, dim)))/dx by the gradient rule."""
    m = lambda t: t.detach().movedim(dim, -1)  # noqa: E731
    ok, err, why = grad_explain(m(dx), m(x), m(dy), log)
    return expect(ok and dx.shape == x.shape, "%s: max err %.3g ulp: %s" % (what, err, why))


def rule(ok, what, dtype, log):
    """torch's own kernels must pass the rules where they compute as the rule assumes (float32
    math, dx rounded once): float32, and log_softmax. torch's 16-bit softmax backward rounds
    grad * output to the dtype before its sum (softmax_backward_cuda_out: tmp = grad * output),
    so it may fall outside by a few ulps there: said, not counted."""
    if dtype == torch.float32 or log:
        expect(ok, "RULE: " + what)
    elif not ok:
        print("  info (torch rounds grad*output to the dtype first, outside the rule):", what[:160])


def step(fn, x, dy):
    """(y, dx) of y = fn(x) with gradient dy, x a fresh leaf."""
    x = x.detach().requires_grad_()
    y = fn(x)
    y.backward(dy)
    return y, x.grad


x = torch.randn(64, 1000, device="cuda", requires_grad=True)
y = softmax_tune.softmax(x)
expect(y.requires_grad and y.grad_fn is not None, "softmax(x) of a leaf requiring grad has no grad_fn")
print("grad_fn:", type(y.grad_fn).__name__)
if not _lib.has_backward():
    raises(lambda: y.backward(torch.ones_like(y)), RuntimeError, "backward without st_softmax_backward",
           "st_softmax_backward")
    if os.environ.get("ST_TEST_NO_BACKWARD_OK") == "1":
        print("SKIP: the library at %s has no st_softmax_backward" % _lib.library_path())
        sys.exit(77)
    expect(False, "the library at %s has no st_softmax_backward" % _lib.library_path())
    finish("test_python_train", both=True)
print("backward config for 64x1000 f32:", softmax_tune.config(x, backward=True))

# no double backward: an error, never a silent wrong second derivative (eager path and custom op)
g, = torch.autograd.grad(softmax_tune.softmax(x)[:, 0].sum(), x, create_graph=True)
raises(lambda: g.sum().backward(), RuntimeError, "double backward through softmax_tune.softmax", "")

for dtype in DTYPES:
    for log in (False, True):
        name = "%s %s" % (str(dtype)[6:], "log_softmax" if log else "softmax")
        bw = torch._log_softmax_backward_data if log else torch._softmax_backward_data
        for shape in ((513, 1000), (64, 4099), (4, 3, 2048), (16, 65536)):
            x = (torch.randn(*shape, device="cuda") * 3).to(dtype)
            dy = torch.randn(*shape, device="cuda").to(dtype)
            y = softmax_tune.softmax(x, log=log)
            dx = torch.ops.softmax_tune.softmax_backward(y, dy, log)
            ok, err, why = backward_explain(dx, y, dy, log)
            expect(ok, "%s %s backward op: max err %.3g ulp: %s" % (name, shape, err, why))
            ok, err, why = backward_explain(bw(dy, y, -1, dtype), y, dy, log)
            rule(ok, "torch's own %s %s backward: %.3g ulp: %s" % (name, shape, err, why), dtype, log)
            yt, dxt = step(lambda t: softmax_tune.softmax(t, log=log), x, dy)
            expect(explain(yt.detach(), x, log)[0], "%s %s forward with grad" % (name, shape))
            graded(dxt, x, dy, log, "%s %s autograd" % (name, shape))
            _, dxr = step(lambda t: (torch.log_softmax if log else torch.softmax)(t, -1), x, dy)
            ok, err, why = grad_explain(dxr, x, dy, log)
            rule(ok, "torch's own %s %s autograd: %.3g ulp: %s" % (name, shape, err, why), dtype, log)
        print("%s: backward op and autograd within the rule" % name, flush=True)

        x = torch.randn(6, 7, 300, device="cuda", dtype=dtype) * 3
        dy = torch.randn_like(x)
        for dim in (0, 1, -1, -3):
            _, dx = step(lambda t: softmax_tune.softmax(t, dim, log), x, dy)
            graded(dx, x, dy, log, "%s 6x7x300 dim=%d" % (name, dim), dim)
        b = torch.randn(513, 300, device="cuda", dtype=dtype)   # a transposed leaf's view
        dy = torch.randn(300, 513, device="cuda", dtype=dtype)
        _, dx = step(lambda t: softmax_tune.softmax(t.t(), -1, log), b, dy)
        graded(dx.t(), b.t(), dy, log, "%s transposed" % name)
        e = torch.randn(4, 1000, device="cuda", dtype=dtype)   # loss = y.sum(): an expanded (stride 0) dy
        _, dx = step(lambda t: softmax_tune.softmax(t, -1, log).sum(), e, torch.tensor(1.0, device="cuda", dtype=dtype))
        graded(dx, e, torch.ones_like(e), log, "%s y.sum() (expanded dy)" % name)

for log in (False, True):
    x = torch.randn(4, 16, 8, device="cuda", requires_grad=True)
    try:   # float32 finite differences: rounding ~1e-7/eps = 1e-4, well under atol
        ok = torch.autograd.gradcheck(lambda t: softmax_tune.softmax(t, 1, log), (x,), eps=1e-3, atol=2e-3, rtol=1e-2)
    except Exception as e:  # noqa: BLE001
        ok = False
        print(e)
    expect(ok, "gradcheck float32 dim=1 log=%s" % log)
print("gradcheck float32: done")

# torch's own where the library does not run: gradients equal torch's exactly
for name, t in (("CPU", torch.randn(8, 100)), ("float64", torch.randn(8, 100, device="cuda", dtype=torch.float64)),
                ("empty", torch.randn(0, 100, device="cuda"))):
    dy = torch.randn_like(t)
    for log in (False, True):
        y1, d1 = step(lambda u: softmax_tune.softmax(u, -1, log), t, dy)
        y2, d2 = step(lambda u: (torch.log_softmax if log else torch.softmax)(u, -1), t, dy)
        expect(torch.equal(y1, y2) and torch.equal(d1, d2), "%s log=%s: not torch's gradient" % (name, log))

try:
    for log in (False, True):
        torch.library.opcheck(torch.ops.softmax_tune.softmax.default,
                              (torch.randn(33, 700, device="cuda", requires_grad=True), log))
        torch.library.opcheck(torch.ops.softmax_tune.softmax_backward.default,
                              (torch.rand(33, 700, device="cuda"), torch.randn(33, 700, device="cuda"), log))
    print("opcheck: both ops, every test")
except Exception as e:  # noqa: BLE001
    expect(False, "opcheck: %s" % e)

# torch.compile: forward and backward in one graph each, no graph break
for dtype in (torch.float32, torch.bfloat16):
    for log in (False, True):
        x = torch.randn(8, 500, 16, device="cuda", dtype=dtype)
        dy = torch.randn_like(x)
        try:
            f = torch.compile(lambda t, w: (softmax_tune.softmax(t, dim=1, log=log) * w).sum(), fullgraph=True)
            xl = x.clone().requires_grad_()
            f(xl, dy).backward()
            graded(xl.grad, x, dy, log, "torch.compile fullgraph %s log=%s" % (dtype, log), 1)
        except Exception as e:  # noqa: BLE001
            expect(False, "torch.compile %s log=%s: %s: %s" % (dtype, log, type(e).__name__, str(e).splitlines()[0][:300]))
print("torch.compile: fullgraph forward+backward done")

# CUDA graph: forward and backward captured together, replayed on new inputs
for log in (False, True):
    x = torch.randn(4096, 2048, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            x.grad = None
            (softmax_tune.softmax(x, -1, log) * w).sum().backward()
    torch.cuda.current_stream().wait_stream(side)
    x.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        (softmax_tune.softmax(x, -1, log) * w).sum().backward()
    with torch.no_grad():
        x.copy_(torch.randn_like(x) * 3)
        w.copy_(torch.randn_like(w))
    graph.replay()
    torch.cuda.synchronize()
    graded(x.grad, x, w, log, "CUDA graph forward+backward replay log=%s" % log)
print("CUDA graphs: forward+backward captured and replayed")
finish("test_python_train", both=True)
