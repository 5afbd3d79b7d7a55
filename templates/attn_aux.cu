// attn_aux.cu — the tuner's kernels for attention_softmax (rendered inside aux.cu, after fill.cu
// and check.cu, whose helpers it uses):
//   st_fill_attn   the key lengths [B] (timing: those the tuner times by) and ALiBi slopes [H]
//                  (attn_mask.h's am_fill_*, am_time_length);
//   st_fill_attn_scores  the scores: fill.cu's finite logits where visible, NaN where a
//                  structured mask (causal, window, key padding) hides them, so a kernel that
//                  reads one and lets it through fails the check
//   st_fill_attn_bias  the bias tensor [Q, K], broadcast over B and H
//   st_check_attn  every element against the float64 reference by verify_attn.h's rule: masked
//                  ones exactly 0, visible ones within their bounds, never the poison
//   st_attn_floor  the floor: the visible elements read, every element written (masked ones as
//                  0), in 16-byte vectors where rows are aligned to them
% include("attn_params.h")
#define AM_FN __device__ __forceinline__
% include("attn_mask.h")
% include("verify_attn.h")
#define MASK $((mask:find("causal") and 1 or 0) + (mask:find("window") and 2 or 0) + (mask:find("padding") and 4 or 0))
#define ALIBI $(bias == "alibi" and 1 or 0)
#define TENSOR $(bias == "tensor" and 1 or 0)

extern "C" __global__ void __launch_bounds__(256)
st_fill_attn(int *lengths, float *slopes, i64 batches, i64 heads, int timing)
{
  for (i64 i = blockIdx.x * 256ll + threadIdx.x; i < batches || i < heads; i += gridDim.x * 256ll) {
    if (i < batches) lengths[i] = timing ? am_time_length(i, COLS) : am_fill_length(i, COLS);
    if (i < heads) slopes[i] = am_fill_slope(i, heads);
  }
}

// Score c of row r (hash hr) whose visible keys are [lo, hi): a logit without specials, else NaN.
__device__ __forceinline__ float masked_logit(u64 hr, i64 r, i64 c, long long lo, long long hi)
{
  return c >= lo && c < hi ? logit(hr, r, c, 0) : (float)NAN64;
}

extern "C" __global__ void __launch_bounds__(256)
st_fill_attn_scores(elem_t *x, i64 rows, u64 seed, AttnParams p)
{
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const u64 hr = row_hash(seed, r);
    long long lo, hi;
    am_range(MASK, &p, (const int *)p.key_lengths, COLS, r, &lo, &hi);
    for (i64 c = threadIdx.x; c < COLS; c += 256) store1(x + r * COLS + c, masked_logit(hr, r, c, lo, hi));
  }
}

// The bias tensor [Q, K] (am_fill_bias), n = Q*K elements.
extern "C" __global__ void __launch_bounds__(256)
st_fill_attn_bias(float *t, i64 n)
{
  for (i64 i = blockIdx.x * 256ll + threadIdx.x; i < n; i += gridDim.x * 256ll) t[i] = am_fill_bias(i, COLS);
}

// Row r's score at key c (float64) and its part before the bias, from input v.
__device__ __forceinline__ double attn_z(const AttnParams &p, i64 r, long long d, i64 c, double v, double *part)
{
  const double b = ALIBI ? -(double)((const float *)p.slopes)[r / p.q % p.h] * fabs((double)(d - c))
                   : TENSOR ? (double)((const float *)p.bias)[am_bias_row(&p, r) + c] : 0.;
  return vr_attn_z(v, p.scale, p.softcap, b, part);
}

extern "C" __global__ void __launch_bounds__(256)
st_check_attn(const elem_t *x, const elem_t *y, i64 rows, AttnParams p, u32 poison, CheckOut *res)
{
  __shared__ double sh[8];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const elem_t *xr = x + r * COLS, *yr = y + r * COLS;
    long long lo, hi;
    const long long d = am_range(MASK, &p, (const int *)p.key_lengths, COLS, r, &lo, &hi);
    double m = -INF64, nan = 0., part;
    for (i64 c = lo + threadIdx.x; c < hi; c += 256) {
      const double z = attn_z(p, r, d, c, load1(xr + c), &part);
      if (z != z) nan = 1.; else m = fmax(m, z);
    }
    m = block_fold<true>(m, sh);
    nan = block_fold<true>(nan, sh);
    double s = 0., h = 0., hz = 0.;   // sum exp(z - m), and weighted by |z - m| and by z's error
    for (i64 c = lo + threadIdx.x; c < hi; c += 256) {
      const double z = attn_z(p, r, d, c, load1(xr + c), &part), w = is_inf(z) ? 0. : exp(z - m);
      if (w > 0.) s += w, h += w * (m - z), hz += w * vr_attn_zerr(DT, z, part, z - part, p.softcap);
    }
    s = block_fold<false>(s, sh);
    h = block_fold<false>(h, sh);
    hz = block_fold<false>(hz, sh);
    const bool nanrow = nan != 0. || m == INF64, empty = m == -INF64;
    const double erow = vr_row_err((double)(hi - lo), h / s) + hz / s;
    u64 bad = 0, first = ~0ull;
    double maxerr = 0.;
    for (i64 c = threadIdx.x; c < COLS; c += 256) {
      const double o = load1(yr + c);
      bool ok = bits1(yr + c) != poison;
      if (nanrow) ok = ok && o != o;
      else if (empty || c < lo || c >= hi) ok = ok && o == 0.;
      else {
        const double z = attn_z(p, r, d, c, load1(xr + c), &part), ref = is_inf(z) ? 0. : exp(z - m) / s;
        double blo, bhi;
        vr_bounds(DT, 0, ref, z - m, erow + vr_attn_zerr(DT, z, part, z - part, p.softcap), 0., &blo, &bhi);
        ok = ok && blo <= o && o <= bhi;
        const double e = vr_ulps(o, ref, DT);
        if (e == e) maxerr = fmax(maxerr, e);
      }
      if (!ok) {
        bad++;
        if (first == ~0ull) first = (u64)(r * COLS + c);
      }
    }
    report(res, bad, first, maxerr);
  }
}

#define FV $(16 // es)   // elements in 16 bytes
#define FU 4               // vectors in flight a thread in the floors
#define FSPAN (256 * FV * FU)   // columns of a floor block: each thread's FU vectors once
#define FPARTS ((COLS + FSPAN - 1) / FSPAN)

// The floors' blocks: one a part of FSPAN columns of a row (block b: row b / FPARTS), as many as
// the launch gives, looping over the rest. Each reads its vectors (f(c), the value of the vector at
// column c, zeros where masked) before it writes any. A block a row, one vector a thread at a time,
// left a thread one load in flight and the forward floor about 15% slower than
// bench/attention_softmax.py's Triton one (which gives each (row, 4096 columns) a program).
template <class F>
__device__ __forceinline__ void floor_vectors(elem_t *y, i64 begin, i64 end, F f)
{
  uint4 v[FU];
  #pragma unroll
  for (int u = 0; u < FU; u++) {
    const i64 c = begin + (u * 256 + threadIdx.x) * (i64)FV;
    v[u] = c < end ? f(c) : make_uint4(0u, 0u, 0u, 0u);
  }
  #pragma unroll
  for (int u = 0; u < FU; u++) {
    const i64 c = begin + (u * 256 + threadIdx.x) * (i64)FV;
    if (c < end) *(uint4 *)(y + c) = v[u];
  }
}

extern "C" __global__ void __launch_bounds__(256)
st_attn_floor(const elem_t *x, elem_t *y, i64 rows, AttnParams p)
{
  for (i64 b = blockIdx.x; b < rows * FPARTS; b += gridDim.x) {
    const i64 r = b / FPARTS, begin = b % FPARTS * FSPAN, end = min((i64)COLS, begin + FSPAN);
    const elem_t *xr = x + r * COLS;
    elem_t *yr = y + r * COLS;
    long long lo, hi;
    am_range(MASK, &p, (const int *)p.key_lengths, COLS, r, &lo, &hi);
    if ((u64)xr % 16 == 0 && (u64)yr % 16 == 0 && COLS % FV == 0) {
      floor_vectors(yr, begin, end, [&](i64 c0) {
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (c0 >= lo && c0 + FV <= hi) v = *(const uint4 *)(xr + c0);
        else if (c0 + FV > lo && c0 < hi)
          for (int q = 0; q < FV; q++) ((elem_t *)&v)[q] = c0 + q >= lo && c0 + q < hi ? xr[c0 + q] : (elem_t)0;
        return v;
      });
    } else {
      for (i64 c = begin + threadIdx.x; c < end; c += 256) yr[c] = c >= lo && c < hi ? xr[c] : (elem_t)0;
    }
  }
}
