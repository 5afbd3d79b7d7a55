// types.cu — element type, scalar conversions and the guarded exp, shared by every kernel
// (softmax families, fill, check). Uses: dtype, ctype, COLSX (the width: a literal, or the
// name of the kernel's width argument). Needs no headers, so NVRTC
// compiles it anywhere with no include path.
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef $(ctype) elem_t;

#define COLS $(COLSX)
#define NEG_INF __int_as_float(0xff800000)
#define LOG2E 1.4426950408889634f

% if dtype == "f32" then
__device__ __forceinline__ float load1(const elem_t *p) { return *p; }
__device__ __forceinline__ void store1(elem_t *p, float f) { *p = f; }
% elseif dtype == "bf16" then
__device__ __forceinline__ float load1(const elem_t *p) { return __uint_as_float((u32)*p << 16); }
%   if has.bf16 then
__device__ __forceinline__ void store1(elem_t *p, float f)
{
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  *p = h;
}
%   else
// f to bf16 bits, to nearest even by integer operations (no bf16 conversion before sm_80), as
// cvt.rn.bf16.f32 gives them; a NaN stays a NaN (made quiet, its sign kept).
__device__ __forceinline__ u32 bf16_bits(float f)
{
  const u32 u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
__device__ __forceinline__ void store1(elem_t *p, float f) { *p = (u16)bf16_bits(f); }
%   end
% else
__device__ __forceinline__ float load1(const elem_t *p)
{
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p));
  return f;
}
__device__ __forceinline__ void store1(elem_t *p, float f)
{
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  *p = h;
}
% end

__device__ __forceinline__ float ex2(float x)
{
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// exp(a - m) where m is not -inf (a max of real values): a = -inf then gives 0 with no guard.
__device__ __forceinline__ float ex_finite(float a, float m) { return ex2((a - m) * LOG2E); }

// exp(a - m), but 0 where a is -inf: an all -inf row then gives 0/0 = NaN as torch does,
// and a NaN anywhere in a row makes its sum, and so the whole row, NaN.
__device__ __forceinline__ float ex(float a, float m)
{
  return a == NEG_INF ? 0.f : ex_finite(a, m);
}
