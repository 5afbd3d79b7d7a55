// softcap.cu — tanh for a softcap, cap tanh(z / cap), in the kernels that take one (ce.cu,
// attn.cu, attn_bw.cu through attn_head.cu). Uses: dtype; types.cu's ex2 (include it first).

// 16-bit elements: tanh(a) = 1 - 2 / (1 + 2^(2 a log2e)) on ex2.approx and rcp.approx, two MUFU
// ops and three float ops where tanhf spends tens (the softcap kernels were compute-bound on it);
// it errs by 16 u absolute at most (verify.h, vr_tanh_err), far inside a 16-bit output's
// rounding. float32 elements keep tanhf. Past |a| ~ 44 the exp is 0 or inf and the result -1 or
// 1 exactly; a NaN stays a NaN. cap_rs takes r of a vector on the FMA pipe where |a| <= 1 (a
// polynomial, no MUFU op), for the kernels MUFU binds (ce.cu's loss-only statistics).
% if dtype ~= "f32" then
// r = 1 / (1 + 2^(a k)): with k = 2 log2e, tanh(a) = 1 - 2 r. A kernel given k = 2 log2e / cap
// and x may stay in r: z = cap (1 - 2 r), exp(z - m) = 2^((cap - m) log2e - 2 cap log2e r) (one
// FMA) and 1 - t^2 = 4 r (1 - r).
__device__ __forceinline__ float r_mufu(float s)
{
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.f + ex2(s)));
  return r;
}
__device__ __forceinline__ float cap_r(float a, float k) { return r_mufu(a * k); }

#define SP_FN __device__ __forceinline__
% include("softcap_poly.h")

// cap_r of N values at once, one branch for all: the polynomial where every |a k| is within its
// range (a softcapped row's logits are mostly under the cap), else the MUFU ops. MUFU binds these
// kernels (three ops an element a pass with the exp): this leaves the exp alone. A NaN takes the
// polynomial (fmaxf drops it) and stays a NaN; an infinity takes the MUFU ops.
template <int N>
__device__ __forceinline__ void cap_rs(const float *a, float k, float *r)
{
  float s[N], big = 0.f;
  #pragma unroll
  for (int i = 0; i < N; i++) s[i] = a[i] * k, big = fmaxf(big, fabsf(s[i]));
  if (big <= SP_SMAX) {   // softcap_poly.h's range
    #pragma unroll
    for (int i = 0; i < N; i++) r[i] = sp_r(s[i]);
  } else {
    #pragma unroll
    for (int i = 0; i < N; i++) r[i] = r_mufu(s[i]);
  }
}
% end

__device__ __forceinline__ float tanh_cap(float a)
{
% if dtype == "f32" then
  return tanhf(a);
% else
  return fmaf(-2.f, cap_r(a, 2.f * LOG2E), 1.f);
% end
}
