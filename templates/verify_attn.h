/*
** verify_attn.h — attention_softmax's part of the verification rule (verify.h has the rest), for
** the GPU check (attn_aux.cu) and the CPU check (tuner/ref_attn.c). Plain C that CUDA also
** compiles (VR_FN, as verify.h's).
**
** The float64 reference of a visible element's score from its input x as loaded (exact), the
** float scale and softcap cap the kernel reads and the bias b (-slope |d - k| from the float
** slope, exact in float64): z = c + b, c = cap tanh(scale x / cap) (scale x without a softcap).
** The kernel's float32 z errs from it by at most
**   c: without a softcap, exactly |fl(c) - c|: x (24 bits at most) times the float scale is
**      exact in float64, so fl(c) is the kernel's product (an FMA with what follows only drops
**      that rounding); 0 for a scale of a power of 2. Past float's range u |c| (the kernel's
**      score is infinite there). Not u |c| throughout: at the fill's |x| ~ 1e4 that is 1e4 u of
**      every output's relative error, twice (below), for a rounding that may not happen.
**      Under a softcap the argument fl(fl(x scale) fl(1 / cap)) 3 u relative, tanh passing at
**      most the argument's relative error on (|a tanh'(a) / tanh(a)| <= 1), tanhf's own 2 ulp
**      (4 u) and the product by cap 1 u: 8 u |c|; 16-bit kernels' tanh adds cap vr_tanh_err
**      absolute (verify.h);
**   b: |d - k| to float (exact below 2^24, else 1 u) and the product by the slope: 2 u |b|;
**   the add: 1 u |z|; none where b is 0 (no bias, or the diagonal's key): fl(c) - 0 is exact.
** An output p_j = exp(z_j) / sum_i exp(z_i) then errs relatively by ez_j + sum_i p_i ez_i beyond
** the softmax's own error: verify.h's vr_bounds with erow + ez_j + hz for the row error, where
** erow = vr_row_err(n, H) over the row's n visible elements and hz = sum_i ref_i ez_i.
** Masked elements, and those whose score is -inf, must be exactly 0; a row that sees no finite
** score all 0; a row with a NaN or +inf visible score NaN throughout (masked elements too).
*/

/* The float64 score of input x (before the mask): scale, softcap (cap > 0), bias b added;
** *c gets the part before the bias. */
VR_FN double vr_attn_z(double x, double scale, double cap, double b, double *c)
{
  *c = cap > 0. ? cap * tanh(scale * x / cap) : scale * x;
  return *c + b;
}

/* The float32 error bound of a score z = c + b (above) of dtype's kernel, softcap cap (0: none). */
VR_FN double vr_attn_zerr(int dtype, double z, double c, double b, double cap)
{
  const double ec = cap > 0. ? 8. * VR_U * fabs(c) + cap * vr_tanh_err(dtype)
                  : fabs(c) > 0x1.fffffep127 ? VR_U * fabs(c) : fabs((double)(float)c - c);
  return ec + (b != 0. ? VR_U * (2. * fabs(b) + fabs(z)) : 0.);
}
