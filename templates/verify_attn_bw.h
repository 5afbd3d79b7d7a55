/*
** verify_attn_bw.h — attention_softmax_backward's verification rule (verify.h has the rest), for
** the GPU check (attn_bw_aux.cu) and the CPU check (tuner/attn_bw.c). Plain C that CUDA also
** compiles (VR_FN, as verify.h's). Needs verify.h.
**
** From the inputs x, y, dy as the kernel reads them (exact in float64), over a row's visible keys
** [lo, hi) (attn_mask.h): s = sum dy y, es = vr_sum_err(hi - lo, sum |dy y|) (the float32 sum
** errs as softmax_backward's), g = y (dy - s), k = scale (1 - t^2) with t = tanh(scale x / cap)
** under a softcap (k = scale without), ref = k g. The kernel computes fl(fl(y fl(dy - s32)) k32):
**   g as softmax_backward's (verify.h): |y| es (1 + 2u) + 3 u |g|, then times |k| (and 2^-148
**     for a subnormal g, times |k| too);
**   k32: t = tanhf(fl(fl(x scale) fl(1 / cap))) errs relatively by the argument's 3 u, passed on
**     at most 1:1 (|a tanh'(a) / tanh(a)| <= 1), and tanhf's 2 ulp: 7 u; t^2 by 15 u; 1 - t^2
**     and the product by scale one rounding each: |scale| (16 t^2 + 2) u absolute, times |g|;
**     16-bit kernels' tanh errs by vr_tanh_err absolute more (verify.h): t^2 by 2 |t| of it;
**   the last product: 1 u |ref|.
** Masked elements must be exactly 0 (not read: the tuner fills masked dy and x with NaN, so a
** kernel that reads one makes its row NaN); a NaN reference NaN.
*/

/* k = scale (1 - tanh(scale x / cap)^2), or scale without a softcap (cap 0); *t2 the tanh^2. */
VR_FN double vr_attn_bw_k(double x, double scale, double cap, double *t2)
{
  const double t = cap > 0. ? tanh(scale * x / cap) : 0.;
  *t2 = t * t;
  return scale * (1. - *t2);
}

/* The bounds of dx = k g for an element with y, t2 (vr_attn_bw_k), the row's sum error es. */
VR_FN void vr_bounds_attn_bw(int dtype, double g, double k, double t2, double scale, double y, double es, int capped,
                             double *lo, double *hi)
{
  const double ref = k * g;
  double a = fabs(k) * (fabs(y) * es * (1. + 0x1p-22) + 3. * VR_U * fabs(g) + 0x1p-148) * (1. + 0x1p-20) + VR_U * fabs(ref);
  if (capped) a += fabs(scale * g) * ((16. * t2 + 2.) * VR_U + 2. * sqrt(t2) * vr_tanh_err(dtype));
  *lo = vr_round(ref - a - 0x1p-148, dtype);
  *hi = vr_round(ref + a + 0x1p-148, dtype);
}
