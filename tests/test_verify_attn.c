/*
** test_verify_attn.c — the verifier of attention_softmax (verify_attn.h with verify.h's
** vr_bounds, tuner/attn.c's tune_check_rows_attn): right outputs pass and wrong ones do not, for
** every dtype, every mask kind, with and without ALiBi, a bias tensor (-inf in places, a query
** row all -inf) and a softcap, with a scale, on scores of
** the sizes attention meets (|x| up to 30, some rows up to 300), Q > K rows that see nothing, and
** padding with key lengths 0..K (the tuner's), alone and with causal and window (their
** ranges' intersection, checked row by row); and the key lengths the tuner times by
** (am_time_length: within [K/4, K], spread over it).
**   fill:  test_gpu --attn's float32 problems on scores drawn as the tuner's fill (fill.cu) draws
**          them (rows of |x| up to 3, 12, 40 and 1000, and 4 around +-1e4): both right outputs
**          pass, and every row's middle visible element moved by 8 ulps and 2^-12 of itself (the
**          GPU selftest's step 1) is caught. A score's error charged as u |z| throughout let
**          2^-12 pass in the +-1e4 rows, where the scores are exact.
**   right: the float64 reference rounded to the dtype; the kernels' float32 arithmetic (attn.cu's
**          steps: x * scale, cap * tanh(z / cap) (verify_util.h's tanh_cap: tanhf, or the 16-bit
**          form at its bound), the bias subtracted, exps by expf of the difference to the row's
**          max, a pairwise sum, 1 / sum), rounded once
**   wrong: one visible element 3 ulps of a 16-bit dtype off (2^-14 of itself for f32), one
**          poisoned, one masked element the dtype's smallest positive value
**   test_verify_attn      the CPU check, and the GPU check kernel (attn_aux.cu with verify.h
**                         and verify_attn.h) compiles with NVRTC for each mask kind; label cpu
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "ref.h"
#include "tune.h"
#include "verify_util.h"
#include "attn_mask.h"

enum { RIGHT_ROUNDED, RIGHT_F32, WRONG_ULPS, WRONG_POISON, WRONG_MASKED, NMAKERS };
static const char *const MAKER[NMAKERS] = { "rounded reference", "float32 math", "one element off", "one poisoned",
                                            "a masked element nonzero" };

typedef struct Prob { int64_t b, h, q, k; int dtype, mask, bias; tune_AttnOptions o; int fill; } Prob;

/* One row's outputs as the kernels compute them: float32 steps, rounded once to the dtype. */
static void f32_row(const Prob *pb, const tune_AttnRef *o, const double *x, int64_t row, void *out)
{
  long long lo, hi;
  const long long d = am_range(o->mask, &o->p, o->lengths, pb->k, row, &lo, &hi);
  float *z = malloc((size_t)pb->k * sizeof *z), m = -INFINITY;
  for (int64_t c = 0; c < pb->k; c++) {
    float v = (float)x[c] * o->p.scale;
    if (o->p.softcap > 0.f) v = o->p.softcap * tanh_cap(v * (1.f / o->p.softcap), pb->dtype);
    if (o->slopes) v -= o->slopes[row / o->p.q % o->p.h] * fabsf((float)(d - c));
    if (o->bias && c >= lo && c < hi) v += o->bias[am_bias_row(&o->p, row) + c];
    z[c] = c >= lo && c < hi ? v : -INFINITY;
    m = z[c] > m ? z[c] : m;
  }
  for (int64_t c = 0; c < pb->k; c++) z[c] = m == -INFINITY || z[c] == -INFINITY ? 0.f : expf(z[c] - m);
  const float s = tree_sum(z, pb->k), f = m == -INFINITY ? 0.f : 1.f / s;
  for (int64_t c = 0; c < pb->k; c++) tune_store_elem(out, pb->dtype, row * pb->k + c, (double)(z[c] * f));
  free(z);
}

/* A score as fill.cu draws it: the row's kind (from its first draw) sets the scale and offset. */
static double fill_score(int64_t i, int64_t cols, double *kind_draw)
{
  static const double SCALE[8] = { 3., 3., 3., 12., 40., 1000., 4., 4. }, OFFSET[8] = { 0, 0, 0, 0, 0, 0, 1e4, -1e4 };
  if (i % cols == 0) *kind_draw = uniform();
  const int kind = (int)((*kind_draw + 1.) * 4.);
  return OFFSET[kind] + SCALE[kind] * uniform();
}

/* Every row's middle visible element of the right outputs out moved as the GPU selftest moves it: caught. */
static void middles_caught(const Prob *pb, const tune_AttnRef *o, const void *xs, void *out, const char *what)
{
  int64_t caught = 0, moved = 0;
  long long lo, hi;
  for (int64_t r = 0; r < pb->b * pb->h * pb->q; r++) {
    am_range(pb->mask, &o->p, o->lengths, pb->k, r, &lo, &hi);
    if (hi <= lo) continue;
    const int64_t at = r * pb->k + (lo + hi) / 2;
    const double v = tune_load(out, pb->dtype, at);
    tune_store_elem(out, pb->dtype, at, v + 8 * tune_ulp(v, pb->dtype) + fabs(v) * 0x1p-12 + 0x1p-100);
    tune_Check c = { .first_bad = -1 };
    tune_check_rows_attn(xs, out, pb->dtype, pb->k, r, r + 1, o, tune_poison(pb->dtype), &c);
    tune_store_elem(out, pb->dtype, at, v);
    caught += c.bad == 1, moved++;
  }
  CHECK(moved > 0 && caught == moved, "%s: %lld of %lld rows' middles moved by 8 ulps and 2^-12 caught", what,
        (long long)caught, (long long)moved);
}

static void run(const Prob *pb)
{
  const int64_t rows = pb->b * pb->h * pb->q, n = rows * pb->k;
  const gen_Problem p = { .rows = rows, .cols = pb->k, .dtype = pb->dtype, .op = GEN_ATTN, .mask = pb->mask, .bias = pb->bias };
  char what[160];
  snprintf(what, sizeof what, "%lldx%lldx%lldx%lld %s mask %s bias %s softcap %g", (long long)pb->b, (long long)pb->h,
           (long long)pb->q, (long long)pb->k, gen_dtype_name(pb->dtype), gen_mask_name(pb->mask), gen_bias_name(pb->bias),
           pb->o.softcap);
  double *x = malloc((size_t)n * sizeof *x), *ref = malloc((size_t)pb->k * sizeof *ref);
  void *xs = malloc((size_t)n * 4), *out = malloc((size_t)n * 4);
  int *len = malloc((size_t)pb->b * sizeof *len);
  float *slopes = malloc((size_t)pb->h * sizeof *slopes), *bias = malloc((size_t)(pb->q * pb->k) * sizeof *bias);
  tune_AttnRef o = { .mask = pb->mask, .lengths = len, .slopes = pb->bias == GEN_BIAS_ALIBI ? slopes : NULL,
                     .bias = pb->bias == GEN_BIAS_TENSOR ? bias : NULL };
  tune_attn_params(&p, &pb->o, &o.p);
  o.p.bias_sq = pb->k;   /* the tuner's [Q, K], broadcast over B and H */
  for (int64_t i = 0; i < pb->q * pb->k; i++) bias[i] = am_fill_bias(i, pb->k);
  for (int64_t b = 0; b < pb->b; b++) len[b] = am_fill_length(b, pb->k);
  for (int64_t h = 0; h < pb->h; h++) slopes[h] = am_fill_slope(h, pb->h);
  double kind = 0.;
  for (int64_t i = 0; i < n; i++) {
    tune_store_elem(xs, pb->dtype, i, pb->fill ? fill_score(i, pb->k, &kind) : uniform() * ((i / pb->k) % 7 == 3 ? 300. : 30.));
    x[i] = tune_load(xs, pb->dtype, i);
  }
  for (int maker = 0; maker < NMAKERS; maker++) {
    int64_t shown = -1, hidden = -1;   /* a visible element of ref > 0, and a masked one */
    for (int64_t r = 0; r < rows; r++) {
      tune_ref_row_attn(x + r * pb->k, pb->k, r, &o, ref);
      long long lo, hi;
      am_range(pb->mask, &o.p, len, pb->k, r, &lo, &hi);
      for (int64_t c = 0; c < pb->k; c++) {
        if (shown < 0 && c >= lo && c < hi && ref[c] > 1e-3) shown = r * pb->k + c;
        if (hidden < 0 && (c < lo || c >= hi)) hidden = r * pb->k + c;
      }
      if (maker == RIGHT_F32) f32_row(pb, &o, x + r * pb->k, r, out);
      else for (int64_t c = 0; c < pb->k; c++) tune_store_elem(out, pb->dtype, r * pb->k + c, ref[c]);
    }
    int64_t at = maker == WRONG_MASKED ? hidden : shown;
    if (maker >= WRONG_ULPS && at < 0) continue;   /* nothing masked (or shown) to spoil */
    if (maker == WRONG_ULPS) {
      const double v = tune_load(out, pb->dtype, at);
      tune_store_elem(out, pb->dtype, at, v + (pb->dtype == GEN_F32 ? v * 0x1p-14 : 3 * tune_ulp(v, pb->dtype)));
    }
    if (maker == WRONG_POISON) {
      const uint32_t w = tune_poison(pb->dtype);
      memcpy((char *)out + at * gen_dtype_size(pb->dtype), &w, (size_t)gen_dtype_size(pb->dtype));
    }
    if (maker == WRONG_MASKED) tune_store_elem(out, pb->dtype, at, pb->dtype == GEN_F32 ? 0x1p-149 : pb->dtype == GEN_F16 ? 0x1p-24 : 0x1p-133);
    tune_Check c = { .first_bad = -1 };
    tune_check_rows_attn(xs, out, pb->dtype, pb->k, 0, rows, &o, tune_poison(pb->dtype), &c);
    const int64_t want = maker >= WRONG_ULPS;
    CHECK(c.bad == want, "%s, %s: %lld bad, want %lld (first %lld, max err %.3g ulp)", what, MAKER[maker], (long long)c.bad,
          (long long)want, (long long)c.first_bad, c.max_err);
    if (pb->fill && maker <= RIGHT_F32) middles_caught(pb, &o, xs, out, what);
  }
  free(x), free(ref), free(xs), free(out), free(len), free(slopes), free(bias);
}

/* Key padding with causal and window sees the intersection of their ranges, each row of every
** kind (offsets either way, rows that see nothing): a reading of attn_mask.h apart from its own. */
static void padding_intersects(void)
{
  const long long B = 5, Q = 7, K = 11;
  int len[5] = { 11, 0, 3, 9, 14 };   /* 14: past K, clamped */
  for (int mask = GEN_MASK_PADDING_CAUSAL; mask <= GEN_MASK_PADDING_CAUSAL_WINDOW; mask++)
    for (long long off = -9; off <= 12; off += 3) {
      const AttnParams p = { .q = Q, .h = 1, .offset = off, .window = 2 };
      for (long long r = 0; r < B * Q; r++) {
        long long lo, hi, lo1, hi1, lo2, hi2;
        am_range(mask, &p, len, K, r, &lo, &hi);
        am_range(mask & ~GEN_MASK_PADDING, &p, len, K, r, &lo1, &hi1);
        am_range(GEN_MASK_PADDING, &p, len, K, r, &lo2, &hi2);
        const long long a = lo1 > lo2 ? lo1 : lo2, b = hi1 < hi2 ? hi1 : hi2;
        CHECK(hi - lo == (b > a ? b - a : 0) && (hi <= lo || (lo == a && hi == b)),
              "mask %s offset %lld row %lld: [%lld, %lld), want [%lld, %lld) and [%lld, %lld)", gen_mask_name(mask), off, r,
              lo, hi, lo1, hi1, lo2, hi2);
      }
    }
}

/* The key lengths the tuner times by (am_time_length): within [K/4, K], a single batch at 5K/8,
** and 1000 batches spread over the range (each tenth of it holds 80-120 of them). */
static void time_lengths(void)
{
  static const long long KS[] = { 1, 4, 64, 4099, 32768, 1000003 };
  for (size_t i = 0; i < sizeof KS / sizeof *KS; i++) {
    const long long K = KS[i], lo = K / 4;
    int tenth[10] = { 0 }, bad = 0;
    CHECK(am_time_length(0, K) == lo + (K - lo) / 2, "K %lld: batch 0's length %d, want %lld", K, am_time_length(0, K),
          lo + (K - lo) / 2);
    for (long long b = 0; b < 1000; b++) {
      const int L = am_time_length(b, K);
      bad += L < lo || L > K;
      if (K >= 4099) tenth[L - lo >= K - lo ? 9 : (L - lo) * 10 / (K - lo)]++;
    }
    CHECK(bad == 0, "K %lld: %d of 1000 lengths outside [K/4, K]", K, bad);
    for (int t = 0; t < 10 && K >= 4099; t++) CHECK(tenth[t] >= 80 && tenth[t] <= 120, "K %lld: %d lengths in tenth %d", K, tenth[t], t);
  }
}

/* st_check_attn compiles for every mask kind, each bias in turn, dtypes and archs alternating. */
static void aux_compiles(void)
{
  char err[1024];
  gen_State *gen;
  if (gen_open(&gen, NULL, err, sizeof err)) {
    CHECK(0, "gen: %s", err);
    return;
  }
  for (int mask = 0; mask < GEN_NMASK; mask++) {
    const int arch = mask % 2 ? 80 : 90;
    gen_Problem p = { .rows = 8, .cols = 1000, .dtype = mask % GEN_NDTYPE, .op = GEN_ATTN, .mask = mask, .bias = mask % GEN_NBIAS,
                      .arch = arch };
    char *src = NULL;
    gen_Cubin c;
    int ok = gen_aux(gen, &p, "aux", &src) == 0 && gen_compile(src, "aux.cu", arch, &c, err, sizeof err) == 0;
    CHECK(ok, "aux.cu attention_softmax mask %s: %s", gen_mask_name(mask), src ? err : gen_error(gen));
    if (ok) gen_cubin_free(&c);
    free(src);
  }
  gen_close(gen);
}

int main(void)
{
  (void)gpu_mode, (void)prepare_for, (void)label;   /* verify_util.h's GPU mode: not this test's yet */
  rng = 0xa77e2026u;
  for (int dt = 0; dt < GEN_NDTYPE; dt++)
    for (int mask = 0; mask < GEN_NMASK; mask++)
      for (int bias = 0; bias < GEN_NBIAS; bias++)
        for (int cap = 0; cap < 2; cap++) {
          const int windowed = (mask & GEN_MASK_WINDOW) != 0;
          Prob pb = { 3, 2, 24, 300 + 37 * mask, dt, mask, bias, { 24, 2, TUNE_ATTN_AUTO, windowed ? 40 : -1, 0.125f, cap ? 20.f : 0.f }, 0 };
          run(&pb);
          pb.q = pb.o.q = 40, pb.k = 33, pb.o.window = windowed ? 5 : -1, pb.o.scale = 1.3f;   /* Q > K: rows that see nothing */
          run(&pb);
        }
  Prob wide = { 2, 1, 4, 20000, GEN_F32, GEN_MASK_CAUSAL, GEN_BIAS_ALIBI, { 4, 1, TUNE_ATTN_AUTO, -1, 0.0883883f, 30.f }, 0 };
  run(&wide);
  padding_intersects();
  time_lengths();
  aux_compiles();
  static const Prob FILL[] = {   /* test_gpu --attn's float32 problems, fill's scores */
    { 1, 1, 128, 64, GEN_F32, GEN_MASK_CAUSAL, 0, { 128, 1, TUNE_ATTN_AUTO, -1, 1.f, 0.f }, 1 },
    { 9, 1, 8, 2048, GEN_F32, GEN_MASK_PADDING, 0, { 8, 1, TUNE_ATTN_AUTO, -1, 0.125f, 0.f }, 1 },
    { 1, 1, 64, 64, GEN_F32, GEN_MASK_NONE, 0, { 64, 1, TUNE_ATTN_AUTO, -1, 2.f, 0.f }, 1 },
    { 1, 2, 37, 1000, GEN_F32, GEN_MASK_CAUSAL, 0, { 37, 2, TUNE_ATTN_AUTO, -1, 0.3f, 30.f }, 1 },
    { 1, 1, 5, 1, GEN_F32, GEN_MASK_CAUSAL, 0, { 5, 1, TUNE_ATTN_AUTO, -1, 1.f, 0.f }, 1 },
    { 2, 2, 37, 1000, GEN_F32, GEN_MASK_NONE, GEN_BIAS_TENSOR, { 37, 2, TUNE_ATTN_AUTO, -1, 0.3f, 30.f }, 1 },
    { 2, 2, 4, 20000, GEN_F32, GEN_MASK_PADDING, GEN_BIAS_TENSOR, { 4, 2, TUNE_ATTN_AUTO, -1, 0.0883883f, 0.f }, 1 },
  };
  for (int seed = 0; seed < 8; seed++)
    for (size_t i = 0; i < sizeof FILL / sizeof FILL[0]; i++) run(&FILL[i]);
  return check_done("test_verify_attn");
}
