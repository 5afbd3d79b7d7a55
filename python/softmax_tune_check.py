"""softmax_tune_check.py — the verification rule of templates/verify.h, in torch: an output of a
softmax or log_softmax computed in float32 and rounded once to its dtype must lie, element by
element, between the float32 error bounds of the float64 reference, each rounded to the dtype
(to nearest even, subnormals included); NaN exactly where the reference is NaN, infinities
equal; each row's sum (of exp(out) for log_softmax) between the sums of those bounds. A
correctly rounded output always passes. The C tool applies the same rule (tuner/ref.c, and
templates/check.cu on the GPU); bench/peers.py, lab/rank.py and tests/test_python.py use this.

    ok, max_err_ulps = check(y, x, log=False)
    ok, max_err_ulps, first_failure = explain(y, x, log=False)
    ok, max_err_ulps, first_failure = backward_explain(dx, y, dy, log=False)   # a backward kernel
    ok, max_err_ulps, first_failure = grad_explain(dx, x, dy, log=False)       # forward + backward
"""

import math

import torch

U = 2.0 ** -24
_BITS = {torch.float32: (24, -149, 2.0 ** 128 - 2.0 ** 104),
         torch.float16: (11, -24, 65504.0),
         torch.bfloat16: (8, -133, 2.0 ** 128 - 2.0 ** 120)}


def ulp(v, dtype):
    """The spacing of dtype's values at |v| (float64 tensor): its ulp, or the subnormal quantum."""
    bits, qmin, _ = _BITS[dtype]
    e = (v.abs().view(torch.int64) >> 52) - 1023   # floor(log2 |v|), from the float64's bits
    return ((e - (bits - 1)).clamp(min=qmin) + 1023 << 52).view(torch.float64)   # 2^q, built from bits


def round_to(v, dtype):
    """v (float64) rounded to dtype, to nearest even, kept in float64; past the largest to inf."""
    q = ulp(torch.nan_to_num(v, posinf=0.0, neginf=0.0), dtype)
    r = torch.where(torch.isfinite(v), torch.round(v / q) * q, v)   # torch.round: half to even
    return torch.where(r.abs() > _BITS[dtype][2], torch.copysign(torch.full_like(r, math.inf), r), r)


def bounds(x, log, dtype):
    """(x in float64, float64 reference, lo, hi, rows that must be NaN): what an output of dtype
    may be, element by element, for softmax (log_softmax) over x's last dim."""
    x = x.double()
    cols = x.shape[-1]
    nan = torch.isnan(x).any(-1, keepdim=True)
    m = torch.where(torch.isnan(x), -math.inf, x).amax(-1, keepdim=True)
    nanrow = nan | torch.isinf(m)
    m = torch.where(nanrow, 0.0, m)
    d = x - m
    e = torch.exp(d)
    s = e.sum(-1, keepdim=True)
    h = torch.where(torch.isinf(x), 0.0, e * (-d)).sum(-1, keepdim=True) / s
    erow = U * (64 + 4 * math.log2(cols + 1) + math.sqrt(cols) + 2.5 * h)
    ls = torch.log(s)
    if log:
        ref = d - ls
        a = U * (d.abs() + 2 * ls.abs() + ref.abs()) + erow
        lo, hi = round_to(ref - a, dtype), round_to(ref + a, dtype)
    else:
        ref = e / s
        rel = U * (8 + 2.5 * d.abs()) + erow
        vlo = ref * (1 - rel)
        lo = round_to(torch.where(vlo < 2.0 ** -126, 0.0, vlo), dtype)
        hi = round_to(ref * (1 + rel) + 2.0 ** -148, dtype)
        lo, hi = torch.where(ref == 0, 0.0, lo), torch.where(ref == 0, 0.0, hi)
    return x, ref, lo, hi, nanrow


def _rows(y, x, log, dtype):
    """(bad elements, bad rows, max error in ulps, the first failure) of one chunk of rows."""
    x, ref, lo, hi, nanrow = bounds(x, log, dtype)
    o = y.double()
    cols = x.shape[-1]
    inside = (lo <= o) & (o <= hi)
    ok = torch.where(nanrow, torch.isnan(o), torch.where(torch.isinf(ref), o == ref, inside))
    f = (lambda t: torch.exp(t)) if log else (lambda t: t)
    fin = ~nanrow & ~torch.isinf(ref)
    sums = [torch.where(fin, f(t), 0.0).sum(-1) for t in (o, lo, hi)]
    slack = cols * 2.0 ** -52 * sums[2]
    rowbad = ~nanrow.squeeze(-1) & ~((sums[1] - slack <= sums[0]) & (sums[0] <= sums[2] + slack))
    err = torch.where(fin, (o - ref).abs() / ulp(torch.where(fin, ref, 0.0), dtype), 0.0)
    why = ""
    if not bool(ok.all()):
        r, c = [int(i) for i in (~ok).nonzero()[0]]
        why = "row %d col %d: x %r, out %r, ref %r, bounds [%r, %r]" % (
            r, c, float(x[r, c]), float(o[r, c]), float(ref[r, c]), float(lo[r, c]), float(hi[r, c]))
    elif bool(rowbad.any()):
        r = int(rowbad.nonzero()[0])
        why = "row %d: sum %r, bounds [%r, %r]" % (r, float(sums[0][r]), float(sums[1][r]), float(sums[2][r]))
    return int((~ok).sum()), int(rowbad.sum()), float(torch.nan_to_num(err, nan=math.inf).max()), why


def _chunked(fn, ts, chunk_elems):
    """fn over chunks of rows of the tensors ts (same shape, rows over the last dim), about
    chunk_elems elements a chunk: (ok, largest error, first failure)."""
    ts = [t.reshape(-1, t.shape[-1]) for t in ts]
    step = max(1, chunk_elems // max(1, ts[0].shape[1]))
    bad = rows = 0
    worst, first = 0.0, ""
    for i in range(0, ts[0].shape[0], step):
        b, r, w, why = fn(*[t[i:i + step] for t in ts])
        bad, rows, worst = bad + b, rows + r, max(worst, w)
        first = first or (why and "%d elements, %d rows wrong; first at chunk row %d + %s" % (b, r, i, why))
    return bad == 0 and rows == 0, worst, first


def explain(y, x, log=False, chunk_elems=1 << 26):
    """(ok, largest error in ulps of y's dtype (0.5: correctly rounded), what failed first: the
    element or row, with its bounds; "" when ok). y: any shape, softmax over x's last dim. Rows
    are checked in chunks of about chunk_elems elements (a few of those in float64 at most)."""
    return _chunked(lambda y, x: _rows(y, x, log, y.dtype), (y, x), chunk_elems)


def check(y, x, log=False):
    """(ok, largest error in ulps): explain() without the reason."""
    return explain(y, x, log)[:2]


# ---- gradients: softmax_backward dx = y*(dy - sum(dy*y)), log_softmax_backward dx = dy - exp(y)*sum(dy)
# The kernel reads y and dy (dtype values, exact in float32), computes in float32 and rounds dx once.
# Its float32 error: the row sum off by at most the forward rule's row term, U*(64 + 4 log2(n+1) +
# sqrt(n)) times the sum of the terms' magnitudes; each product and difference a few units of U
# of its operands; exp (log_softmax) U*(8 + 2.5|y|) relative, as the forward's. When y is itself a
# forward output (grad_explain), y lies within the forward rule's bounds of the float64 softmax,
# delta = max(hi - ref, ref - lo) away at most; that deviation's effect on dx (to first order, with
# a 2x margin for the second) is added. dx must lie between ref -+ the sum, each rounded to dtype.

def _grad_rows(dx, y, dy, delta, log):
    """_rows for gradients: y, dy, delta float64 (delta: how far y may be from the true value)."""
    dtype = dx.dtype
    o = dx.double()
    n = y.shape[-1]
    cu = U * (64 + 4 * math.log2(n + 1) + math.sqrt(n))
    ad = dy.abs()
    if log:
        p = torch.exp(y)
        big_s = dy.sum(-1, keepdim=True)
        ref = dy - p * big_s
        perr = p * (torch.expm1(2 * delta)) + p * U * (8 + 2.5 * y.abs())
        a = (p + perr) * cu * ad.sum(-1, keepdim=True) + perr * big_s.abs() + 2 * U * (ad + p * big_s.abs())
    else:
        s = (dy * y).sum(-1, keepdim=True)
        spread = (ad * delta).sum(-1, keepdim=True)
        ref = y * (dy - s)
        a = ((y.abs() + delta) * cu * ((ad * y).abs().sum(-1, keepdim=True) + spread)
             + 2 * (delta * (dy - s).abs() + (y.abs() + delta) * spread)
             + 2 * U * (y.abs() + delta) * (ad + s.abs()))
    a = a + 2 * U * ref.abs()
    lo, hi = round_to(ref - a, dtype), round_to(ref + a, dtype)
    fin = torch.isfinite(ref)
    ok = torch.where(fin, (lo <= o) & (o <= hi), (o == ref) | (torch.isnan(o) & torch.isnan(ref)))
    err = torch.where(fin, (o - ref).abs() / ulp(torch.where(fin, ref, 0.0), dtype), 0.0)
    why = ""
    if not bool(ok.all()):
        r, c = [int(i) for i in (~ok).nonzero()[0]]
        why = "row %d col %d: y %r, dy %r, dx %r, ref %r, bounds [%r, %r]" % (
            r, c, float(y[r, c]), float(dy[r, c]), float(o[r, c]), float(ref[r, c]), float(lo[r, c]), float(hi[r, c]))
    return int((~ok).sum()), 0, float(torch.nan_to_num(err, nan=math.inf).max()), why


def backward_explain(dx, y, dy, log=False, chunk_elems=1 << 25):
    """explain() for a backward kernel: dx from the given y and dy (softmax_backward, or
    log_softmax_backward with log=True), against float64 on the same y and dy."""
    def one(dx, y, dy):
        y = y.double()
        return _grad_rows(dx, y, dy.double(), torch.zeros_like(y), log)
    return _chunked(one, (dx, y, dy), chunk_elems)


def grad_explain(dx, x, dy, log=False, chunk_elems=1 << 25):
    """explain() for an end-to-end gradient: dx = d(sum(dy * softmax(x)))/dx, computed in dx's
    dtype by a forward within the rule and a backward, against float64 autograd's."""
    def one(dx, x, dy):
        _, ref, lo, hi, _ = bounds(x, log, dx.dtype)
        delta = torch.nan_to_num(torch.maximum(hi - ref, ref - lo), nan=0.0, posinf=0.0)
        return _grad_rows(dx, ref, dy.double(), delta, log)
    return _chunked(one, (dx, x, dy), chunk_elems)
