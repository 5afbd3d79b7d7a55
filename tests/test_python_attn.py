#!/usr/bin/env python3
"""test_python_attn.py — softmax_tune.attention_softmax (python/softmax_tune/attention.py) against
float64 torch on the same (upcast) scores, y and scores.grad: float32, float16 and bfloat16; every
mask kind (none, causal, window, causal+window, key padding, key padding with the others), ALiBi,
softcap, Q != K with the default and a given offset, fully masked rows (zeros, y and gradient);
[H, Q, K] scores; a non-contiguous input; torch.compile(fullgraph=True) forward and backward; a CUDA
graph capture and replay; the refusals (one line each); the torch fallbacks (CPU, float64, a mask
tensor: one warning); the custom ops' schema and fake (opcheck); an eager attention written with it
against F.scaled_dot_product_attention with the same mask (causal; key padding, alone or with
causal, as a bool attn_mask) in float32 and bfloat16; and, with the C++ ops (else a SKIP line), that
their calls serve (one each way an eager call, no ctypes) and give the ctypes path's y, dx and
errors bit for bit. It says its host path first; SOFTMAX_TUNE_NO_CPP=1 tests the ctypes path. Exit
77 without torch or a GPU."""

import importlib
import math
import os
import warnings

from pyharness import expect, finish, host_path, raises, torch
import torch.nn.functional as F  # noqa: E402
import softmax_tune  # noqa: E402

attn = importlib.import_module("softmax_tune.attention")
_lib = importlib.import_module("softmax_tune._lib")
host_path(softmax_tune)
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
REL = {torch.float32: 2e-6, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}   # half an ulp of the dtype
TINY = {torch.float32: 1e-37, torch.float16: 2.0 ** -24, torch.bfloat16: 1e-37}     # its subnormal spacing
torch.manual_seed(0)


def visible(B, Q, K, causal, window, key_lengths, offset):
    """[B, 1, Q, K] bool: keys [lo, hi) of each row, as docs/attention-softmax.md's table says."""
    d = torch.arange(Q, device="cuda")[:, None] + (K - Q if offset is None else offset)
    lo = (d - window) if window is not None else torch.zeros_like(d)
    hi = (d + 1) if causal else torch.full_like(d, K)
    if key_lengths is not None:
        hi = torch.minimum(hi[None], key_lengths.long().reshape(-1, 1, 1))
    else:
        hi = hi[None].expand(B, Q, 1)
    k = torch.arange(K, device="cuda")
    return ((k >= lo.clamp(0, K)) & (k < hi.clamp(0, K)))[:, None]


def reference(x, dy, scale, softcap, causal, window, key_lengths, slopes, offset, add=None):
    """float64 y and dx = d(y . dy)/dx by torch autograd on x upcast; zeros where a row sees nothing.
    add: a float64 tensor added after the softcap (a bias, a mask as 0 / -inf), -inf masking."""
    B, H, Q, K = x.shape
    z0 = x.detach().double().requires_grad_()
    z = z0 * scale
    if softcap:
        z = softcap * torch.tanh(z / softcap)
    if slopes is not None:
        d = torch.arange(Q, device="cuda")[:, None] + (K - Q if offset is None else offset)
        z = z - slopes.double().reshape(1, H, 1, 1) * (d - torch.arange(K, device="cuda")).abs().double()
    keep = visible(B, Q, K, causal, window, key_lengths, offset)
    if add is not None:
        z = z + add
        keep = keep & (add > -math.inf)
    z = z.masked_fill(~keep, -math.inf)
    y = torch.softmax(z, -1)
    y = torch.where(keep.any(-1, keepdim=True), y, torch.zeros_like(y))   # torch's NaN rows as zeros
    (dx,) = torch.autograd.grad(y, z0, dy.double())
    return y.detach(), dx, keep.expand(B, H, Q, K)


def close(got, want, keep, bound, what):
    """got within bound of want where kept, exactly 0 elsewhere; one FAIL line with the worst."""
    got = got.double()
    err = ((got - want).abs() - bound).masked_fill(~keep, -1.0)
    worst = err.max().item()
    masked = got.masked_fill(keep, 0.0).abs().max().item()
    ok = expect(worst <= 0 and masked == 0 and not got.isnan().any().item(),
                "%s: worst excess %.3g, max |masked| %.3g" % (what, worst, masked))
    return ok


def check(B, H, Q, K, dtype, scale=0.3, softcap=None, causal=False, window=None, lengths=None, alibi=False,
          offset=None, three_d=False, mask=None, bias=None, bias_dtype=None):
    """mask, bias: shapes of a bool mask (True: seen) and a float bias (of bias_dtype, default the
    scores') drawn here, or None."""
    what = "%s %dx%dx%dx%d scale %g softcap %s causal %s window %s lengths %s alibi %s offset %s mask %s bias %s" % (
        str(dtype)[6:], B, H, Q, K, scale, softcap, causal, window, lengths, alibi, offset, mask, bias) + (
        " of %s" % str(bias_dtype)[6:] if bias_dtype else "")
    mt = torch.rand(mask, device="cuda") < 0.8 if mask is not None else None
    if mt is not None and mt.dim() == 4 and mt.shape[2] > 2:
        mt[..., 2, :] = False                                                       # a row that sees nothing
    bt = (torch.randn(bias, device="cuda") * 2).to(bias_dtype or dtype) if bias is not None else None
    add = None if mt is None else torch.zeros(mt.shape, dtype=torch.float64, device="cuda").masked_fill(~mt, -math.inf)
    add = add if bt is None else bt.double() if add is None else add + bt.double()
    x = (torch.randn(B, H, Q, K, device="cuda") * 4).to(dtype)
    dy = torch.randn(B, H, Q, K, device="cuda").to(dtype)
    kl = torch.tensor(lengths, dtype=torch.int32, device="cuda") if lengths is not None else None
    slopes = torch.tensor([2.0 ** (-8 * (h + 1) / H) for h in range(H)], device="cuda") if alibi else None
    ref_y, ref_dx, keep = reference(x, dy, scale, softcap, causal, window, kl, slopes, offset, add)
    xin = (x[0] if three_d else x).clone().requires_grad_()
    y = softmax_tune.attention_softmax(xin, scale=scale, softcap=softcap, causal=causal, window=window,
                                       key_lengths=kl, alibi_slopes=slopes, causal_offset=offset, mask=mt, bias=bt)
    y.backward(dy[0] if three_d else dy)
    y, dx = (y[None], xin.grad[None]) if three_d else (y, xin.grad)
    expect(y.dtype == dtype and y.shape == x.shape, "%s: y %s %s" % (what, y.dtype, tuple(y.shape)))
    # y: the float32 score's error (|z| of ~1e-7 relative, tanh's too) and the dtype's rounding
    zmag = (x.double().abs() * abs(scale)).clamp(max=softcap or math.inf) + 1
    if alibi:   # the bias's float32 error too (2 u |b|)
        d = torch.arange(Q, device="cuda")[:, None] + (K - Q if offset is None else offset)
        zmag = zmag + 2 * slopes.double().reshape(1, H, 1, 1) * (d - torch.arange(K, device="cuda")).abs().double()
    if bt is not None:   # the bias's add (exact in float32, one rounding of the sum)
        zmag = zmag + bt.double().abs()
    close(y, ref_y, keep, ref_y.abs() * (REL[dtype] * 4 + 3e-6 * zmag) + TINY[dtype], what + ": y")
    # dx: k * y * (dy - s), y rounded to the dtype, the sum in float32
    s = (ref_y * dy.double()).sum(-1, keepdim=True)
    k = abs(scale)
    term = k * ref_y.abs() * (dy.double().abs() + s.abs() + (ref_y * dy.double()).abs().sum(-1, keepdim=True))
    close(dx, ref_dx, keep, term * (REL[dtype] * 8 + 3e-6 * zmag + 1e-6 * math.log2(K)) + 4 * TINY[dtype],
          what + ": dx")
    empty = ~keep.any(-1)
    if empty.any():
        expect(y[empty].abs().max().item() == 0 and dx[empty].abs().max().item() == 0,
               "%s: a row that sees nothing is not zeros" % what)


for dtype in DTYPES:
    check(2, 3, 64, 64, dtype)
    check(2, 3, 64, 64, dtype, causal=True)
    check(2, 3, 64, 96, dtype, window=16)
    check(2, 3, 64, 96, dtype, causal=True, window=16)
    check(3, 2, 16, 3000, dtype, lengths=[3000, 0, 1234])                      # a batch that sees nothing
    check(2, 4, 48, 64, dtype, causal=True, alibi=True)
    check(2, 2, 32, 64, dtype, softcap=5.0, scale=2.0, causal=True)
    check(2, 2, 32, 64, dtype, scale=2.0, causal=True)                           # its class again, the plain kernel
    check(1, 2, 96, 64, dtype, causal=True)                                      # Q > K: the first rows see nothing
    check(1, 2, 8, 5000, dtype, causal=True, offset=4000)                        # a chunk of a prefill
    check(1, 8, 1, 32768, dtype, causal=True, alibi=True, softcap=30.0)          # decoding
    check(1, 3, 16, 128, dtype, causal=True, window=8, offset=-4, alibi=True, softcap=3.0, three_d=True)
    check(3, 2, 64, 200, dtype, causal=True, lengths=[200, 0, 150])            # key padding with the others
    check(3, 2, 40, 3000, dtype, window=500, lengths=[3000, 2000, 7], alibi=True)
    check(3, 2, 24, 96, dtype, causal=True, window=20, lengths=[96, 60, 81], softcap=4.0)
    check(2, 2, 96, 64, dtype, causal=True, lengths=[64, 30])                    # Q > K with padding
    check(2, 1, 8, 5000, dtype, causal=True, offset=4000, lengths=[4003, 5000], alibi=True)
    check(2, 3, 32, 96, dtype, bias=(1, 3, 32, 96))                              # a bias tensor [1, H, Q, K]
    check(2, 3, 32, 96, dtype, causal=True, bias=(32, 96), softcap=5.0)          # [Q, K], after the softcap
    check(2, 2, 16, 3000, dtype, mask=(2, 1, 1, 3000), window=700)               # a key padding mask [B, 1, 1, K]
    check(2, 2, 24, 200, dtype, mask=(2, 2, 24, 200), bias=(2, 1, 24, 200), lengths=[150, 200], causal=True)
    check(1, 2, 24, 64, dtype, mask=(1, 1, 24, 1), bias=(2, 1, 64))             # broadcast over K (copied)
    # one tensor alone is read in its own dtype, its sharers' rows taken together (am_order 1, 2, 3)
    check(3, 4, 20, 160, dtype, bias=(1, 4, 20, 160), causal=True)               # over batches
    check(3, 4, 20, 160, dtype, bias=(3, 1, 20, 160), bias_dtype=torch.float32)   # over heads, float32
    check(3, 4, 20, 160, dtype, mask=(3, 1, 20, 160), lengths=[160, 99, 0])      # bool [B, 1, Q, K] (Hugging Face's)
    check(3, 4, 20, 160, dtype, bias=(20, 160), bias_dtype=torch.bfloat16)        # over both, bfloat16
    check(2, 3, 17, 333, dtype, mask=(1, 3, 17, 333), causal=True)               # bool over batches
    check(2, 3, 17, 333, dtype, bias=(2, 3, 1, 333), bias_dtype=torch.float16)    # over queries, float16
print("float64 agreement: every mask kind, ALiBi, softcap, Q != K, fully masked rows, mask and bias tensors "
      "(broadcast, with the other masks, of every dtype), every dtype")


def nonfinite(dtype, K, bad):
    """A NaN among a row's visible scores makes its whole y NaN (as torch's) and its visible dx; a
    `bad` (NaN or inf) among a row's visible dy makes its visible dx not finite. Masked dx stays
    exactly 0 (a masked dy of NaN is never read), masked y too in the other rows, which stay finite.
    A NaN score and dy at key n, the first masked one (in a vector with visible keys where n is not a
    multiple of the vector: the kernels load it whole and clear it), change nothing."""
    B, H, Q, n = 2, 2, 8, K // 3
    kl = torch.tensor([K, n], dtype=torch.int32, device="cuda")
    x = (torch.randn(B, H, Q, K, device="cuda") * 2).to(dtype)
    x[1, 0, 2, 5] = float("nan")
    dy = torch.randn(B, H, Q, K, device="cuda").to(dtype)
    dy[1, 1, 3, 7], dy[1, 1, 3, K - 1] = bad, float("nan")
    x[1, 1, 4, n], dy[1, 0, 5, n] = float("nan"), bad   # masked keys beside the visible ones
    xin = x.clone().requires_grad_()
    y = softmax_tune.attention_softmax(xin, scale=0.5, key_lengths=kl)
    y.backward(dy)
    dx = xin.grad
    what = "%s K %d dy %g" % (str(dtype)[6:], K, bad)
    expect(dx[1, :, :, n:].abs().max().item() == 0, "%s: masked dx not 0" % what)
    ym = y[1, :, :, n:].clone()
    ym[0, 2] = 0
    expect(ym.abs().max().item() == 0, "%s: masked y not 0 (a row without a NaN)" % what)
    expect(y[1, 0, 2].isnan().all().item() and dx[1, 0, 2, :n].isnan().all().item(),
           "%s: a NaN score: its row's y and visible dx not all NaN" % what)
    expect(not dx[1, 1, 3, :n].isfinite().any().item(), "%s: a %g dy: its row's visible dx finite somewhere" % (what, bad))
    ok = torch.ones(B, H, Q, dtype=torch.bool, device="cuda")
    ok[1, 0, 2] = ok[1, 1, 3] = False
    expect(y[ok].isfinite().all().item() and dx[ok].isfinite().all().item(), "%s: other rows not finite" % what)


for dtype in DTYPES:
    for K in (64, 3000, 4096, 20000):
        for bad in (float("nan"), float("inf")):
            nonfinite(dtype, K, bad)
print("non-finite scores and gradients: a NaN score's row NaN, a bad dy's visible dx not finite, masked dx 0")

# a non-contiguous input (a transposed view) is copied, the gradient lands in its layout
xt = torch.randn(2, 3, 40, 40, device="cuda").transpose(-1, -2).requires_grad_()
y = softmax_tune.attention_softmax(xt, causal=True)
ry = attn.reference(xt.detach().contiguous(), causal=True)
expect((y - ry).abs().max().item() < 1e-5, "non-contiguous scores: y")
y.sum().backward()
expect(xt.grad.shape == xt.shape and xt.grad.abs().max().item() < 1e-5, "non-contiguous scores: gradient of sum(y) ~ 0")

# torch.compile(fullgraph=True): forward and backward through the custom ops
try:
    kl = torch.tensor([70, 5], dtype=torch.int32, device="cuda")
    pad = (torch.arange(128, device="cuda") < torch.tensor([[100], [9]], device="cuda"))[:, None, None, :]
    rel = torch.randn(4, 128, 128, device="cuda")

    def step(x, v):
        p = softmax_tune.attention_softmax(x, scale=0.125, causal=True, softcap=20.0)
        p2 = softmax_tune.attention_softmax(x, scale=0.5, key_lengths=kl)
        p3 = softmax_tune.attention_softmax(x, scale=0.25, causal=True, mask=pad, bias=rel)
        return (p @ v).square().sum() + (p2 @ v).sum() + (p3 @ v).square().mean()

    cstep = torch.compile(step, fullgraph=True)
    for dtype in (torch.float32, torch.bfloat16):
        x = (torch.randn(2, 4, 128, 128, device="cuda") * 3).to(dtype)
        v = torch.randn(2, 4, 128, 32, device="cuda").to(dtype)
        xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
        lc, le = cstep(xc, v), step(xe, v)
        lc.backward()
        le.backward()
        tol = 1e-4 if dtype == torch.float32 else 2e-2
        expect(abs(lc.item() - le.item()) <= tol * abs(le.item()), "torch.compile %s loss %g vs eager %g"
               % (dtype, lc.item(), le.item()))
        expect((xc.grad.float() - xe.grad.float()).abs().max().item() <= tol * xe.grad.float().abs().max().item(),
               "torch.compile %s grad vs eager" % dtype)
    print("torch.compile(fullgraph=True): forward and backward ok")
except Exception as e:  # noqa: BLE001
    expect(False, "torch.compile(fullgraph=True): %s: %s" % (type(e).__name__, str(e)[:2000]))

# a CUDA graph of forward and backward (key padding, ALiBi, softcap), replayed on new data
try:
    B, H, Q, K = 2, 4, 64, 512
    x = (torch.randn(B, H, Q, K, device="cuda") * 3).to(torch.bfloat16).requires_grad_()
    dy = torch.randn(B, H, Q, K, device="cuda").to(torch.bfloat16)
    kl = torch.tensor([500, 17], dtype=torch.int32, device="cuda")
    slopes = torch.rand(H, device="cuda")
    opts = dict(scale=0.25, softcap=10.0, key_lengths=kl, alibi_slopes=slopes)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.grad = None
            softmax_tune.attention_softmax(x, **opts).backward(dy)
    torch.cuda.current_stream().wait_stream(s)
    x.grad = None
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        static_y = softmax_tune.attention_softmax(x, **opts)
        static_y.backward(dy)
    new_x = (torch.randn(B, H, Q, K, device="cuda") * 3).to(torch.bfloat16)
    with torch.no_grad():
        x.copy_(new_x)
    kl.copy_(torch.tensor([3, 512], dtype=torch.int32))
    g.replay()
    torch.cuda.synchronize()
    ref_y, ref_dx, keep = reference(new_x, dy, 0.25, 10.0, False, None, kl, slopes, None)
    expect((static_y.double() - ref_y).abs().max().item() <= 2 ** -7, "CUDA graph replay: y")
    expect((x.grad.double() - ref_dx).abs().max().item() <= 2 ** -6 * max(1.0, ref_dx.abs().max().item()),
           "CUDA graph replay: dx")
    expect(static_y[0, :, :, 3:].abs().max().item() == 0, "CUDA graph replay: the new key lengths are used")
    print("CUDA graph: captured and replayed")
except Exception as e:  # noqa: BLE001
    expect(False, "CUDA graph: %s: %s" % (type(e).__name__, e))

# refusals: one line each, before anything runs
xb = torch.randn(2, 3, 16, 32, device="cuda", dtype=torch.bfloat16)
kl2 = torch.tensor([4, 8], dtype=torch.int32, device="cuda")
for kwargs, needle in [(dict(scale=float("nan")), "scale"), (dict(scale=float("inf")), "scale"),
                       (dict(softcap=0.0), "softcap"), (dict(softcap=-3.0), "softcap"), (dict(window=-1), "window"),
                       (dict(causal_offset=1 << 41), "causal_offset"),
                       (dict(key_lengths=[4, 33], causal=True), "[0, K]"),
                       (dict(key_lengths=kl2.float()), "int32 or int64"),
                       (dict(key_lengths=kl2[:1]), "shape [B]"),
                       (dict(key_lengths=[4, 33]), "[0, K]"), (dict(key_lengths=[-1, 3]), "[0, K]"),
                       (dict(alibi_slopes=torch.ones(2, device="cuda")), "H=3"),
                       (dict(mask=torch.ones(2, 3, 16, 31, dtype=torch.bool, device="cuda")), "does not broadcast"),
                       (dict(bias=torch.ones(3, 3, 1, 32, device="cuda")), "does not broadcast"),
                       (dict(mask=torch.ones(16, 32, dtype=torch.int32, device="cuda")), "bool (True: seen) or float"),
                       (dict(bias=torch.ones(16, 32, dtype=torch.int32, device="cuda")), "float tensor"),
                       (dict(bias=torch.zeros(16, 32, device="cuda", requires_grad=True)), "bias requires grad"),
                       (dict(mask=torch.zeros(16, 32, device="cuda", requires_grad=True)), "mask requires grad")]:
    raises(lambda: softmax_tune.attention_softmax(xb, **kwargs), ValueError, "refusal %s" % needle, needle)
raises(lambda: softmax_tune.attention_softmax(xb[0, 0]), ValueError, "2-d scores", "[B, H, Q, K]")
raises(lambda: softmax_tune.attention_softmax(xb.int()), ValueError, "int scores", "floating point")

# the fallbacks: CPU, float64 and a mask tensor with ALiBi run the same math in torch, one warning in
# all; a bool mask (the kernel's bias tensor) agrees with key padding
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    xc = torch.randn(2, 3, 16, 32)
    yc = softmax_tune.attention_softmax(xc, causal=True, key_lengths=None, scale=0.5)
    yd = softmax_tune.attention_softmax(xb.double(), key_lengths=[0, 32])
    ym = softmax_tune.attention_softmax(xb, mask=torch.arange(32, device="cuda") < 9)
    yk = softmax_tune.attention_softmax(xb, key_lengths=[9, 9])
    sl = torch.rand(3, device="cuda")
    ya = softmax_tune.attention_softmax(xb, mask=torch.arange(32, device="cuda") < 9, alibi_slopes=sl, causal=True)
    ra = attn.reference(xb, 1.0, None, True, None, None, sl, 16, torch.arange(32, device="cuda") < 9)
ours = [w for w in caught if str(w.message).startswith("softmax_tune.attention_softmax:")]
expect(len(ours) == 1, "one fallback warning, got %d: %s" % (len(ours), [str(w.message) for w in ours]))
ry, _, _ = reference(xc.cuda(), torch.zeros(2, 3, 16, 32, device="cuda"), 0.5, None, True, None, None, None, None)
expect(yc.dtype == torch.float32 and (yc.double().cuda() - ry).abs().max().item() < 1e-6, "CPU fallback")
expect(yd.dtype == torch.float64 and yd[0].abs().max().item() == 0 and not yd.isnan().any().item(),
       "float64 fallback: a fully masked batch is zeros")
expect((ym.float() - yk.float()).abs().max().item() <= 2 ** -8, "a bool mask tensor agrees with key padding")
expect((ya.float() - ra).abs().max().item() <= 2 ** -8, "a mask tensor with ALiBi: the torch fallback")



# the C++ calls (csrc/ops.cpp attention_forward, attention_backward), where built: an eager call takes
# one each way and no ctypes; they give the ctypes path's y and dx bit for bit (the same kernels, any
# layout and dy dtype), and the library's refusals as the same one-line RuntimeError
def counting(counts, name, fn):
    def call(*args):
        counts[name] += 1
        return fn(*args)
    return call


def one_call_each_way():
    counts = dict(forward=0, backward=0, ctypes=0)
    saved = attn._cpp_forward, attn._cpp_backward, _lib.attention
    attn._cpp_forward, attn._cpp_backward = counting(counts, "forward", saved[0]), counting(counts, "backward", saved[1])
    _lib.attention = counting(counts, "ctypes", saved[2])
    try:
        xq = torch.randn(1, 8, 1, 128, device="cuda", dtype=torch.bfloat16)
        softmax_tune.attention_softmax(xq, scale=0.125, causal=True)
        expect(counts == dict(forward=1, backward=0, ctypes=0), "the C++ path: an inference call made %s" % counts)
        xg = xq.clone().requires_grad_()
        softmax_tune.attention_softmax(xg, scale=0.125, causal=True, softcap=30.0).backward(torch.randn_like(xq))
        expect(counts == dict(forward=2, backward=1, ctypes=0), "the C++ path: forward + backward made %s" % counts)
    finally:
        attn._cpp_forward, attn._cpp_backward, _lib.attention = saved


def same_results(dtype, kl=None, slopes=None, softcap=0.0, causal=False, window=-1, offset=None, bias=None):
    B, H, Q, K = 2, 4, 24, 300
    what = "the C++ attention calls, %s kl %s alibi %s softcap %g causal %s window %d offset %s bias %s" % (
        str(dtype)[6:], kl is not None, slopes is not None, softcap, causal, window, offset,
        None if bias is None else list(bias.shape))
    # a float bias: with a bool mask drawn from it (one float32 tensor); a bool one alone, as it is
    bias = None if bias is None else attn._additive(bias, None, (B, H, Q, K), bias.device) if bias.dtype == torch.bool \
        else attn._additive(bias < -1.5, bias, (B, H, Q, K), bias.device)
    x = (torch.randn(B, H, K, Q, device="cuda") * 3).to(dtype).transpose(-1, -2)   # not contiguous
    args = (kl, slopes, 0.3, softcap, causal, window, K - Q if offset is None else offset)
    y, ry = attn._cpp_forward(x, *args, bias), attn._forward_ctypes(x, *args, bias)
    if expect(y is not None, what + ": the forward did not serve"):
        expect(y.dtype == dtype and y.is_contiguous() and torch.equal(y, ry), what + ": not the ctypes path's y")
    dy = torch.randn(B, H, Q, K, device="cuda")
    for d in (dy, dy.to(dtype), dy.to(dtype).transpose(-1, -2).contiguous().transpose(-1, -2)):
        bargs = (kl,) + args[2:]
        dx, rdx = attn._cpp_backward(x, ry, d, *bargs), attn._backward_ctypes(x, ry, d, *bargs)
        if expect(dx is not None, what + ": the backward did not serve"):
            expect(dx.dtype == dtype and torch.equal(dx, rdx), "%s: dy %s%s: not the ctypes path's dx" % (
                what, str(d.dtype)[6:], "" if d.is_contiguous() else " strided"))


def same_error(what, fn, ref, inputs, needle):
    """fn and ref (the ctypes path) on inputs raise the same one-line RuntimeError, inputs untouched."""
    before = [t.clone() for t in inputs if isinstance(t, torch.Tensor)]
    got = []
    for f in (fn, ref):
        try:
            f(*inputs)
            got.append(None)
        except RuntimeError as e:
            got.append(str(e))
    after = [t for t in inputs if isinstance(t, torch.Tensor)]
    expect(got[0] is not None and got[0] == got[1] and needle in got[0] and "\n" not in got[0],
           "the C++ attention call, %s: %r, the ctypes path's %r" % (what, got[0], got[1]))
    expect(all(torch.equal(a, b) for a, b in zip(before, after)), "the C++ attention call, %s: an input written" % what)


if softmax_tune.cpp_ops and attn._cpp_forward is not None and attn._cpp_backward is not None:
    one_call_each_way()
    kl3 = torch.tensor([300, 7], dtype=torch.int32, device="cuda")
    sl3 = torch.rand(4, device="cuda")
    for dtype in DTYPES:
        same_results(dtype)
        same_results(dtype, causal=True)
        same_results(dtype, window=16)
        same_results(dtype, causal=True, window=16, offset=-3)        # rows that see nothing
        same_results(dtype, kl=kl3)
        same_results(dtype, causal=True, slopes=sl3, softcap=5.0)
        same_results(dtype, kl=kl3, slopes=sl3, softcap=2.0)
        same_results(dtype, kl=kl3, causal=True, window=40)
        same_results(dtype, kl=kl3, causal=True, slopes=sl3, offset=-5)
        same_results(dtype, kl=kl3, causal=True, bias=torch.randn(2, 1, 24, 300, device="cuda"))
        same_results(dtype, window=30, softcap=3.0, bias=torch.randn(4, 1, 300, device="cuda"))
        same_results(dtype, causal=True, bias=torch.rand(2, 1, 24, 300, device="cuda") < 0.7)   # bool, alone
    xe = torch.randn(2, 3, 16, 32, device="cuda")
    ye, dye = torch.softmax(xe, -1), torch.randn_like(xe)
    for what, opts, needle in [("key_lengths, window -2", (kl2, 1.0, 0.0, True, -2, 16), "bad window"),
                               ("scale nan", (None, float("nan"), 0.0, False, -1, 16), "bad scale"),
                               ("softcap -1", (None, 1.0, -1.0, False, -1, 16), "bad softcap"),
                               ("window -7", (None, 1.0, 0.0, True, -7, 16), "bad window"),
                               ("offset 2^41", (None, 1.0, 0.0, True, -1, 1 << 41), "bad causal offset")]:
        same_error(what, attn._cpp_forward, attn._forward_ctypes, (xe, opts[0], None) + opts[1:] + (None,), needle)
        same_error(what + " (backward)", attn._cpp_backward, attn._backward_ctypes, (xe, ye, dye) + opts, needle)
    same_error("empty scores", attn._cpp_forward, attn._forward_ctypes,
               (xe[:0], None, None, 1.0, 0.0, False, -1, 16, None), "bad shape")
    be = attn._additive(None, torch.randn(32, device="cuda"), xe.shape, xe.device)
    same_error("ALiBi and a bias tensor", attn._cpp_forward, attn._forward_ctypes,
               (xe, None, torch.ones(3, device="cuda"), 1.0, 0.0, False, -1, 16, be), "one bias kind")
    print("the C++ attention calls: one each way, the ctypes path's results and errors bit for bit")
else:
    why = ("SOFTMAX_TUNE_NO_CPP=1" if os.environ.get("SOFTMAX_TUNE_NO_CPP") == "1" else
           "softmax_tune._C is not built (python3 python/setup.py build_ext --inplace)" if not softmax_tune.cpp_ops
           else "softmax_tune._C was built before them (rebuild it)")
    print("SKIP: the C++ attention calls (attention_forward, attention_backward): %s" % why, flush=True)

# the custom ops: schema and fake
try:
    x = torch.randn(2, 3, 16, 40, device="cuda")
    torch.library.opcheck(torch.ops.softmax_tune.attention_softmax.default,
                          (x, kl2, torch.ones(3, device="cuda"), 0.5, 4.0, False, -1, 24, None),
                          test_utils=("test_schema", "test_faketensor"))
    torch.library.opcheck(torch.ops.softmax_tune.attention_softmax.default,
                          (x, kl2, None, 0.5, 0.0, True, -1, 24, torch.randn(40, device="cuda").expand(x.shape)),
                          test_utils=("test_schema", "test_faketensor"))
    torch.library.opcheck(torch.ops.softmax_tune.attention_softmax_backward.default,
                          (x, torch.softmax(x, -1), torch.randn_like(x), None, 0.5, 4.0, True, 3, 24),
                          test_utils=("test_schema", "test_faketensor"))
    print("opcheck softmax_tune::attention_softmax and _backward: schema and fake ok")
except Exception as e:  # noqa: BLE001
    expect(False, "opcheck softmax_tune::attention_softmax: %s" % e)


# an eager attention against SDPA with the same mask, forward and q.grad
def eager_attention(q, k, v, causal, lengths, bias=None):
    scores = q @ k.transpose(-2, -1)
    p = softmax_tune.attention_softmax(scores, scale=q.shape[-1] ** -0.5, causal=causal, key_lengths=lengths,
                                       bias=bias)
    return p @ v


for dtype, tol in ((torch.float32, 2e-5), (torch.bfloat16, 2e-2)):
    B, H, S, D = 2, 4, 256, 64
    for causal, padded, biased in ((True, False, False), (False, True, False), (True, True, False),
                                   (False, False, True)):
        q, k, v = (torch.randn(B, H, S, D, device="cuda").to(dtype).requires_grad_() for _ in range(3))
        lengths = torch.tensor([S, 77], dtype=torch.int32, device="cuda") if padded else None
        mask = (torch.arange(S, device="cuda") < lengths.long()[:, None])[:, None, None, :] if padded else None
        if padded and causal:   # SDPA takes one: the causal mask joins the bool one
            mask = mask & torch.ones(S, S, dtype=torch.bool, device="cuda").tril()
        bias = torch.randn(1, H, S, S, device="cuda").to(dtype) if biased else None
        if biased:   # an additive mask, the scores' dtype, -inf in places (no row all -inf)
            bias[..., 1:, 0] = -math.inf
            mask = bias
        out = eager_attention(q, k, v, causal, lengths, bias)
        go = torch.randn_like(out)
        gq = torch.autograd.grad(out, q, go)[0]
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and not padded)
        rq = torch.autograd.grad(ref, q, go)[0]
        what = "eager attention %s %s vs SDPA" % (str(dtype)[6:], "causal" * causal + " key padding" * padded +
                                                   " additive mask" * biased)
        scale_o, scale_g = ref.float().abs().max().item(), rq.float().abs().max().item()
        expect((out.float() - ref.float()).abs().max().item() <= tol * max(1.0, scale_o), what + ": out")
        expect((gq.float() - rq.float()).abs().max().item() <= tol * 4 * max(1.0, scale_g), what + ": q.grad")
print("eager attention against SDPA: causal, key padding, both, an additive mask; float32 and bfloat16")

finish("test_python_attn")
