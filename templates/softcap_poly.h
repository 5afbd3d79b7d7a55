/* softcap_poly.h — a 16-bit softcap's r = 1 / (1 + 2^s) on the FMA pipe: 1/2 + s Q(s^2) for
** |s| <= SP_SMAX (2 log2e: a logit within the cap, tanh's argument in [-1, 1]). Q's 7 terms are
** lab/softcap_poly_fit.py's, rounded to float32; evaluated in float32 by FMA as below, r errs by
** 3.05 u (u = 2^-24) on t = 1 - 2 r over the range (800001 points), inside verify.h's vr_tanh_err.
** Included by softcap.cu (cap_rs: the loss-only kernel's r) and by test_verify_ce.c, which holds
** it to that error. SP_FN: a kernel's __device__ function, or static inline in C. */
#ifndef SP_FN
#define SP_FN static inline
#endif

#define SP_SMAX 2.88539008f

SP_FN float sp_r(float s)
{
  const float w = s * s;
  float q = -5.0151483e-10f;
  q = fmaf(q, w, 2.5782775e-08f);
  q = fmaf(q, w, -7.20407627e-07f);
  q = fmaf(q, w, 1.59950996e-05f);
  q = fmaf(q, w, -0.000332995201f);
  q = fmaf(q, w, 0.00693776319f);
  q = fmaf(q, w, -0.173286736f);
  return fmaf(s, q, 0.5f);
}
