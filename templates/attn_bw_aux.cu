// attn_bw_aux.cu — the tuner's kernels for attention_softmax_backward (rendered inside aux.cu,
// after attn_aux.cu, whose mask constants, st_fill_attn and masked_logit it shares):
//   st_fill_attn_bw   fresh inputs: x as st_fill_attn_scores's, y the float64 masked softmax of
//                     their scores (scale and softcap; 0 where masked or for a row that sees
//                     nothing) rounded to the dtype, dy uniform in +-1 times a row scale of
//                     1e-3..1e3; masked x and dy NaN, so a kernel that reads one fails the check
//   st_check_attn_bw  every element of dx by verify_attn_bw.h's rule: masked ones exactly 0,
//                     visible ones within their bounds, never the poison
//   st_attn_bw_floor  the floor: the visible elements of y and dy (and of x under a softcap)
//                     read, every element of dx written (their sum, masked ones 0)
% include("verify_attn_bw.h")

extern "C" __global__ void __launch_bounds__(256)
st_fill_attn_bw(elem_t *x, elem_t *y, elem_t *dy, i64 rows, u64 seed, AttnParams p)
{
  __shared__ double sh[8];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const u64 hr = row_hash(seed, r), hd = mix(hr ^ 0xd1b54a32d192ed03ull);
    elem_t *xr = x + r * COLS;
    long long lo, hi;
    am_range(MASK, &p, (const int *)p.key_lengths, COLS, r, &lo, &hi);
    double m = -INF64, s = 0., part;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {   // each thread reads back only what it wrote
      store1(xr + c, masked_logit(hr, r, c, lo, hi));
      if (c >= lo && c < hi) m = fmax(m, vr_attn_z(load1(xr + c), p.scale, p.softcap, 0., &part));
    }
    m = block_fold<true>(m, sh);
    for (i64 c = lo + threadIdx.x; c < hi; c += 256) s += exp(vr_attn_z(load1(xr + c), p.scale, p.softcap, 0., &part) - m);
    s = block_fold<false>(s, sh);
    const float dscale = (float)(hd % 3 == 0 ? 1e-3 : hd % 3 == 1 ? 1. : 1e3);
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const bool seen = c >= lo && c < hi;
      const double o = seen ? exp(vr_attn_z(load1(xr + c), p.scale, p.softcap, 0., &part) - m) / s : 0.;
      store1(y + r * COLS + c, (float)o);
      const u64 h = mix(hd + (u64)c);
      store1(dy + r * COLS + c, seen ? dscale * ((float)(h >> 40) * (2.f / 16777216.f) - 1.f) : (float)NAN64);
    }
  }
}

// A failed element at index i counted, the first one kept.
__device__ __forceinline__ void tally(bool ok, i64 i, u64 *bad, u64 *first)
{
  if (ok) return;
  ++*bad;
  if (*first == ~0ull) *first = (u64)i;
}

extern "C" __global__ void __launch_bounds__(256)
st_check_attn_bw(const elem_t *x, const elem_t *y, const elem_t *dy, const elem_t *dx, i64 rows, AttnParams p, u32 poison,
                 CheckOut *res)
{
  __shared__ double sh[8];
  const int capped = p.softcap > 0.f;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const elem_t *xr = x + r * COLS, *yr = y + r * COLS, *dr = dy + r * COLS, *or_ = dx + r * COLS;
    long long lo, hi;
    am_range(MASK, &p, (const int *)p.key_lengths, COLS, r, &lo, &hi);
    double s = 0., a = 0.;
    for (i64 c = lo + threadIdx.x; c < hi; c += 256) {
      const double t = (double)load1(dr + c) * load1(yr + c);
      s += t, a += fabs(t);
    }
    s = block_fold<false>(s, sh);
    a = block_fold<false>(a, sh);
    const double es = vr_sum_err((double)(hi - lo), a);
    u64 bad = 0, first = ~0ull;
    double maxerr = 0.;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double o = load1(or_ + c);
      bool ok = bits1(or_ + c) != poison;
      if (c < lo || c >= hi) ok = ok && o == 0.;
      else {
        const double yv = load1(yr + c), g = yv * ((double)load1(dr + c) - s);
        double t2, blo, bhi;
        const double k = vr_attn_bw_k(capped ? (double)load1(xr + c) : 0., p.scale, p.softcap, &t2), ref = k * g;
        if (ref != ref) ok = ok && o != o;
        else {
          vr_bounds_attn_bw(DT, g, k, t2, p.scale, yv, es, capped, &blo, &bhi);
          ok = ok && blo <= o && o <= bhi;
          const double e = vr_ulps(o, ref, DT);
          if (e == e) maxerr = fmax(maxerr, e);
        }
      }
      tally(ok, r * COLS + c, &bad, &first);
    }
    report(res, bad, first, maxerr);
  }
}

// dx = y + dy (+ x under a softcap) over the visible keys, 0 over the masked, none of them read:
// 16-byte vectors where the rows are aligned to them. A vector's elements are indexed by
// constants only, so it stays in registers (a loop to a variable bound put 16-bit ones on the
// stack: bf16 took 590 us where f16 took 396, H100, 2026-11-26).
__device__ __forceinline__ float bw_floor_at(const elem_t *x, const elem_t *y, const elem_t *dy, i64 c, bool capped)
{
  return load1(y + c) + load1(dy + c) + (capped ? load1(x + c) : 0.f);
}

extern "C" __global__ void __launch_bounds__(256)
st_attn_bw_floor(const elem_t *x, const elem_t *y, const elem_t *dy, elem_t *dx, i64 rows, AttnParams p)
{
  const bool capped = p.softcap > 0.f;
  for (i64 b = blockIdx.x; b < rows * FPARTS; b += gridDim.x) {   // attn_aux.cu's parts
    const i64 r = b / FPARTS, begin = b % FPARTS * FSPAN, end = min((i64)COLS, begin + FSPAN), at = r * COLS;
    long long lo, hi;
    am_range(MASK, &p, (const int *)p.key_lengths, COLS, r, &lo, &hi);
    const bool vec = (u64)(y + at) % 16 == 0 && (u64)(dy + at) % 16 == 0 && (u64)(dx + at) % 16 == 0 && COLS % FV == 0;
    if (!vec) {
      for (i64 c = begin + threadIdx.x; c < end; c += 256) store1(dx + at + c, c >= lo && c < hi ? bw_floor_at(x, y, dy, at + c, capped) : 0.f);
      continue;
    }
    floor_vectors(dx + at, begin, end, [&](i64 c0) {
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      elem_t *v = (elem_t *)&w;
      if (c0 >= lo && c0 + FV <= hi) {   // whole vectors: one load of each input
        uint4 a = *(const uint4 *)(y + at + c0), b = *(const uint4 *)(dy + at + c0), e = make_uint4(0u, 0u, 0u, 0u);
        if (capped) e = *(const uint4 *)(x + at + c0);
        #pragma unroll
        for (int q = 0; q < FV; q++)
          store1(v + q, load1((elem_t *)&a + q) + load1((elem_t *)&b + q) + (capped ? load1((elem_t *)&e + q) : 0.f));
      } else if (c0 + FV > lo && c0 < hi) {   // a vector the mask cuts
        #pragma unroll
        for (int q = 0; q < FV; q++)
          if (c0 + q >= lo && c0 + q < hi) store1(v + q, bw_floor_at(x, y, dy, at + c0 + q, capped));
      }
      return w;
    });
  }
}
