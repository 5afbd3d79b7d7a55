"""softmax_tune_check.py — the verification rule of templates/verify.h, in torch: an output of a
softmax or log_softmax computed in float32 and rounded once to its dtype must lie, element by
element, between the float32 error bounds of the float64 reference, each rounded to the dtype
(to nearest even, subnormals included); NaN exactly where the reference is NaN, infinities
equal; each row's sum (of exp(out) for log_softmax) between the sums of those bounds. A
correctly rounded output always passes. The C tool applies the same rule (tuner/ref.c, and
templates/check.cu on the GPU); bench/peers.py, bench/rank.py and tests/test_python.py use this.

    ok, max_err_ulps = check(y, x, log=False)
    ok, max_err_ulps, first_failure = explain(y, x, log=False)
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


def _rows(y, x, log, dtype):
    """(bad elements, bad rows, max error in ulps) of one chunk of rows."""
    x = x.double()
    o = y.double()
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


def explain(y, x, log=False, chunk_elems=1 << 26):
    """(ok, largest error in ulps of y's dtype (0.5: correctly rounded), what failed first: the
    element or row, with its bounds; "" when ok). y: any shape, softmax over x's last dim. Rows
    are checked in chunks of about chunk_elems elements (a few of those in float64 at most)."""
    x2, y2 = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
    step = max(1, chunk_elems // max(1, x2.shape[1]))
    bad = rows = 0
    worst, first = 0.0, ""
    for i in range(0, x2.shape[0], step):
        b, r, w, why = _rows(y2[i:i + step], x2[i:i + step], log, y.dtype)
        bad, rows, worst = bad + b, rows + r, max(worst, w)
        first = first or (why and "%d elements, %d rows wrong; first at chunk row %d + %s" % (b, r, i, why))
    return bad == 0 and rows == 0, worst, first


def check(y, x, log=False):
    """(ok, largest error in ulps): explain() without the reason."""
    return explain(y, x, log)[:2]
