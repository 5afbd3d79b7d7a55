// check.cu — verification of a softmax output: every row is recomputed in float64 from the
// input and every element held to the rule of verify.h (between the float32 error bounds of
// the float64 reference, each rounded to the output dtype), NaN exactly where the reference is
// NaN, infinities equal, and never the poison pattern the output was filled with before the
// run; each row's sum (of exp(out) for log_softmax) must lie between the sums of its elements'
// bounds. One block of 256 threads per row. Same rule as tune_check_rows() in tuner/ref.c.
// Rendered inside aux.cu.

struct CheckOut {
  u64 bad;           // elements out of their bounds
  u64 first_bad;     // flat index of the first of them
  u64 bad_sums;      // rows whose sum is out of its bounds
  u32 max_err;       // bits of the largest |out - ref| in ulps of the dtype at ref, a float
  u32 max_sumdev;    // bits of the largest |sum - sum of the rounded reference|, a float
};

#define INF64 __longlong_as_double(0x7ff0000000000000ll)
#define NAN64 __longlong_as_double(0x7ff8000000000000ll)
#define VR_FN __device__ __forceinline__
% include("verify.h")

__device__ __forceinline__ bool is_inf(double v) { return fabs(v) == INF64; }

% if dtype == "f32" then
__device__ __forceinline__ u32 bits1(const elem_t *p) { return __float_as_uint(*p); }
% else
__device__ __forceinline__ u32 bits1(const elem_t *p) { return *p; }
% end
#define DT $(dtype == "f32" and 0 or dtype == "f16" and 1 or 2)   // verify.h's dtype code

__device__ __forceinline__ double warp_sum(double v)
{
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ double warp_max(double v)
{
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum (max_ == false) or max over the block; every thread gets it.
template <bool max_>
__device__ double block_fold(double v, double *sh)
{
  v = max_ ? warp_max(v) : warp_sum(v);
  if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
  __syncthreads();
  v = sh[0];
  for (int w = 1; w < 8; w++) v = max_ ? fmax(v, sh[w]) : v + sh[w];
  __syncthreads();
  return v;
}

// An element's output o against its reference (see verify.h); adds the row sums of the outputs,
// of the bounds and of the rounded reference (of their exps for log_softmax) into sums.
__device__ __forceinline__ bool check_elem(double o, bool poisoned, double ref, double d, double erow, double ls,
                                           double *sums, double *maxerr)
{
  if (poisoned) return false;   // never written
  if (ref != ref) return o != o;
  if (is_inf(ref)) return o == ref;
  double lo, hi;
  vr_bounds(DT, $(op == "log_softmax" and 1 or 0), ref, d, erow, ls, &lo, &hi);
  const double r = vr_round(ref, DT), e = vr_ulps(o, ref, DT);
% if op == "softmax" then
  sums[0] += o, sums[1] += lo, sums[2] += hi, sums[3] += r;
% else
  sums[0] += exp(o), sums[1] += exp(lo), sums[2] += exp(hi), sums[3] += exp(r);
% end
  if (e == e) *maxerr = fmax(*maxerr, e);
  return lo <= o && o <= hi;
}

// A thread's count of bad elements, the first of them and its largest error, into res.
__device__ __forceinline__ void report(CheckOut *res, u64 bad, u64 first, double maxerr)
{
  maxerr = warp_max(maxerr);
  if (bad) {
    atomicAdd(&res->bad, bad);
    atomicMin(&res->first_bad, first);
  }
  if (threadIdx.x % 32 == 0 && maxerr > 0.) atomicMax(&res->max_err, __float_as_uint((float)maxerr));
}

extern "C" __global__ void __launch_bounds__(256)
st_check(const elem_t *x, const elem_t *y, i64 rows, u32 poison, CheckOut *res)
{
  __shared__ double sh[8];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const elem_t *xr = x + r * COLS, *yr = y + r * COLS;
    double m = -INF64, nan = 0.;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double v = load1(xr + c);
      if (v != v) nan = 1.; else m = fmax(m, v);
    }
    m = block_fold<true>(m, sh);
    nan = block_fold<true>(nan, sh);
    double s = 0., h = 0.;   // the sum of exps, and of exp * |x - m| (verify.h's H, times s)
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double v = load1(xr + c);
      if (v == v && !is_inf(v)) s += exp(v - m), h += exp(v - m) * (m - v);
    }
    s = block_fold<false>(s, sh);
    h = block_fold<false>(h, sh);
    const bool nanrow = nan != 0. || is_inf(m);   // a NaN, all -inf, or +inf (inf - inf)
    const double ls = log(s), erow = vr_row_err((double)COLS, h / s);
    u64 bad = 0, first = ~0ull;
    double maxerr = 0., sums[4] = { 0., 0., 0., 0. };
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double v = load1(xr + c);
% if op == "softmax" then
      const double ref = nanrow ? NAN64 : is_inf(v) ? 0. : exp(v - m) / s;
% else
      const double ref = nanrow ? NAN64 : (v - m) - ls;
% end
      if (!check_elem(load1(yr + c), bits1(yr + c) == poison, ref, v - m, erow, ls, sums, &maxerr)) {
        bad++;
        if (first == ~0ull) first = (u64)(r * COLS + c);
      }
    }
    for (int k = 0; k < 4; k++) sums[k] = block_fold<false>(sums[k], sh);
    report(res, bad, first, maxerr);
    if (threadIdx.x == 0 && !nanrow) {
      const double slack = COLS * 0x1p-52 * sums[2];   // float64 rounding of the sums
      const double dev = fabs(sums[0] - sums[3]);
      atomicMax(&res->max_sumdev, __float_as_uint(dev == dev ? (float)dev : 3.4e38f));
      if (!(sums[1] - slack <= sums[0] && sums[0] <= sums[2] + slack)) atomicAdd(&res->bad_sums, 1ull);
    }
  }
}
