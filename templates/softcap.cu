// softcap.cu — tanh for a softcap, cap tanh(z / cap), in the kernels that take one (ce.cu,
// attn.cu, attn_bw.cu through attn_head.cu). Uses: dtype; types.cu's ex2 (include it first).

// 16-bit elements: tanh(a) = 1 - 2 / (1 + 2^(2 a log2e)) on ex2.approx and rcp.approx, two MUFU
// ops and three float ops where tanhf spends tens (the softcap kernels were compute-bound on it);
// it errs by 16 u absolute at most (verify.h, vr_tanh_err), far inside a 16-bit output's
// rounding. float32 elements keep tanhf. Past |a| ~ 44 the exp is 0 or inf and the result -1 or
// 1 exactly; a NaN stays a NaN.
__device__ __forceinline__ float tanh_cap(float a)
{
% if dtype == "f32" then
  return tanhf(a);
% else
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.f + ex2(a * (2.f * LOG2E))));
  return fmaf(-2.f, r, 1.f);
% end
}
