#!/usr/bin/env python3
"""test_python_ce.py — softmax_tune.cross_entropy (python/softmax_tune/cross_entropy.py) against
float64 torch on the same (upcast) inputs, loss and input.grad: float32, float16 and bfloat16;
int32 and int64 labels; every option (ignore_index, label_smoothing, z_loss, softcap, weight) and
combinations the kernel takes; reductions none / sum / mean with a non-trivial grad_output (a row
each for none); [B, T, V] inputs; a row-strided input; nn.CrossEntropyLoss; the loss-only path;
torch.compile(fullgraph=True); a CUDA graph capture and replay; inplace=True (memory saved,
gradient right) and its refusals; bad labels (NaN loss, zero gradient, the flag raised by
check_labels() and lazily by the next call); the torch fallbacks (one warning); bad inputs, one
clear error each; the custom op's schema and fake (opcheck); under torch.autocast a float32 loss (as
torch's) with the gradient in the logits' dtype, eager, loss-only and compiled; the whole eager call in C++
(cross_entropy_call) against the Python path, bit for bit, and what it leaves to it. Exit 77 without torch or a GPU."""

import importlib
import warnings

from pyharness import expect, finish, raises, torch
import torch.nn.functional as F  # noqa: E402
import softmax_tune  # noqa: E402

ce = importlib.import_module("softmax_tune.cross_entropy")
REL = {torch.float32: 1e-5, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}   # an ulp of the dtype or two
TINY = {torch.float32: 1e-30, torch.float16: 2.0 ** -24, torch.bfloat16: 1e-30}     # its subnormal spacing
torch.manual_seed(0)


def reference(x, t, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0, z_loss=0.0, softcap=None,
              go=None):
    """float64 loss and gradient of x (torch autograd on x upcast): the kernel's math."""
    z = x.detach().double().requires_grad_()
    v = z.shape[-1]
    zz = softcap * torch.tanh(z / softcap) if softcap else z
    z2, t1 = zz.reshape(-1, v), t.reshape(-1).long()
    w = weight.double() if weight is not None else None
    rows = F.cross_entropy(z2, t1, w, ignore_index=ignore_index, reduction="none", label_smoothing=label_smoothing)
    valid = t1 != ignore_index
    rows = rows + z_loss * torch.logsumexp(z2, -1) ** 2 * valid
    if reduction == "none":
        loss = rows.reshape(t.shape)
    elif reduction == "sum":
        loss = rows.sum()
    else:
        loss = rows.sum() / ((w[t1.clamp(0, v - 1)] * valid).sum() if w is not None else valid.sum())
    loss.backward(go.double() if go is not None else torch.ones_like(loss))
    return loss.detach(), z.grad


def close(got, want, dtype, what):
    """got (dtype) within an ulp or two of want (float64), plus float32 rounding of the row's scale."""
    if got is None or tuple(got.shape) != tuple(want.shape):
        return expect(False, "%s: shape %s, want %s" % (what, None if got is None else tuple(got.shape),
                                                         tuple(want.shape)))
    g, w = got.detach().double(), want.to(got.device)
    scale = w.abs().amax(dim=-1, keepdim=True) if w.dim() > 1 else w.abs().max() if w.numel() else w.abs()
    bound = REL[dtype] * w.abs() + 1e-5 * scale + TINY[dtype] + (1e-5 if w.dim() < 2 else 0.0)
    err = (g - w).abs()
    bad = ~(err <= bound)
    return expect(not bad.any(), "%s: %d of %d off, worst %.3g against bound %.3g" % (
        what, int(bad.sum()), w.numel(), float((err - bound).max()), float(bound.flatten()[int((err - bound).argmax())])))


def labels(shape, v, dtype, ignore_index=-100, ignored=0.2):
    t = torch.randint(0, v, shape, device="cuda")
    t[torch.rand(shape, device="cuda") < ignored] = ignore_index
    return t.to(dtype)


def run_case(x, t, what, go=None, amp=False, **kw):
    """softmax_tune's loss and x.grad against the reference (x a leaf, fresh grad); amp: under bf16
    autocast, where the loss is float32 (as torch's) and the gradient stays in x's dtype."""
    dtype = torch.float32 if amp else x.dtype   # the loss's
    go = go.to(dtype) if go is not None else None   # as backward gets it: the loss's dtype
    xl = x.detach().clone().requires_grad_()
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
        loss = softmax_tune.cross_entropy(xl, t, **kw)
    loss.backward(go)
    want_loss, want_grad = reference(x, t, go=go, **kw)
    ok = expect(loss.dtype == dtype and xl.grad.dtype == x.dtype, "%s: loss %s, grad %s" % (what, loss.dtype,
                                                                                           xl.grad.dtype))
    ok = close(loss, want_loss, dtype, what + " loss") and ok
    return close(xl.grad, want_grad, x.dtype, what + " grad") and ok


OPTIONS = [{}, {"label_smoothing": 0.1}, {"z_loss": 1e-3}, {"softcap": 5.0}, {"weight": True}, {"ignore_index": 3},
           {"label_smoothing": 0.2, "z_loss": 1e-2, "softcap": 4.0}, {"weight": True, "z_loss": 1e-3, "softcap": 6.0}]

# every option and reduction, each dtype; int32 and int64 labels alternately
n, v = 96, 5000
k = 0
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    x = (torch.randn(n, v, device="cuda") * 3).to(dtype)
    for opts in OPTIONS:
        for reduction in ("none", "sum", "mean"):
            kw = dict(opts, reduction=reduction)
            ii = kw.get("ignore_index", -100)
            if kw.pop("weight", False):
                kw["weight"] = torch.rand(v, device="cuda") + 0.5
            ldtype = (torch.int32, torch.int64)[k % 2]
            k += 1
            t = labels((n,), v, ldtype, ii)
            go = torch.randn(n, device="cuda") if reduction == "none" else torch.tensor(0.37, device="cuda")
            what = "%s %s %s %s" % (dtype, ldtype, reduction, opts)
            run_case(x, t, what, go, **kw)
            if reduction == "mean":   # the default grad_output 1 (the scaling skipped on the device)
                run_case(x, t, what + " go=1", **kw)

# under torch.autocast: the loss float32 (F.cross_entropy is on its float32 list) to float32's
# tolerance, from the logits as they are; the gradient in their dtype; the loss-only kernel too
for dtype in (torch.float16, torch.bfloat16):
    x = (torch.randn(n, v, device="cuda") * 3).to(dtype)
    for reduction in ("none", "sum", "mean"):
        t = labels((n,), v, torch.int64)
        go = torch.randn(n, device="cuda") if reduction == "none" else torch.tensor(0.37, device="cuda")
        what = "autocast %s %s" % (dtype, reduction)
        run_case(x, t, what, go, amp=True, reduction=reduction, z_loss=1e-3)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            lo = softmax_tune.cross_entropy(x, t, reduction=reduction)
        expect(lo.dtype == torch.float32, "%s loss only: %s" % (what, lo.dtype))
        close(lo, reference(x, t, reduction=reduction)[0], torch.float32, what + " loss only")

# [B, T, V], and a row-strided input (a slice of wider rows): its gradient lands in the slice
for dtype in (torch.float32, torch.bfloat16):
    x = (torch.randn(4, 24, 3000, device="cuda") * 2).to(dtype)
    t = labels((4, 24), 3000, torch.int64)
    for reduction in ("none", "mean"):
        go = torch.randn(4, 24, device="cuda") if reduction == "none" else None
        run_case(x, t, "[B,T,V] %s %s" % (dtype, reduction), go, reduction=reduction, z_loss=1e-3)
    wide = (torch.randn(96, 3008, device="cuda") * 2).to(dtype).requires_grad_()
    t = labels((96,), 3000, torch.int32)
    loss = softmax_tune.cross_entropy(wide[:, :3000], t, label_smoothing=0.1)
    loss.backward()
    want_loss, want_grad = reference(wide[:, :3000], t, label_smoothing=0.1)
    close(loss, want_loss, dtype, "row-strided %s loss" % dtype)
    close(wide.grad[:, :3000], want_grad, dtype, "row-strided %s grad" % dtype)
    expect(not wide.grad[:, 3000:].any(), "row-strided %s: gradient outside the slice" % dtype)

# the module, and the loss-only path (no gradient wanted)
x = (torch.randn(64, 4000, device="cuda") * 3).to(torch.bfloat16)
t = labels((64,), 4000, torch.int64)
w = torch.rand(4000, device="cuda") + 0.5
m = softmax_tune.nn.CrossEntropyLoss(weight=w, reduction="sum", z_loss=1e-3, softcap=8.0)
print(repr(m))
close(m(x, t), reference(x, t, w, reduction="sum", z_loss=1e-3, softcap=8.0)[0], x.dtype, "nn.CrossEntropyLoss")
want_none = reference(x, t, reduction="none")[0]   # outside no_grad: the reference takes a gradient
with torch.no_grad():
    xg = x.clone().requires_grad_()
    close(softmax_tune.cross_entropy(xg, t, reduction="none"), want_none, x.dtype, "loss only (no_grad)")
close(softmax_tune.cross_entropy(x, t), reference(x, t)[0], x.dtype, "loss only (no requires_grad)")
print("config:", softmax_tune.cross_entropy.__module__, ce.config(x), "|", ce.config(x, grad=False))

# a second backward through the same graph is refused (the kept gradient is consumed)
xg = x.clone().requires_grad_()
loss = softmax_tune.cross_entropy(xg, t)
loss.backward(retain_graph=True)
raises(lambda: loss.backward(), RuntimeError, "a second backward", "second time")

# torch.compile(fullgraph=True): forward and backward through the custom ops
try:
    def step(x, t, w):
        return softmax_tune.cross_entropy(x, t, w, z_loss=1e-3, softcap=6.0) * 2.0 + \
            softmax_tune.cross_entropy(x, t, reduction="none").float().square().mean()

    cstep = torch.compile(step, fullgraph=True)
    for dtype in (torch.float32, torch.bfloat16):
        x = (torch.randn(64, 4000, device="cuda") * 3).to(dtype)
        t = labels((64,), 4000, torch.int64)
        xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
        lc, le = cstep(xc, t, w), step(xe, t, w)
        lc.backward()
        le.backward()
        close(lc, le.double(), dtype, "torch.compile %s loss vs eager" % dtype)
        close(xc.grad, xe.grad.double(), dtype, "torch.compile %s grad vs eager" % dtype)
    # under autocast: the custom op's fake and its result agree on a float32 loss
    camp = torch.compile(lambda x, t: (softmax_tune.cross_entropy(x, t),
                                       softmax_tune.cross_entropy(x, t, reduction="none")), fullgraph=True)
    xc = x.clone().requires_grad_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        lm, ln = camp(xc, t)
    lm.backward()
    expect(lm.dtype == ln.dtype == torch.float32 and xc.grad.dtype == x.dtype,
           "torch.compile under autocast: loss %s and %s, grad %s" % (lm.dtype, ln.dtype, xc.grad.dtype))
    want_loss, want_grad = reference(x, t)
    close(lm, want_loss, torch.float32, "torch.compile under autocast loss")
    close(ln, reference(x, t, reduction="none")[0], torch.float32, "torch.compile under autocast rows")
    close(xc.grad, want_grad, x.dtype, "torch.compile under autocast grad")
    print("torch.compile(fullgraph=True): forward and backward ok")
except Exception as e:  # noqa: BLE001
    expect(False, "torch.compile(fullgraph=True): %s: %s" % (type(e).__name__, str(e)[:2000]))

# a CUDA graph of forward and backward, replayed on new data
try:
    x = (torch.randn(128, 6000, device="cuda") * 3).to(torch.bfloat16).requires_grad_()
    t = labels((128,), 6000, torch.int64)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.grad = None
            softmax_tune.cross_entropy(x, t, z_loss=1e-3).backward()
    torch.cuda.current_stream().wait_stream(s)
    x.grad = None
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):   # the stream warmed up: the library's per-stream scratch exists
        static_loss = softmax_tune.cross_entropy(x, t, z_loss=1e-3)
        static_loss.backward()
    new_x, new_t = (torch.randn(128, 6000, device="cuda") * 3).to(torch.bfloat16), labels((128,), 6000, torch.int64)
    with torch.no_grad():
        x.copy_(new_x)
    t.copy_(new_t)
    g.replay()
    torch.cuda.synchronize()
    want_loss, want_grad = reference(new_x, new_t, z_loss=1e-3)
    close(static_loss, want_loss, torch.bfloat16, "CUDA graph replay loss")
    close(x.grad, want_grad, torch.bfloat16, "CUDA graph replay grad")
    print("CUDA graph: captured and replayed")
except Exception as e:  # noqa: BLE001
    expect(False, "CUDA graph: %s: %s" % (type(e).__name__, e))


# inplace=True: the gradient in the logits' memory, right; refused where a node saved the logits
def head(inplace, n=512, v=32000, dtype=torch.bfloat16, seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    h = torch.randn(n, 64, device="cuda", dtype=dtype, generator=g).requires_grad_()
    wt = (torch.randn(64, v, device="cuda", dtype=dtype, generator=g) * 0.3)
    tt = torch.randint(0, v, (n,), device="cuda", generator=g)
    logits = h @ wt
    want_loss, _ = reference(logits, tt)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    loss = softmax_tune.cross_entropy(logits, tt, inplace=inplace)
    extra = torch.cuda.max_memory_allocated() - base
    loss.backward()
    return extra, loss, want_loss, h.grad, logits.numel() * 2


extra_out, loss_out, want, gh_out, size = head(False)
extra_in, loss_in, want, gh_in, _ = head(True)
print("inplace: extra memory %.1f MB (inplace=False: %.1f MB; the logits %.1f MB)" % (extra_in / 1e6, extra_out / 1e6,
                                                                                       size / 1e6))
expect(extra_out >= size and extra_in < size / 8, "inplace=True saves no memory: %d vs %d" % (extra_in, extra_out))
close(loss_in, want, torch.bfloat16, "inplace loss")
close(gh_in, gh_out.double(), torch.bfloat16, "inplace=True: h.grad against inplace=False's")
hh = torch.randn(64, 500, device="cuda", requires_grad=True)
tt = torch.randint(0, 500, (64,), device="cuda")


def saved_elsewhere():
    logits = hh * 2.0
    aux = (logits ** 2).mean()   # PowBackward keeps logits
    (softmax_tune.cross_entropy(logits, tt, inplace=True) + aux).backward()


raises(saved_elsewhere, RuntimeError, "inplace=True with logits saved by another node", "inplace")
raises(lambda: softmax_tune.cross_entropy(hh, tt, inplace=True), RuntimeError, "inplace=True on a leaf", "leaf")
raises(lambda: softmax_tune.cross_entropy((hh * 2.0)[:, :400], tt, inplace=True), RuntimeError,
       "inplace=True on a slice", "view")
hh.grad = None
lv = (hh * 2.0).view(8, 8, 500)
loss = softmax_tune.cross_entropy(lv, tt.view(8, 8), inplace=True)   # a whole view: the version counter guards
loss.backward()
close(hh.grad, reference(hh * 2.0, tt)[1] * 2.0, torch.float32, "inplace=True through a whole view")

# bad labels: NaN loss, zero gradient for the row, an error from check_labels() and the next call
x = torch.randn(32, 1000, device="cuda", requires_grad=True)
t = torch.randint(0, 1000, (32,), device="cuda")
t[5] = 1000
rows = softmax_tune.cross_entropy(x, t, reduction="none")
rows.sum().backward()
expect(torch.isnan(rows[5]) and not torch.isnan(rows[torch.arange(32, device="cuda") != 5]).any(),
       "bad label: not a NaN loss for its row alone")
expect(not x.grad[5].any(), "bad label: its row's gradient is not zero")
raises(softmax_tune.check_labels, ValueError, "check_labels after a bad label", "outside [0, V)")
softmax_tune.check_labels()   # cleared
softmax_tune.cross_entropy(x.detach(), t)
torch.cuda.synchronize()
raises(lambda: softmax_tune.cross_entropy(x.detach(), t.clamp(0, 999)), ValueError, "the call after a bad label",
       "outside [0, V)")
softmax_tune.cross_entropy(x.detach(), t.clamp(0, 999))
torch.cuda.synchronize()
softmax_tune.check_labels()

# torch's own: one warning per process, torch's result
ce._warned.clear()
x = torch.randn(16, 50, dtype=torch.float64)
t = torch.randint(0, 50, (16,))
with warnings.catch_warnings(record=True) as got:
    warnings.simplefilter("always")
    expect(torch.equal(softmax_tune.cross_entropy(x, t), F.cross_entropy(x, t)), "CPU: not torch's result")
    xd = x.cuda()
    expect(torch.equal(softmax_tune.cross_entropy(xd, t.cuda()), F.cross_entropy(xd, t.cuda())), "float64: not torch's")
    w = torch.rand(50, device="cuda", dtype=torch.float64)
    expect(torch.equal(softmax_tune.cross_entropy(xd.float(), t.cuda(), w.float(), label_smoothing=0.1),
                       F.cross_entropy(xd.float(), t.cuda(), w.float(), label_smoothing=0.1)), "weight+smoothing")
    x3, t3 = torch.randn(4, 50, 7, device="cuda"), torch.randint(0, 50, (4, 7), device="cuda")
    # torch's [N, C, d1] kernel (nll_loss2d) adds its blocks' sums with atomics: two calls of it may
    # differ in the last bits, beside another process's kernels (a wrong path differs by far more)
    expect(torch.allclose(softmax_tune.cross_entropy(x3, t3), F.cross_entropy(x3, t3), rtol=1e-6, atol=0),
           "[N, C, d1]: not torch's")
    p = torch.softmax(torch.randn(16, 50, device="cuda"), -1)
    xp = x3[:, :, 0].contiguous()
    expect(torch.equal(softmax_tune.cross_entropy(xp, p[:4]), F.cross_entropy(xp, p[:4])), "class probabilities")
    for red in ("none", "sum", "mean"):   # softcap and z-loss in torch
        close(softmax_tune.cross_entropy(x.view(2, 8, 50), t.view(2, 8), reduction=red, z_loss=1e-2, softcap=3.0),
              reference(x.view(2, 8, 50), t.view(2, 8), reduction=red, z_loss=1e-2, softcap=3.0)[0], torch.float32,
              "CPU fallback with z_loss and softcap, %s" % red)
mine = [w for w in got if "softmax_tune.cross_entropy" in str(w.message)]
expect(len(mine) == 1, "fallback warnings: %d, want 1: %s" % (len(mine), [str(w.message) for w in mine]))

# bad input: one clear error each
xb = torch.randn(8, 100, device="cuda")
tb = torch.randint(0, 100, (8,), device="cuda")
raises(lambda: softmax_tune.cross_entropy(xb[:0], tb[:0]), ValueError, "N=0", "no rows")
raises(lambda: softmax_tune.cross_entropy(xb[:, :1], tb * 0), ValueError, "V=1", "at least 2 classes")
raises(lambda: softmax_tune.cross_entropy(xb, tb[:7]), ValueError, "mismatched shapes", "does not match")
raises(lambda: softmax_tune.cross_entropy(xb, tb.cpu()), ValueError, "target on another device", "target is on")
raises(lambda: softmax_tune.cross_entropy(xb, tb, torch.ones(100)), ValueError, "weight on the CPU", "weight is on")
raises(lambda: softmax_tune.cross_entropy(xb.long(), tb), ValueError, "integer logits", "floating point")
raises(lambda: softmax_tune.cross_entropy(xb, tb, torch.ones(99, device="cuda")), ValueError, "weight of 99",
       "weight must be")
raises(lambda: softmax_tune.cross_entropy(xb, tb, reduction="avg"), ValueError, "reduction avg", "reduction")
raises(lambda: softmax_tune.cross_entropy(xb, tb, label_smoothing=1.5), ValueError, "smoothing 1.5", "label_smoothing")
raises(lambda: softmax_tune.cross_entropy(xb, tb, softcap=0.0), ValueError, "softcap 0", "softcap")
raises(lambda: softmax_tune.cross_entropy(xb, tb.float()), Exception, "float labels of [N]")   # torch's error

# the C++ call (csrc/ops.cpp cross_entropy_forward), where it is built: it serves, and gives the
# ctypes path's results bit for bit (the same kernels; the reduction in a fixed order)
if softmax_tune.cpp_ops and ce._cpp is not None:
    xc = (torch.randn(40, 3000, device="cuda") * 2).to(torch.bfloat16)
    tc = labels((40,), 3000, torch.int32)
    wc = torch.rand(3000, device="cuda") + 0.5
    fc = ce._flag(torch.cuda.current_device())
    for red, want, f32 in [(r, w, f) for r in ("none", "sum", "mean") for w in (False, True) for f in (False, True)]:
        what = "the C++ call, %s, grad %s, float32 loss %s" % (red, want, f32)
        got = ce._cpp(xc, tc, wc, -100, ce.REDUCTIONS[red], 0.0, 1e-3, 5.0, want, False, fc.tensor, f32)
        ref = ce._run_ctypes(xc, tc, wc, -100, red, 0.0, 1e-3, 5.0, want, False, torch.cuda.current_device(), fc,
                             f32)
        if expect(got[0] is not None, "%s: did not serve" % what):
            expect(got[0].dtype == (torch.float32 if f32 else xc.dtype) and torch.equal(got[0], ref[0]),
                   "%s: not the ctypes path's loss" % what)
            expect((got[1] is not None) == want and (not want or torch.equal(got[1], ref[1])),
                   "%s: not the ctypes path's gradient" % what)
    print("the C++ cross-entropy call: served, the ctypes path's results")


# the whole eager call in C++ (csrc/ops.cpp cross_entropy_call, cross_entropy.py _fast), where it is
# built: it serves the common calls, with the Python path's results bit for bit (loss and gradient,
# loss-only and with a gradient, [B, T, V], a row stride, weights, every option, autocast), and
# leaves the rest to the Python path
if softmax_tune.cpp_ops and ce._cpp_call is not None:
    def python_path(fn):
        saved, ce._cpp_call = ce._cpp_call, None
        try:
            return fn()
        finally:
            ce._cpp_call = saved

    fc = ce._flag(torch.cuda.current_device()).tensor
    xw = (torch.randn(2, 24, 3008, device="cuda") * 2).to(torch.bfloat16)
    ww = torch.rand(3000, device="cuda", dtype=torch.float16) + 0.5
    cases = [({}, xw[..., :3000], False), ({"reduction": "none", "z_loss": 1e-3}, xw[..., :3000], False),
             ({"reduction": "sum", "softcap": 5.0, "label_smoothing": 0.1}, xw[..., :3000].reshape(48, 3000), False),
             ({"weight": ww, "ignore_index": 3}, xw[..., :3000].contiguous(), False),
             ({"z_loss": 1e-3}, xw[..., :3000], True)]
    for kw, xv, amp in cases:
        for grad in (False, True):
            what = "the whole C++ call, %s, shape %s, grad %s, autocast %s" % (
                {k: (v if k != "weight" else "f16") for k, v in kw.items()}, tuple(xv.shape), grad, amp)
            tv = labels((2, 24), 3000, torch.int32, kw.get("ignore_index", -100))   # -100 a bad label under 3
            tv = tv if xv.dim() == 3 else tv.reshape(-1)
            a, b = (xv.detach().clone().requires_grad_() for _ in range(2)) if grad else (xv, xv)   # the view itself
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                served = ce._cpp_call(a, tv, kw.get("weight"), kw.get("ignore_index", -100),
                                      kw.get("reduction", "mean"), kw.get("label_smoothing", 0.0),
                                      kw.get("z_loss", 0.0), kw.get("softcap"), False, fc)
                lb = python_path(lambda: softmax_tune.cross_entropy(b, tv, **kw))
            if not expect(served is not None, "%s: did not serve" % what):
                continue
            same = served.dtype == lb.dtype and served.shape == lb.shape and torch.equal(served.detach(), lb.detach())
            if grad:
                go = torch.rand_like(served) + 0.5
                served.backward(go), lb.backward(go)
                same = same and torch.equal(a.grad, b.grad)
            expect(same, "%s: not the Python path's loss%s" % (what, " and gradient" if grad else ""))
    xd = torch.randn(8, 100, device="cuda")
    td = torch.randint(0, 100, (8,), device="cuda")
    left = [("float64 logits", (xd.double(), td, None, -100, "mean", 0.0, 0.0, None, False, fc)),
            ("CPU logits", (xd.cpu(), td.cpu(), None, -100, "mean", 0.0, 0.0, None, False, fc)),
            ("reduction avg", (xd, td, None, -100, "avg", 0.0, 0.0, None, False, fc)),
            ("label_smoothing 1.5", (xd, td, None, -100, "mean", 1.5, 0.0, None, False, fc)),
            ("softcap 0", (xd, td, None, -100, "mean", 0.0, 0.0, 0.0, False, fc)),
            ("weight with label_smoothing",
             (xd, td, torch.ones(100, device="cuda"), -100, "mean", 0.1, 0.0, None, False, fc)),
            ("weight of 99", (xd, td, torch.ones(99, device="cuda"), -100, "mean", 0.0, 0.0, None, False, fc)),
            ("mismatched labels", (xd, td[:7], None, -100, "mean", 0.0, 0.0, None, False, fc)),
            ("float labels", (xd, td.float(), None, -100, "mean", 0.0, 0.0, None, False, fc)),
            ("V=1", (xd[:, :1], td * 0, None, -100, "mean", 0.0, 0.0, None, False, fc)),
            ("no rows", (xd[:0], td[:0], None, -100, "mean", 0.0, 0.0, None, False, fc)),
            ("inplace with a gradient",
             (xd.clone().requires_grad_(), td, None, -100, "mean", 0.0, 0.0, None, True, fc))]
    for what, args in left:
        expect(ce._cpp_call(*args) is None, "the whole C++ call took %s (Python's path must)" % what)
    fc[0] = 1   # a bad label flagged by an earlier call: Python's path raises it
    expect(ce._cpp_call(xd, td, None, -100, "mean", 0.0, 0.0, None, False, fc) is None,
           "the whole C++ call ran past a flagged bad label")
    raises(lambda: softmax_tune.cross_entropy(xd, td), ValueError, "a flagged bad label", "outside [0, V)")
    expect(int(fc[0]) == 0, "the flag not cleared by the raise")
    print("the whole C++ cross-entropy call: served, the Python path's results bit for bit; the rest left to it")



def predict_one():
    """The stream's predicted grad_output back to 1: a C++ training call's backward under 1."""
    p = torch.randn(4, 3000, device="cuda", requires_grad=True)
    softmax_tune.cross_entropy(p, torch.zeros(4, dtype=torch.int64, device="cuda")).backward()


# the training call with its autograd in C++ (cross_entropy_train; st_cross_entropy_scale in the
# backward): it serves eager calls with a gradient, and gives Python's autograd's gradients bit for
# bit, under grad_output 1, a scalar and one a row, where the grad_output predicted is 1
if softmax_tune.cpp_ops and ce._cpp_train is not None:
    xt = (torch.randn(2, 20, 3000, device="cuda") * 2).to(torch.bfloat16)
    tt = labels((2, 20), 3000, torch.int64)
    for red, go in (("mean", None), ("sum", torch.tensor(2.5, device="cuda", dtype=torch.bfloat16)),
                    ("none", torch.rand(2, 20, device="cuda").to(torch.bfloat16) + 0.5)):
        what = "the C++ autograd, %s, grad_output %s" % (red, "1" if go is None else tuple(go.shape))
        predict_one()
        a = xt.clone().requires_grad_()
        la = softmax_tune.cross_entropy(a, tt, reduction=red, z_loss=1e-3)
        fn = la.grad_fn if red != "none" else la.grad_fn.next_functions[0][0]   # none: the reshape's view first
        expect("CrossEntropy" in fn.name(), "%s: did not serve (grad_fn %s)" % (what, fn.name()))
        la.backward(go)
        b = xt.clone().requires_grad_()
        lb = ce._Eager.apply(b, b.detach().reshape(-1, 3000), tt.reshape(-1), None, -100, red, 0.0, 1e-3, None, False,
                             False)
        lb = lb.reshape(tt.shape) if red == "none" else lb
        lb.backward(go)
        expect(torch.equal(la.detach(), lb.detach()) and torch.equal(a.grad, b.grad),
               "%s: not Python's autograd's loss and gradient" % what)
    predict_one()
    with torch.autocast("cuda", dtype=torch.bfloat16):   # a float32 loss through the C++ autograd too
        a = xt.clone().requires_grad_()
        la = softmax_tune.cross_entropy(a, tt, z_loss=1e-3)
    expect("CrossEntropy" in la.grad_fn.name() and la.dtype == torch.float32,
           "the C++ autograd under autocast: not it, or not a float32 loss (%s, %s)" % (la.grad_fn.name(), la.dtype))
    la.backward()
    b = xt.clone().requires_grad_()
    lb = ce._Eager.apply(b, b.detach().reshape(-1, 3000), tt.reshape(-1), None, -100, "mean", 0.0, 1e-3, None, False,
                         True)
    lb.backward()
    expect(torch.equal(la.detach(), lb.detach()) and torch.equal(a.grad, b.grad),
           "the C++ autograd under autocast: not Python's autograd's loss and gradient")
    print("the C++ cross-entropy autograd: served, Python's gradients bit for bit (under autocast too)")

    # the grad_output predicted (st_ce_options.grad_scale): steps whose scale holds, changes, leaves
    # the predicted range, is 0 or negative, each gradient against float64; two losses whose forwards
    # and backwards interleave (each backward's scale is the other's prediction); float16 (no
    # prediction) and reduction none alike
    steps = [0.125, 0.125, 65536.0, 65536.0, 0.37, 0.37, 1.0, 2.0 ** 30, 2.0 ** -30, 0.0, -0.5, 0.125]
    for dtype in (torch.bfloat16, torch.float32, torch.float16):
        xs = (torch.randn(64, 3000, device="cuda") * 3).to(dtype)
        ts = labels((64,), 3000, torch.int64)
        for red in ("mean", "sum"):
            for k, g in enumerate(steps):
                go = torch.tensor(g if dtype != torch.float16 or abs(g) < 60000 else 4096.0, device="cuda")
                run_case(xs, ts, "predicted grad_output, %s %s step %d (%g)" % (dtype, red, k, g), go, reduction=red,
                         z_loss=1e-3 * (k % 2))
        gs = (0.25, 3.0)
        for k in range(3):
            xa, xb = (xs.detach().clone().requires_grad_() for _ in range(2))
            la = softmax_tune.cross_entropy(xa, ts)
            lb = softmax_tune.cross_entropy(xb, ts, reduction="sum")
            lb.backward(torch.tensor(gs[1], device="cuda", dtype=lb.dtype))
            la.backward(torch.tensor(gs[0], device="cuda", dtype=la.dtype))
            close(xa.grad, reference(xs, ts, go=torch.tensor(gs[0], device="cuda"))[1], dtype,
                  "interleaved losses %s round %d: the first's gradient" % (dtype, k))
            close(xb.grad, reference(xs, ts, go=torch.tensor(gs[1], device="cuda"), reduction="sum")[1], dtype,
                  "interleaved losses %s round %d: the second's gradient" % (dtype, k))
    print("the predicted grad_output: every step's gradient within the rule, interleaved losses too")

# the custom ops: schema and fake
try:
    for need, f32 in ((False, False), (True, False), (True, True)):   # f32: bf16 logits, a float32 loss
        xo = torch.randn(33, 700, device="cuda", dtype=torch.bfloat16 if f32 else torch.float32)
        torch.library.opcheck(torch.ops.softmax_tune.cross_entropy.default,
                              (xo, torch.randint(0, 700, (33,), device="cuda"), None, -100, 2, 0.1, 1e-3, 0.0, need,
                               f32), test_utils=("test_schema", "test_faketensor"))
    print("opcheck softmax_tune::cross_entropy: schema and fake ok")
except Exception as e:  # noqa: BLE001
    expect(False, "opcheck softmax_tune::cross_entropy: %s" % e)

finish("test_python_ce")
