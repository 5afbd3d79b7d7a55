#!/usr/bin/env python3
"""softcap_poly_fit.py — the odd polynomial a 16-bit softcap's r takes on the FMA pipe (templates/softcap_poly.h,
cap_rs): r(s) = 1 / (1 + 2^s) = 1/2 + s Q(s^2) for |s| <= SMAX, and its error on t = 1 - 2 r as the kernel
evaluates it (float32, Horner by FMA, the coefficients rounded to float32) against float64.

    python3 lab/softcap_poly_fit.py [--smax S] [--terms N ...] [--grid G]

Variants: --terms 6, 7, 8 (default all three): the coefficients of Q; --smax (default 2 log2e: |x| <= cap,
tanh's argument in [-1, 1]). The fit is least squares on Chebyshev nodes reweighted toward minimax
(Lawson); the error is over G + 1 evenly spaced s in [-SMAX, SMAX] (default 40000), in u = 2^-24 absolute
on t, the unit of verify.h's vr_tanh_err (16 u stated). No GPU needed: mpmath only.
2026-11-29: SMAX 2 log2e, 6 terms 6.39 u, 7 terms 2.86 u (the kernel's: 3.05 u over 800001 points in test_verify_ce), 8 terms 2.28 u.
"""
import argparse
import math
import struct

import mpmath as mp

mp.mp.dps = 40


def f32(x):
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def fit(smax, n, nodes=400, iters=60):
    pts = [smax * mp.cos(mp.pi * (k + 0.5) / (2 * nodes)) for k in range(nodes)]
    tgt = [1 / (1 + mp.power(2, s)) - mp.mpf(1) / 2 for s in pts]
    w = [mp.mpf(1)] * nodes
    for _ in range(iters):
        a, b = mp.matrix(n, n), mp.matrix(n, 1)
        for s, t, wi in zip(pts, tgt, w):
            row = [s ** (2 * j + 1) for j in range(n)]
            for i in range(n):
                b[i] += wi * row[i] * t
                for j in range(n):
                    a[i, j] += wi * row[i] * row[j]
        c = mp.lu_solve(a, b)
        err = [abs(sum(c[j] * s ** (2 * j + 1) for j in range(n)) - t) for s, t in zip(pts, tgt)]
        tot = sum(wi * e for wi, e in zip(w, err))
        w = [wi * e / tot for wi, e in zip(w, err)]
    return [f32(c[j]) for j in range(n)]


def r_kernel(cs, s):
    """cap_rs's float32 evaluation: w = s s, Horner by FMA (exact product, one rounding), r = fma(s, q, 1/2)."""
    s = f32(s)
    w, q = f32(s * s), cs[-1]
    for c in reversed(cs[:-1]):
        q = f32(q * w + c)
    return f32(s * q + 0.5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smax", type=float, default=2 * math.log2(math.e))
    ap.add_argument("--terms", type=int, nargs="+", default=[6, 7, 8])
    ap.add_argument("--grid", type=int, default=40000)
    a = ap.parse_args()
    for n in a.terms:
        cs = fit(a.smax, n)
        worst = 0.0
        for k in range(-a.grid // 2, a.grid // 2 + 1):
            s = a.smax * 2 * k / a.grid
            worst = max(worst, abs(2 * (r_kernel(cs, s) - 1 / (1 + mp.power(2, s)))))
        print(f"smax {a.smax:.9g}, {n} terms: {float(worst) / 2**-24:.2f} u on t;",
              "Q =", ", ".join(f"{c:.9g}f" for c in cs))


if __name__ == "__main__":
    main()
