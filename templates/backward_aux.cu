// backward_aux.cu — the tuner's kernels for the backward ops (rendered inside aux.cu, after fill.cu
// and check.cu, whose helpers it uses):
//   st_fill_bw   fresh inputs: y the softmax (log_softmax) of a row of fill.cu's logits, computed
//                in float64 and rounded to the dtype (so a NaN row, an all -inf row and some -inf
//                come as the forward gives them), dy uniform in +-1 times a row scale of 1e-3..1e3
//   st_check_bw  every element of dx against the float64 reference from the y and dy it read, by
//                verify.h's vr_bounds_bw; NaN exactly where the reference is NaN
//   st_add       c = a + b, 16-byte vectors: the floor of a kernel that reads two tensors and
//                writes a third, timed as the copy is for the forward ops
% local LOGSM = op == "log_softmax_backward" and 1 or 0

extern "C" __global__ void __launch_bounds__(256)
st_fill_bw(elem_t *y, elem_t *dy, i64 rows, u64 seed, int specials)
{
  __shared__ double sh[8];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const u64 hr = row_hash(seed, r), hd = mix(hr ^ 0xd1b54a32d192ed03ull);
    double m = -INF64, nan = 0., s = 0.;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double v = logit(hr, r, c, specials);
      if (v != v) nan = 1.; else m = fmax(m, v);
    }
    m = block_fold<true>(m, sh);
    nan = block_fold<true>(nan, sh);
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double v = logit(hr, r, c, specials);
      if (v == v && !is_inf(v)) s += exp(v - m);
    }
    s = block_fold<false>(s, sh);
    const bool nanrow = nan != 0. || is_inf(m);
    const float dscale = (float)(hd % 3 == 0 ? 1e-3 : hd % 3 == 1 ? 1. : 1e3);
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double v = logit(hr, r, c, specials);
% if LOGSM == 1 then
      const double o = nanrow ? NAN64 : (v - m) - log(s);
% else
      const double o = nanrow ? NAN64 : is_inf(v) ? 0. : exp(v - m) / s;
% end
      store1(y + r * COLS + c, (float)o);   // through float: one rounding for f32, two at most otherwise
      const u64 h = mix(hd + (u64)c);
      store1(dy + r * COLS + c, dscale * ((float)(h >> 40) * (2.f / 16777216.f) - 1.f));
    }
  }
}

extern "C" __global__ void __launch_bounds__(256)
st_check_bw(const elem_t *y, const elem_t *dy, const elem_t *dx, i64 rows, u32 poison, CheckOut *res)
{
  __shared__ double sh[8];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const elem_t *yr = y + r * COLS, *dr = dy + r * COLS, *xr = dx + r * COLS;
    double s = 0., a = 0.;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double t = $(LOGSM == 1 and "(double)load1(dr + c)" or "(double)load1(dr + c) * load1(yr + c)");
      s += t, a += fabs(t);
    }
    s = block_fold<false>(s, sh);
    a = block_fold<false>(a, sh);
    const double es = vr_sum_err((double)COLS, a);
    u64 bad = 0, first = ~0ull;
    double maxerr = 0.;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double yv = load1(yr + c), dv = load1(dr + c), o = load1(xr + c);
% if LOGSM == 1 then
      const double ref = dv - exp(yv) * s;
% else
      const double ref = yv * (dv - s);
% end
      bool ok;
      if (bits1(xr + c) == poison) ok = false;   // never written
      else if (ref != ref) ok = o != o;
      else if (is_inf(ref)) ok = o == ref;
      else {
        double lo, hi;
        vr_bounds_bw(DT, $(LOGSM), ref, yv, s, es, &lo, &hi);
        const double e = vr_ulps(o, ref, DT);
        if (e == e) maxerr = fmax(maxerr, e);
        ok = lo <= o && o <= hi;
      }
      if (!ok) {
        bad++;
        if (first == ~0ull) first = (u64)(r * COLS + c);
      }
    }
    report(res, bad, first, maxerr);
  }
}

// c = a + b over n elements: 4 vectors of 16 bytes a thread from each input, the scalar tail by
// the first block.
% local PER = 16 // es
extern "C" __global__ void __launch_bounds__(256)
st_add(const elem_t *a, const elem_t *b, elem_t *c, i64 n)
{
  const i64 nv = n / $(PER);
  const i64 base = (i64)blockIdx.x * 1024 + threadIdx.x;
  uint4 va[4], vb[4];
  #pragma unroll
  for (int i = 0; i < 4; i++)
    if (base + i * 256 < nv) va[i] = ((const uint4 *)a)[base + i * 256], vb[i] = ((const uint4 *)b)[base + i * 256];
  #pragma unroll
  for (int i = 0; i < 4; i++)
    if (base + i * 256 < nv) {
      elem_t *pa = (elem_t *)&va[i];
      const elem_t *pb = (const elem_t *)&vb[i];
      #pragma unroll
      for (int k = 0; k < $(PER); k++) store1(pa + k, load1(pa + k) + load1(pb + k));
      ((uint4 *)c)[base + i * 256] = va[i];
    }
  if (blockIdx.x == 0 && threadIdx.x < n - nv * $(PER)) {
    const i64 k = nv * $(PER) + threadIdx.x;
    store1(c + k, load1(a + k) + load1(b + k));
  }
}
