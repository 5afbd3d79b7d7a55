#!/usr/bin/env python3
"""test_python_lce.py — softmax_tune.linear_cross_entropy (python/softmax_tune/linear_cross_entropy.py) against
float64 torch on the same (upcast) inputs: the loss and the gradients of hidden, weight and bias, for float32,
float16 and bfloat16; int32 and int64 labels; every option (ignore_index, label_smoothing, z_loss, softcap,
class_weight, bias) and combinations; reductions none / sum / mean under a grad_output that is not 1 (one a row
for none) and under 1; several chunks with a ragged last one; [B, T, D] hidden; gradients of a subset (a frozen
weight, no bias grad); nn.LinearCrossEntropyLoss; the loss-only path; torch.compile(fullgraph=True); a second
backward refused; memory (the logits never whole); bad labels; the torch fallbacks (one warning); bad inputs;
opcheck of the custom op; under torch.autocast a float32 loss, the gradients in hidden's dtype.

Every element is checked against a bound built from the dtype's rounding, propagated to first order (as
softmax_tune_check.grad_explain does) with a margin of 2: the logits rounded to the dtype after cuBLAS's float32
sum (and, for 16-bit dtypes, its reduced-precision split-K partial sums), the softmax's response to that error,
the kernel's float32 steps, the logits' gradient rounded, each gradient matmul's sum and rounding, grad_weight's
rounding at every chunk it is accumulated over, the mean's factor and grad_output rounded in; plus a relative
norm check (METHOD: a gross error such as a chunk left out fails it whatever the bound). A GPU machine only:
without torch or a CUDA GPU it prints a SKIP line and exits 77 (skipped)."""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pyharness import expect, finish, raises, torch  # noqa: E402  (exit 77 without torch or a CUDA GPU)
import torch.nn.functional as F  # noqa: E402
import softmax_tune  # noqa: E402

lce = sys.modules["softmax_tune.linear_cross_entropy"]
U = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}   # unit roundoff
SPLIT = {torch.float32: 0.0, torch.float16: 4.0, torch.bfloat16: 4.0}   # 16-bit GEMMs' reduced-precision partial sums
TINY = {torch.float32: 2.0 ** -126, torch.float16: 2.0 ** -24, torch.bfloat16: 2.0 ** -126}
NORM = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 1e-1}   # relative norm of the error, at most
F32 = 2.0 ** -24
KERNEL = 2.0 ** -16   # the kernel's float32 steps (sums, exp, log, tanh), relative to the terms they combine
torch.manual_seed(0)


def reference(h, w, t, bias=None, class_weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0,
              z_loss=0.0, softcap=None, go=None, chunk=None, dtype=None, shard=None):
    """float64 loss and gradients of (hidden h, weight w, bias), and each one's error bound for the chunked
    computation in dtype with chunks of chunk rows (see the header). go: grad_output (None: 1). shard: the
    classes of a rank's shard, for the vocab-parallel op (tests/test_python_vocab_parallel.py): its softmax
    factor exp(lse_shard - lse) (the global lse's float32 error), with label smoothing the second pass's
    rounding of the kernel's (p - 1/shard), and hidden's gradient summed over the ranks' rounded parts."""
    dtype = dtype or h.dtype
    u, split = U[dtype], SPLIT[dtype]
    d = h.shape[-1]
    h2, wd = h.detach().double().reshape(-1, d), w.detach().double()
    bd = bias.detach().double() if bias is not None else None
    n, v = h2.shape[0], wd.shape[0]
    chunk = chunk or n
    nchunks = -(-n // chunk)
    t1 = t.reshape(-1).long()
    eps, zl = label_smoothing, z_loss
    z = h2 @ wd.t() + (bd if bd is not None else 0.0)
    ez = u * z.abs() + (d * F32 + split * u) * (h2.abs() @ wd.abs().t() + (bd.abs() if bd is not None else 0.0))
    if softcap:
        th = torch.tanh(z / softcap)
        zc, cd = softcap * th, 1.0 - th * th
    else:
        zc, cd = z, torch.ones_like(z)
    lse = torch.logsumexp(zc, 1)
    p = torch.exp(zc - lse[:, None])
    valid = (t1 != ignore_index).double()
    tc = t1.clamp(0, v - 1)
    wy = (class_weight.double()[tc] if class_weight is not None else torch.ones_like(lse)) * valid
    coef = ((1 - eps) * wy + eps + 2 * zl * lse) * valid
    onehot = torch.zeros_like(z).scatter_(1, tc[:, None], 1.0)
    zy = zc.gather(1, tc[:, None])[:, 0]
    gu = (coef[:, None] * p - eps / v - ((1 - eps) * wy)[:, None] * onehot) * valid[:, None]   # d row loss / d zc
    rows = ((1 - eps) * wy * (lse - zy) + eps * (lse - zc.mean(1)) + zl * lse * lse) * valid
    divisor = wy.sum()
    g0 = 1.0 if go is None else go.double().reshape(-1)
    if reduction == "none":
        loss, sg = rows, (g0 * torch.ones_like(lse))
    elif reduction == "sum":
        loss, sg = rows.sum(), g0 * torch.ones_like(lse)
    else:
        loss, sg = rows.sum() / divisor, g0 / divisor * torch.ones_like(lse)
    dzc = sg[:, None] * gu
    dz = dzc * cd
    gh, gw, gb = dz @ wd, dz.t() @ h2, dz.sum(0)
    # bounds
    ezc = cd * ez
    m = (p * ezc).sum(1, keepdim=True)
    edz = sg.abs()[:, None] * p * (coef.abs()[:, None] * (ezc + m) + 2 * zl * m) * cd
    if softcap:
        edz = edz + dzc.abs() * 2 * th.abs() * cd / softcap * ez
    terms = sg.abs()[:, None] * (coef.abs()[:, None] * p + eps / v + ((1 - eps) * wy)[:, None] * onehot) * cd
    edz = edz + KERNEL * terms + u * dz.abs()
    if shard:
        edz = edz + 2.0 ** -20 * (1 + lse.abs())[:, None] * terms
        if eps > 0:
            edz = edz + (u + KERNEL) * sg.abs()[:, None] * coef.abs()[:, None] * (p + 1.0 / shard) * cd
    edz = edz * valid[:, None]
    el = ((gu.abs() * ezc).sum(1) + KERNEL * ((1 - eps) * wy * (lse.abs() + zy.abs())
                                              + eps * (lse.abs() + zc.abs().mean(1)) + zl * lse * lse)) * valid
    eloss = loss_error(el, u, rows, loss, reduction, divisor)
    adz = dz.abs()
    dzw = adz @ wd.abs()
    egh = edz @ wd.abs() + (v * F32 + split * u + (2 * u if shard else 0.0)) * dzw + 3 * u * gh.abs()
    egw = edz.t() @ h2.abs() + (chunk * F32 + split * u + u * (1 + nchunks)) * (adz.t() @ h2.abs()) + 2 * u * gw.abs()
    egb = edz.sum(0) + (n * F32 + u * nchunks) * adz.sum(0) + 3 * u * gb.abs()
    return {"loss": (loss, eloss), "gh": (gh, egh), "gw": (gw, egw), "gb": (gb, egb)}


def loss_error(el, u, rows, loss, reduction, divisor):
    """The loss's bound from the rows' errors el, reduced as the loss is, and its own rounding u."""
    if reduction == "none":
        return el + u * rows.abs()
    if reduction == "sum":
        return el.sum() + u * loss.abs()
    return el.sum() / divisor + u * loss.abs()


def close(got, want, bound, dtype, what):
    """Every element of got within 2 x bound (+ the dtype's subnormal spacing) of want, and the error's norm
    within NORM of want's."""
    if got is None or got.numel() != want.numel():
        return expect(False, "%s: %s, want %d elements" % (what, None if got is None else tuple(got.shape),
                                                               want.numel()))
    g, w, b = got.detach().double().reshape(-1), want.reshape(-1).to(got.device), bound.reshape(-1).to(got.device)
    err = (g - w).abs()
    lim = 2 * b + TINY[dtype]
    bad = ~(err <= lim)
    ok = expect(not bad.any(), "%s: %d of %d off, worst %.3g over its bound %.3g (value %.4g, want %.4g)" % (
        what, int(bad.sum()), w.numel(), float((err - lim).max()), float(lim[int((err - lim).argmax())]),
        float(g[int((err - lim).argmax())]), float(w[int((err - lim).argmax())])))
    rel = float(err.norm() / max(float(w.norm()), 1e-300))
    return expect(rel <= NORM[dtype], "%s: relative error %.3g over %.3g" % (what, rel, NORM[dtype])) and ok


def labels(shape, v, dtype=torch.int64, ignore_index=-100, ignored=0.2):
    t = torch.randint(0, v, shape, device="cuda")
    t[torch.rand(shape, device="cuda") < ignored] = ignore_index
    return t.to(dtype)


def inputs(n, d, v, dtype, bias=False, lead=None):
    h = torch.randn(*(lead or (n,)), d, device="cuda").to(dtype)
    w = (torch.randn(v, d, device="cuda") * 0.3).to(dtype)
    b = (torch.randn(v, device="cuda") * 0.5).to(dtype) if bias else None
    return h, w, b


def run_case(h, w, t, b, what, go=None, need=(True, True, True), chunk=128, **kw):
    """linear_cross_entropy's loss and gradients against the reference (fresh leaves); an exception is a failure."""
    try:
        return _run_case(h, w, t, b, what, go, need, chunk, **kw)
    except Exception as e:  # noqa: BLE001  (the other cases still run)
        return expect(False, "%s: %s: %s" % (what, type(e).__name__, str(e)[:500]))


def _run_case(h, w, t, b, what, go, need, chunk, **kw):
    dtype = h.dtype
    go = go.to(dtype) if go is not None else None
    hl = h.clone().requires_grad_(need[0])
    wl = w.clone().requires_grad_(need[1])
    bl = b.clone().requires_grad_(need[2]) if b is not None else None
    loss = softmax_tune.linear_cross_entropy(hl, wl, t, bl, chunk_rows=chunk, **kw)
    loss.backward(go)
    ref = reference(h, w, t, b, go=go, chunk=chunk, dtype=dtype, **kw)
    ok = close(loss, *ref["loss"], dtype, what + " loss")
    if need[0]:
        ok = close(hl.grad, *ref["gh"], dtype, what + " grad hidden") and ok
    else:
        ok = expect(hl.grad is None, what + ": a gradient for hidden, which does not require one") and ok
    if need[1]:
        ok = close(wl.grad, *ref["gw"], dtype, what + " grad weight") and ok
    else:
        ok = expect(wl.grad is None, what + ": a gradient for weight, which does not require one") and ok
    if b is not None and need[2]:
        ok = close(bl.grad, *ref["gb"], dtype, what + " grad bias") and ok
    return ok


OPTIONS = [{}, {"label_smoothing": 0.1}, {"z_loss": 1e-3}, {"softcap": 5.0}, {"class_weight": True},
           {"ignore_index": 3}, {"bias": True}, {"label_smoothing": 0.2, "z_loss": 1e-2, "softcap": 4.0},
           {"class_weight": True, "z_loss": 1e-3, "softcap": 6.0, "bias": True}]

# every option and reduction, each dtype, 300 rows in chunks of 128 (the last 44); int32 and int64 labels
n, d, v = 300, 64, 5000
k = 0
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for opts in OPTIONS:
        for reduction in ("none", "sum", "mean"):
            kw = dict(opts, reduction=reduction)
            ii = kw.get("ignore_index", -100)
            if kw.pop("class_weight", False):
                kw["class_weight"] = torch.rand(v, device="cuda") + 0.5
            h, w, b = inputs(n, d, v, dtype, kw.pop("bias", False))
            ldtype = (torch.int32, torch.int64)[k % 2]
            k += 1
            t = labels((n,), v, ldtype, ii)
            go = torch.randn(n, device="cuda") if reduction == "none" else torch.tensor(0.37, device="cuda")
            what = "%s %s %s %s" % (dtype, ldtype, reduction, opts)
            run_case(h, w, t, b, what, go, **kw)
            if reduction == "mean":   # grad_output 1: the scaling skipped on the device
                run_case(h, w, t, b, what + " go=1", **kw)
    print("%s: every option and reduction checked" % dtype, flush=True)

# [B, T, D] hidden; gradients of a subset; one chunk (the default size); chunks of 1 row
for dtype in (torch.float32, torch.bfloat16):
    h, w, b = inputs(0, 48, 3000, dtype, True, lead=(4, 25))
    t = labels((4, 25), 3000)
    for reduction in ("none", "mean"):
        go = torch.randn(4, 25, device="cuda") if reduction == "none" else None
        run_case(h, w, t, b, "[B,T,D] %s %s" % (dtype, reduction), go, chunk=32, reduction=reduction, z_loss=1e-3)
        run_case(h, w, t, b, "frozen weight %s %s" % (dtype, reduction), go, need=(True, False, False), chunk=32,
                 reduction=reduction)
        run_case(h, w, t, b, "weight only %s %s" % (dtype, reduction), go, need=(False, True, True), chunk=32,
                 reduction=reduction)
    run_case(h, w, t, b, "default chunk %s" % dtype, chunk=None)
    run_case(h[:1, :7], w, t[:1, :7], b, "chunks of 1 row %s" % dtype, chunk=1, label_smoothing=0.1)

# the module, and the loss-only path (no gradient wanted)
h, w, b = inputs(200, 64, 4000, torch.bfloat16, True)
t = labels((200,), 4000)
cw = torch.rand(4000, device="cuda") + 0.5
m = softmax_tune.nn.LinearCrossEntropyLoss(class_weight=cw, reduction="sum", z_loss=1e-3, softcap=8.0, chunk_rows=64)
print(repr(m))
want = reference(h, w, t, b, cw, reduction="sum", z_loss=1e-3, softcap=8.0, chunk=64)["loss"]
close(m(h, w, t, b), *want, torch.bfloat16, "nn.LinearCrossEntropyLoss")
with torch.no_grad():
    hg = h.clone().requires_grad_()
    want = reference(h, w, t, b, reduction="none", chunk=64)["loss"]
    close(softmax_tune.linear_cross_entropy(hg, w, t, b, reduction="none", chunk_rows=64), *want, torch.bfloat16,
          "loss only (no_grad)")
close(softmax_tune.linear_cross_entropy(h, w, t, b, chunk_rows=64), *reference(h, w, t, b, chunk=64)["loss"],
      torch.bfloat16, "loss only (nothing requires grad)")

# under torch.autocast: a float32 loss (as torch's F.cross_entropy there), the gradients in hidden's dtype
for reduction in ("none", "mean"):
    hg, wg = h.clone().requires_grad_(), w.clone().requires_grad_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = softmax_tune.linear_cross_entropy(hg, wg, t, b, reduction=reduction, chunk_rows=64)
    loss.backward(torch.ones_like(loss))
    expect(loss.dtype == torch.float32 and hg.grad.dtype == wg.grad.dtype == torch.bfloat16,
           "autocast %s: loss %s, grads %s %s" % (reduction, loss.dtype, hg.grad.dtype, wg.grad.dtype))
    ref = reference(h, w, t, b, reduction=reduction, chunk=64)
    close(loss, *ref["loss"], torch.bfloat16, "autocast %s loss" % reduction)
    close(hg.grad, *ref["gh"], torch.bfloat16, "autocast %s grad hidden" % reduction)

# a second backward through the same graph is refused (mean: the kept gradients are consumed)
hg = h.clone().requires_grad_()
loss = softmax_tune.linear_cross_entropy(hg, w, t)
loss.backward(retain_graph=True)
raises(lambda: loss.backward(), RuntimeError, "a second backward", "second time")

# torch.compile(fullgraph=True): forward and backward through the custom ops, against eager
try:
    def step(h, w, t, b):
        return softmax_tune.linear_cross_entropy(h, w, t, b, z_loss=1e-3, softcap=6.0) * 2.0 + \
            softmax_tune.linear_cross_entropy(h, w, t, reduction="none").float().square().mean()

    cstep = torch.compile(step, fullgraph=True)
    for dtype in (torch.float32, torch.bfloat16):
        h, w, b = inputs(150, 64, 4000, dtype, True)
        t = labels((150,), 4000)
        hc, wc, bc = h.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()
        he, we, be = h.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()
        lc, le = cstep(hc, wc, t, bc), step(he, we, t, be)
        lc.backward()
        le.backward()
        for got, ref, name in ((lc, le, "loss"), (hc.grad, he.grad, "grad hidden"), (wc.grad, we.grad, "grad weight"),
                               (bc.grad, be.grad, "grad bias")):
            diff = float((got.detach().double() - ref.detach().double()).abs().max()) if got is not None else float("inf")
            scale = float(ref.detach().double().abs().max())
            expect(diff <= 4 * U[dtype] * scale + TINY[dtype], "torch.compile %s %s: %.3g off eager's (max %.3g)"
                   % (dtype, name, diff, scale))
    print("torch.compile(fullgraph=True): forward and backward ok")
except Exception as e:  # noqa: BLE001
    expect(False, "torch.compile(fullgraph=True): %s: %s" % (type(e).__name__, str(e)[:2000]))

# memory: the logits are never whole (bf16 8192 x 32000 logits are 524 MB; chunks of 1024 rows, 66 MB)
try:
    h, w, _ = inputs(8192, 256, 32000, torch.bfloat16)
    t = labels((8192,), 32000)
    hl, wl = h.clone().requires_grad_(), w.clone().requires_grad_()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    gh, gw = torch.autograd.grad(softmax_tune.linear_cross_entropy(hl, wl, t, chunk_rows=1024), [hl, wl])
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base - gh.numel() * 2 - gw.numel() * 2
    print("memory: %.1f MB above the inputs and their gradients (logits %.1f MB, a chunk's %.1f MB)"
          % (extra / 1e6, 8192 * 32000 * 2 / 1e6, 1024 * 32000 * 2 / 1e6))
    expect(extra < 1024 * 32000 * 2 * 1.5 + (8 << 20), "memory: %d bytes above the inputs and gradients" % extra)
    close(gh, *reference(h, w, t, chunk=1024)["gh"], torch.bfloat16, "memory run's grad hidden")
    del h, w, hl, wl, gh, gw
    print("default chunk rows: 4096x128256 bf16 %d, 16384x256000 bf16 %d" % (
        lce.chunk_rows(4096, 128256, torch.bfloat16, 0), lce.chunk_rows(16384, 256000, torch.bfloat16, 0)))
except Exception as e:  # noqa: BLE001
    expect(False, "memory: %s: %s" % (type(e).__name__, str(e)[:500]))
torch.cuda.empty_cache()

# bad labels: NaN loss for the row, no gradient from it, the error from check_labels()
h, w, _ = inputs(64, 32, 1000, torch.float32)
t = torch.randint(0, 1000, (64,), device="cuda")
t[5] = 1000
hl = h.clone().requires_grad_()
rows = softmax_tune.linear_cross_entropy(hl, w, t, reduction="none", chunk_rows=16)
rows.sum().backward()
expect(torch.isnan(rows[5]) and not torch.isnan(rows[torch.arange(64, device="cuda") != 5]).any(),
       "bad label: not a NaN loss for its row alone")
expect(not hl.grad[5].any(), "bad label: its row's hidden gradient is not zero")
raises(softmax_tune.check_labels, ValueError, "check_labels after a bad label", "outside [0, V)")
softmax_tune.check_labels()

# torch's own: one warning per process, torch's result
lce._warned.clear()
h, w, _ = inputs(16, 8, 50, torch.float32)
t = torch.randint(0, 50, (16,), device="cuda")
with warnings.catch_warnings(record=True) as got:
    warnings.simplefilter("always")
    hc, wc, tc = h.cpu(), w.cpu(), t.cpu()
    expect(torch.allclose(softmax_tune.linear_cross_entropy(hc, wc, tc), F.cross_entropy(hc @ wc.t(), tc)),
           "CPU: not torch's result")
    hd, wd = h.double(), w.double()
    expect(torch.allclose(softmax_tune.linear_cross_entropy(hd, wd, t), F.cross_entropy(hd @ wd.t(), t)),
           "float64: not torch's result")
    cw = torch.rand(50, device="cuda") + 0.5
    expect(torch.allclose(softmax_tune.linear_cross_entropy(h, w, t, class_weight=cw, label_smoothing=0.1),
                          F.cross_entropy(h @ w.t(), t, cw, label_smoothing=0.1)), "class_weight + smoothing")
mine = [x for x in got if "softmax_tune.linear_cross_entropy" in str(x.message)]
expect(len(mine) == 1, "fallback warnings: %d, want 1: %s" % (len(mine), [str(x.message) for x in mine]))

# bad input: one clear error each
hb, wb, _ = inputs(8, 16, 100, torch.float32)
tb = torch.randint(0, 100, (8,), device="cuda")
L = softmax_tune.linear_cross_entropy
raises(lambda: L(hb[:0], wb, tb[:0]), ValueError, "N=0", "no rows")
raises(lambda: L(hb, wb[:1], tb * 0), ValueError, "V=1", "at least 2 classes")
raises(lambda: L(hb, wb[:, :8], tb), ValueError, "weight of another D", "weight [V, D]")
raises(lambda: L(hb, wb.half(), tb), ValueError, "weight of another dtype", "weight is")
raises(lambda: L(hb, wb, tb[:7]), ValueError, "mismatched target", "does not match")
raises(lambda: L(hb, wb, tb.float()), ValueError, "float labels", "int32 or int64")
raises(lambda: L(hb, wb, tb.cpu()), ValueError, "target on another device", "target is on")
raises(lambda: L(hb, wb, tb, torch.ones(99, device="cuda")), ValueError, "bias of 99", "bias must be")
raises(lambda: L(hb, wb, tb, class_weight=torch.ones(99, device="cuda")), ValueError, "class_weight of 99",
       "class_weight must be")
raises(lambda: L(hb, wb, tb, reduction="avg"), ValueError, "reduction avg", "reduction")
raises(lambda: L(hb, wb, tb, label_smoothing=1.5), ValueError, "smoothing 1.5", "label_smoothing")
raises(lambda: L(hb, wb, tb, softcap=0.0), ValueError, "softcap 0", "softcap")
raises(lambda: L(hb, wb, tb, chunk_rows=0), ValueError, "chunk_rows 0", "chunk_rows")

# the custom ops: schema and fake
try:
    hh, ww, bb = inputs(33, 16, 700, torch.float32, True)
    tt = torch.randint(0, 700, (33,), device="cuda")
    for red, need in ((2, True), (1, False), (0, False)):
        torch.library.opcheck(torch.ops.softmax_tune.linear_cross_entropy.default,
                              (hh, ww, tt, bb, None, -100, red, 0.1, 1e-3, 0.0, 16, need, need, need, False),
                              test_utils=("test_schema", "test_faketensor"))
    torch.library.opcheck(torch.ops.softmax_tune.linear_cross_entropy_backward.default,
                          (torch.randn(33, device="cuda"), hh, ww, tt, bb, None, -100, 0.0, 1e-3, 0.0, 16, True, True,
                           True), test_utils=("test_schema", "test_faketensor"))
    print("opcheck softmax_tune::linear_cross_entropy(_backward): schema and fake ok")
except Exception as e:  # noqa: BLE001
    expect(False, "opcheck softmax_tune::linear_cross_entropy: %s" % e)

finish("test_python_lce")
