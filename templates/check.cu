// check.cu — verification of a softmax output: every row is recomputed in float64 from the
// input and every element compared with it, |out - ref| <= rtol*|ref| + atol, NaN exactly
// where the reference is NaN, infinities equal, and never the poison pattern the output was
// filled with before the run; each row's sum (of exp(out) for log_softmax) must be 1 within
// stol. One block of 256 threads per row. Same rule as tune_check_rows() in tuner/ref.c.
// Rendered inside aux.cu.

struct CheckOut {
  u64 bad;           // elements out of tolerance
  u64 first_bad;     // flat index of the first of them
  u64 bad_sums;      // rows whose sum is off by more than stol
  u32 max_err;       // bits of the largest |out - ref| / (|ref| + atol/rtol), a float
  u32 max_sumdev;    // bits of the largest |sum - 1|, a float
};

#define INF64 __longlong_as_double(0x7ff0000000000000ll)
#define NAN64 __longlong_as_double(0x7ff8000000000000ll)

__device__ __forceinline__ bool is_inf(double v) { return fabs(v) == INF64; }
% if dtype == "f32" then
__device__ __forceinline__ u32 bits1(const elem_t *p) { return __float_as_uint(*p); }
% else
__device__ __forceinline__ u32 bits1(const elem_t *p) { return *p; }
% end

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

extern "C" __global__ void __launch_bounds__(256)
st_check(const elem_t *x, const elem_t *y, i64 rows, double rtol, double atol, double stol, u32 poison, CheckOut *res)
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
    double s = 0.;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double v = load1(xr + c);
      if (v == v && !is_inf(v)) s += exp(v - m);
    }
    s = block_fold<false>(s, sh);
    const bool nanrow = nan != 0. || is_inf(m);   // a NaN, all -inf, or +inf (inf - inf)
    const double ls = log(s);
    u64 bad = 0, first = ~0ull;
    double maxerr = 0., sum = 0.;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double o = load1(yr + c);
      double ref = NAN64;
      if (!nanrow) {
        const double v = load1(xr + c);
% if op == "softmax" then
        ref = is_inf(v) ? 0. : exp(v - m) / s;
        sum += o;
% else
        ref = (v - m) - ls;
        sum += exp(o);
% end
      }
      bool ok;
      if (bits1(yr + c) == poison) ok = false;   // never written
      else if (ref != ref) ok = o != o;
      else if (is_inf(ref)) ok = o == ref;
      else {
        const double d = fabs(o - ref);
        ok = d <= rtol * fabs(ref) + atol;
        if (d == d) maxerr = fmax(maxerr, d / (fabs(ref) + atol / rtol));
      }
      if (!ok) {
        bad++;
        if (first == ~0ull) first = (u64)(r * COLS + c);
      }
    }
    sum = block_fold<false>(sum, sh);
    maxerr = warp_max(maxerr);
    if (bad) {
      atomicAdd(&res->bad, bad);
      atomicMin(&res->first_bad, first);
    }
    if (threadIdx.x % 32 == 0 && maxerr > 0.) atomicMax(&res->max_err, __float_as_uint((float)maxerr));
    if (threadIdx.x == 0 && !nanrow) {
      const double dev = fabs(sum - 1.);
      atomicMax(&res->max_sumdev, __float_as_uint(dev == dev ? (float)dev : 3.4e38f));
      if (!(dev <= stol)) atomicAdd(&res->bad_sums, 1ull);
    }
  }
}
