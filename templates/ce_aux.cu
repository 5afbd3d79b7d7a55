// ce_aux.cu — the tuner's kernels for the cross-entropy ops (rendered inside aux.cu, after fill.cu
// and check.cu, whose helpers it uses); the logits come from st_fill:
//   st_fill_ce    labels uniform over the columns, one row in 16 labelled ignore_index, and class
//                 weights uniform in [0.5, 2)
//   st_check_ce   loss, lse and every element of dx against the float64 reference from the logits
//                 and labels, by verify.h's vr_ce_* rules; ignored rows exactly 0; a bad label NaN
//   st_read_rows  the loss-only op's floor: every byte of the logits read once (16-byte loads of
//                 the flat tensor) and one float a row written
% include("ce_params.h")
% local LOSS_ONLY = op == "cross_entropy_loss"

extern "C" __global__ void __launch_bounds__(256)
st_fill_ce(void *labels, float *weight, i64 rows, u64 seed, CeParams p)
{
  for (i64 i = blockIdx.x * 256ll + threadIdx.x; i < rows || i < COLS; i += gridDim.x * 256ll) {
    const u64 h = mix(seed ^ mix((u64)i * 0x9e3779b97f4a7c15ull + 7));
    if (i < rows) {
      const i64 y = (h >> 32) % 16 == 0 ? p.ignore : (i64)(h % COLS);
      if (p.labels64) ((i64 *)labels)[i] = y;
      else ((int *)labels)[i] = (int)y;
    }
    if (i < COLS && weight) weight[i] = 0.5f + 1.5f * (float)(h >> 40) / 16777216.f;
  }
}

__device__ __forceinline__ double zof(double x, double cap) { return cap > 0. ? cap * tanh(x / cap) : x; }

extern "C" __global__ void __launch_bounds__(256)
st_check_ce(const elem_t *x, const void *labels, const elem_t *dx, const float *loss, const float *lse, i64 rows,
            CeParams p, u32 poison, CheckOut *res)
{
  __shared__ double sh[8];
  const double cap = p.softcap;
  const int capped = cap > 0.;
  const double ez = capped ? cap * vr_tanh_err(DT) : 0.;   // a softcapped z's absolute error
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const elem_t *xr = x + r * p.stride;
    double m = -INF64;
    for (i64 c = threadIdx.x; c < COLS; c += 256) m = fmax(m, zof(load1(xr + c), cap));
    m = block_fold<true>(m, sh);
    double s = 0., h = 0., t = 0., ta = 0.;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double z = zof(load1(xr + c), cap);
      if (!is_inf(z)) s += exp(z - m), h += exp(z - m) * (m - z), t += z, ta += fabs(z);
      else t += z;
    }
    s = block_fold<false>(s, sh);
    h = block_fold<false>(h, sh);
    t = block_fold<false>(t, sh);
    ta = block_fold<false>(ta, sh);
    const double ls = log(s), lref = m + ls, lerr = vr_ce_lse_err(DT, m, ls, vr_row_err((double)COLS, h / s), cap);
    const i64 y = label_of(p, labels, r);
    const bool ignored = y == p.ignore, badl = !ignored && (y < 0 || y >= COLS), valid = !ignored && !badl;
    const double w = valid ? (p.weight ? (double)((const float *)p.weight)[y] : 1.) : 0.;
    const double scale = p.scale ? (double)*(const float *)p.scale : 1., eps = p.smoothing, zl = p.zloss;
    const double a = valid ? scale * ((1. - eps) * w + eps + 2. * zl * lref) : 0., c = valid ? scale * eps / COLS : 0.;
    const double b = scale * (1. - eps) * w;
    u64 bad = 0, first = ~0ull;
    double maxerr = 0.;
% if not LOSS_ONLY then
    const elem_t *gr = dx + r * COLS;
    for (i64 j = threadIdx.x; j < COLS; j += 256) {
      const double z = zof(load1(xr + j), cap), pj = exp(z - lref), k = capped ? 1. - (z / cap) * (z / cap) : 1.;
      const double bj = j == y ? b : 0., ref = (a * pj - c - bj) * k;
      const double o = load1(gr + j);
      bool ok;
      if (!valid) ok = bits1(gr + j) != poison && o == 0.;
      else {
        double lo, hi;
        vr_bounds_ce(DT, ref, z, a, pj, c, bj, lref, lerr, fabs(2. * zl * scale), cap, k, &lo, &hi);
        ok = bits1(gr + j) != poison && lo <= o && o <= hi;
        const double e = vr_ulps(o, ref, DT);
        if (e == e) maxerr = fmax(maxerr, e);
      }
      if (!ok) {
        bad++;
        if (first == ~0ull) first = (u64)(r * COLS + j);
      }
    }
% end
    report(res, bad, first, maxerr);
    if (threadIdx.x == 0) {
      const double zy = valid ? zof(load1(xr + y), cap) : 0.;
      const double want = ignored ? 0. : badl ? NAN64 : (1. - eps) * w * (lref - zy) + eps * (lref - t / COLS) + zl * lref * lref;
      const double tol = valid ? vr_ce_loss_tol((1. - eps) * w, lref, lerr + ez, zy, t, vr_sum_err((double)COLS, ta) +
                                                (capped ? 3. * VR_U * ta + COLS * ez : 0.), eps, zl, (double)COLS, want) : 0.;
      const double got = loss[r], dev = fabs(got - want);
      const bool okl = badl ? got != got : dev <= tol;
      const bool okse = fabs((double)lse[r] - lref) <= lerr + 2. * VR_U * fabs(lref);
      if (valid && dev == dev) atomicMax(&res->max_sumdev, __float_as_uint((float)dev));
      if (!okl || !okse) atomicAdd(&res->bad_sums, 1ull);
    }
  }
}

extern "C" __global__ void __launch_bounds__(256)
st_read_rows(const uint4 *x, float *out, i64 rows, i64 n16)
{
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const i64 b = n16 * r / rows, e = n16 * (r + 1) / rows;
    u32 acc = 0;
    for (i64 i = b + threadIdx.x; i < e; i += 256) {
      const uint4 v = x[i];
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    __shared__ u32 part[8];
    for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) out[r] = __uint_as_float((part[0] ^ part[1] ^ part[2] ^ part[3] ^ part[4] ^ part[5] ^ part[6] ^ part[7]) & 0x3fffffffu);
    __syncthreads();
  }
}
