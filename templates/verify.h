/*
** verify.h — the verification rule, in one place for the GPU check (check.cu includes it) and
** the CPU check (tuner/ref.c includes it). Plain C that CUDA also compiles: VR_FN is
** `__device__` there and empty here.
**
** The kernels compute in float32 and round once to the output dtype. So a kernel's output o of
** an element is round(v), v the float32 result, and v lies within the float32 error bound of
** the float64 reference ref: v in [vlo, vhi]. Rounding to nearest is monotone, hence
**     round(vlo) <= o <= round(vhi)
** is the element rule. It holds for a correctly rounded output (vlo <= ref <= vhi), and it
** rejects any output outside those one or two representable values (for f16 and bf16, whose
** ulp is far above the float32 error, almost always just round(ref)), subnormals included.
**
** The float32 error bound, in units of 2^-24 (u):
**   exp(d), d = x - max: fl(x - max) and the product by log2(e) put 2.25|d| u on the argument
**     of ex2, whose own error is under 4 u (PTX: ex2.approx, 2 ulp): 8 + 2.5|d| u, with room
**     for the product by 1/sum.
**   the row's sum: float32 adds, with the partial sums rescaled by ex2 of max differences
**     (online and split kernels). A rescale's argument is a part of some |d| of its elements,
**     so it adds at most the exp error weighted by the outputs: 2.5 H u with H = sum(ref * |d|).
**     The adds: a tree of them errs by under log2(cols) u; a thread's running sum (two-pass
**     kernels, and peers such as torch's CPU softmax) by independent roundings that grow as
**     sqrt(n) (about 0.25 sqrt(n) u one standard deviation): sqrt(cols) u covers either. With
**     1/sum or log(sum): 64 + 4 log2(cols) + sqrt(cols) u.
**   log_softmax, v = fl(fl(d) - log(sum)): |d| u + 2|log sum| u + |ref| u, plus the sum's
**     relative error as an absolute one.
** Outputs whose float32 value is under 2^-126 may be flushed to zero (ex2.approx.ftz).
**
** The row rule (the sum of the outputs, of exp(out) for log_softmax, between the sums of the
** element bounds) follows from the element rule; the checks keep it as the row's figure.
**
** The backward ops (vr_bounds_bw), from the inputs y and dy as the kernels read them (exact in
** float32), the element rule the same, no row rule. The row's float32 sum s32 of n = cols terms
** (dy*y for softmax_backward, dy for log_softmax_backward) errs from the float64 s by at most
**     es = (2 + 4 log2(cols) + sqrt(cols)) u * A,   A = sum |term|
** (each product rounded once: 1 u of its term; the adds as above: a tree's log2, a running sum's
** sqrt, and the cluster's fold of the blocks' sums).
**   softmax_backward, dx = fl(y * fl(dy - s32)): |y| es (1 + 2u) from the sum, 2 roundings of
**     the result: |y| es + 3 u |ref|.
**   log_softmax_backward, dx = fl(dy - fl(e * s32)), e = ex2(fl(y * log2e)): e errs from exp(y)
**     by the argument's two roundings (2|y| u, relative), ex2.approx (2 ulp) and the constant
**     (|y| u): exp(y) (4 + 3|y|) u, and ftz flushes e below 2^-126 to 0: 2^-126 absolute. So
**     exp(y) (|s| (5 + 3|y|) u + es) + 2^-126 |s| + 2 u |ref|.
** Both plus 2^-148 for float32 subnormals rounded absolutely.
*/
#ifndef VR_FN
#define VR_FN static inline
#endif

#define VR_U 0x1p-24
#define VR_TINY 0x1p-126   /* float32's smallest normal: below it, ftz may give 0 */

/* dtype codes: as GEN_F32, GEN_F16, GEN_BF16 in generator/gen.h */
VR_FN int vr_bits(int dtype) { return dtype == 0 ? 24 : dtype == 1 ? 11 : 8; }
VR_FN int vr_qmin(int dtype) { return dtype == 0 ? -149 : dtype == 1 ? -24 : -133; }
VR_FN double vr_max(int dtype) { return dtype == 0 ? 0x1.fffffep127 : dtype == 1 ? 65504. : 0x1.fep127; }

/* The spacing of dtype's values at |v| (v finite): its ulp, the subnormal quantum below. */
VR_FN double vr_ulp(double v, int dtype)
{
  int e;
  frexp(fabs(v), &e);   /* |v| = f 2^e, f in [0.5, 1) */
  const int q = e - vr_bits(dtype) > vr_qmin(dtype) ? e - vr_bits(dtype) : vr_qmin(dtype);
  return ldexp(1., q);
}

/* v rounded to dtype, to nearest even, subnormals kept, past the largest value to infinity. */
VR_FN double vr_round(double v, int dtype)
{
  if (!(v - v == 0.) || v == 0.) return v;   /* NaN, infinities and zeros stay */
  const double q = vr_ulp(v, dtype), r = rint(v / q) * q;   /* v / q and the product are exact */
  return fabs(r) > vr_max(dtype) ? copysign(ldexp(1., 1024), r) : r;   /* ldexp overflows to inf */
}

/* The relative float32 error of a row's sum (and so of 1/sum or log sum), given cols and
** H = sum over the row of ref * |x - max| (softmax weights). */
VR_FN double vr_row_err(double cols, double h) { return VR_U * (64. + 4. * log2(cols + 1.) + sqrt(cols) + 2.5 * h); }

/* The bounds [*lo, *hi] that an output of dtype may take for a finite reference ref of an
** element with d = x - max, in a row of sum-error erow and log sum ls (log_softmax). */
VR_FN void vr_bounds(int dtype, int logsm, double ref, double d, double erow, double ls, double *lo, double *hi)
{
  double vlo, vhi;
  if (!logsm && ref == 0.) {   /* an input of -inf, or an exp under float64's range: the kernels give 0 */
    *lo = *hi = 0.;
    return;
  }
  if (!logsm) {
    const double rel = VR_U * (8. + 2.5 * fabs(d)) + erow;
    vlo = ref * (1. - rel);
    vhi = ref * (1. + rel) + 0x1p-148;   /* float32 subnormals are rounded absolutely, twice */
    if (vlo < VR_TINY) vlo = 0.;
  } else {
    const double a = VR_U * (fabs(d) + 2. * fabs(ls) + fabs(ref)) + erow;
    vlo = ref - a;
    vhi = ref + a;
  }
  *lo = vr_round(vlo, dtype);
  *hi = vr_round(vhi, dtype);
}

/* An element's error in units of dtype's spacing at the reference: a correctly rounded output
** reads at most 0.5. Shown only (the rule is the bounds): references under float32's smallest
** normal count the spacing there, where float32 math may flush (ftz) and the rule allows it; else
** a p of 1e-40 flushed to 0 read as millions of ulps. */
VR_FN double vr_ulps(double o, double ref, int dtype)
{
  return fabs(o - ref) / vr_ulp(fabs(ref) < 0x1p-126 ? 0x1p-126 : ref, dtype);
}

/* The error bound es of a backward row's float32 sum of cols terms whose magnitudes add up to a. */
VR_FN double vr_sum_err(double cols, double a) { return VR_U * (2. + 4. * log2(cols + 1.) + sqrt(cols)) * a; }

/* The bounds of a backward output of dtype with finite reference ref, from the element's y, the
** row's sum s and its error es (vr_sum_err); logsm: log_softmax_backward. */
VR_FN void vr_bounds_bw(int dtype, int logsm, double ref, double y, double s, double es, double *lo, double *hi)
{
  double a;
  if (!logsm) a = fabs(y) * es * (1. + 0x1p-22) + 3. * VR_U * fabs(ref);
  else {
    const double e = exp(y), ay = e == 0. ? 0. : fabs(y);   /* exp(-inf) = 0: no 0 * inf */
    a = e * (fabs(s) * (5. + 3. * ay) * VR_U + es) + 0x1p-126 * fabs(s) + 2. * VR_U * fabs(ref);
  }
  *lo = vr_round(ref - a - 0x1p-148, dtype);
  *hi = vr_round(ref + a + 0x1p-148, dtype);
}

/* A softcap's tanh t (softcap.cu's tanh_cap) errs absolutely by this much beyond its argument's
** relative error. float32: tanhf's 2 ulp are relative and counted with the argument, so 0.
** 16-bit: t = 1 - 2 r, r = rcp(fl(1 + ex2(fl(a fl(2 log2e))))). The argument's 2 u, as E's
** relative 4 u |a|, and ex2's 4 u move t by (1 - t^2) / 2 of them: 0.9 u and 2 u; the add 2 u
** (2 / (1 + E) < 2); rcp's 4 u relative on 2 r < 2: 8 u; the last rounding 0.5 u. 13.4 u: 16.
** The loss-only kernels' r where |a k| <= 2 log2e (softcap_poly.h's sp_r, an odd polynomial by
** FMA): 3.05 u on t in float32 over that range (test_verify_ce.c), the argument's 0.9 u
** beside it: inside the same 16 u. A score cap t then errs by cap times it. */
VR_FN double vr_tanh_err(int dtype) { return dtype == 0 ? 0. : 16. * VR_U; }

/* The cross-entropy ops (ce.cu), from the float64 statistics of the row of z (the logits, or
** softcap * tanh(x / softcap)): max m, log sum ls = log(sum exp(z - m)), lse = m + ls.
**   lse: the sum's relative error erow (as above) becomes absolute; fl(logf) and the add put
**     (|m| + 2|ls| + 2) u on it; a softcap's tanh (2 ulp) and its two products 6|m| u, and
**     ez = cap vr_tanh_err absolute.
**   dx = fl(fl(a p - c - b[j == y]) k), p = ex2((z - lse) log2e): p errs relatively by the
**     argument's roundings and ex2.approx (8 + 2.5|z - lse| u), by lse's error, and by z's own
**     under a softcap (6|z| u + ez); ftz may give 0 below 2^-126. a = scale ((1 - eps) W + eps +
**     2 zl lse) errs by 4 u of itself and 2 zl scale lse_err; the subtractions by 2 u of each
**     term; k = 1 - (z / cap)^2 by 10 u absolute, and by 2 vr_tanh_err from t's error.
** The element rule is as above: round(ref - tol) <= o <= round(ref + tol).
*/
VR_FN double vr_ce_lse_err(int dtype, double m, double ls, double erow, double cap)
{
  return erow + VR_U * (fabs(m) + 2. * fabs(ls) + 2.) + (cap > 0. ? 6. * VR_U * fabs(m) + cap * vr_tanh_err(dtype) : 0.);
}

/* Bounds of dx with reference ref for z, given a (|a| of the row), p (float64), c and b (the
** label's term or 0), the row's lse and its error lerr, zl2 = |2 zl scale|, the softcap cap (0:
** none) and its factor k (1 without). */
VR_FN void vr_bounds_ce(int dtype, double ref, double z, double a, double p, double c, double b, double lse, double lerr,
                        double zl2, double cap, double k, double *lo, double *hi)
{
  const int capped = cap > 0.;
  const double te = vr_tanh_err(dtype);
  const double rel = VR_U * (12. + 2.5 * fabs(z - lse)) + lerr + (capped ? 6. * VR_U * fabs(z) + cap * te : 0.);
  const double g = fabs(a) * p * (1. + rel) + c + b;   /* |a p - c - b| at most */
  double tol = fabs(a) * (p * rel + VR_TINY) + zl2 * p * lerr + 2. * VR_U * g;
  tol = tol * k + (capped ? (10. * VR_U + 2. * te) * g : 0.) + 2. * VR_U * fabs(ref) + 0x1p-148;
  *lo = vr_round(ref - tol, dtype);
  *hi = vr_round(ref + tol, dtype);
}

/* The float32 loss's tolerance: wl = (1 - eps) W, lse's error lerr (plus, under a 16-bit
** softcap, the label's z's ez), the label's z[y], t the row's sum of z with error terr, eps, zl,
** cols. */
VR_FN double vr_ce_loss_tol(double wl, double lse, double lerr, double zy, double t, double terr, double eps,
                            double zl, double cols, double loss)
{
  return wl * (lerr + 2. * VR_U * (fabs(lse) + 2. * fabs(zy))) + eps * (lerr + (terr + 2. * VR_U * fabs(t)) / cols
         + 2. * VR_U * fabs(lse)) + zl * (2. * fabs(lse) * lerr + 3. * VR_U * lse * lse) + 4. * VR_U * fabs(loss);
}
