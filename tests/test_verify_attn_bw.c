/*
** test_verify_attn_bw.c — the verifier of attention_softmax_backward (verify_attn_bw.h with
** verify.h's sum error, tuner/attn_bw.c's tune_check_rows_attn_bw): right outputs pass and wrong
** ones do not, for every dtype and mask kind, with and without a softcap, with a scale, Q > K rows
** that see nothing, and padding with key lengths 0..K (the tuner's). y is the forward's output
** (the float64 masked softmax of the scores, rounded, 0 where masked), dy uniform in +-1 times a
** row scale of 1e-3..1e3 where visible and NaN where masked (which the rule must not read).
**   right: the float64 reference rounded to the dtype; the kernels' float32 arithmetic (attn_bw.cu's
**          steps: a pairwise sum of fl(dy * y), fl(y * fl(dy - s)), k = scale * (1 - t * t) with
**          t = tanh_cap(x * scale * (1 / cap)) as the dtype computes it, the product), rounded once
**   wrong: the visible element of the largest |dx| a quarter of itself and 3 ulps off, one
**          poisoned, one masked element the dtype's smallest positive value
**   test_verify_attn_bw      the CPU check; label cpu
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

enum { RIGHT_ROUNDED, RIGHT_F32, WRONG_OFF, WRONG_POISON, WRONG_MASKED, NMAKERS };
static const char *const MAKER[NMAKERS] = { "rounded reference", "float32 math", "one element off", "one poisoned",
                                            "a masked element nonzero" };

typedef struct Prob { int64_t b, h, q, k; int dtype, mask; tune_AttnOptions o; } Prob;

/* One row's dx as the kernels compute it: float32 steps, rounded once to the dtype. */
static void f32_row(const Prob *pb, const tune_AttnRef *o, const double *x, const double *y, const double *dy, int64_t row,
                    void *out)
{
  long long lo, hi;
  am_range(o->mask, &o->p, o->lengths, pb->k, row, &lo, &hi);
  float *t = calloc((size_t)pb->k + 1, sizeof *t);
  for (int64_t c = lo; c < hi; c++) t[c - lo] = (float)dy[c] * (float)y[c];
  const float s = tree_sum(t, hi - lo), icap = o->p.softcap > 0.f ? 1.f / o->p.softcap : 0.f;
  for (int64_t c = 0; c < pb->k; c++) {
    float v = 0.f;
    if (c >= lo && c < hi) {
      const float th = o->p.softcap > 0.f ? tanh_cap((float)x[c] * o->p.scale * icap, pb->dtype) : 0.f;
      v = ((float)y[c] * ((float)dy[c] - s)) * (o->p.softcap > 0.f ? o->p.scale * (1.f - th * th) : o->p.scale);
    }
    tune_store_elem(out, pb->dtype, row * pb->k + c, (double)v);
  }
  free(t);
}

/* The inputs: scores x, y their masked softmax (rounded), dy (NaN where masked), all loaded back. */
static void inputs(const Prob *pb, const tune_AttnRef *o, void *xs, void *ys, void *ds, double *x, double *y, double *dy)
{
  const int64_t rows = pb->b * pb->h * pb->q;
  double *ref = malloc((size_t)pb->k * sizeof *ref);
  for (int64_t r = 0; r < rows; r++) {
    const double scale = r % 3 == 0 ? 1e-3 : r % 3 == 1 ? 1. : 1e3;
    long long lo, hi;
    am_range(o->mask, &o->p, o->lengths, pb->k, r, &lo, &hi);
    for (int64_t c = 0; c < pb->k; c++) {
      const int64_t i = r * pb->k + c;
      tune_store_elem(xs, pb->dtype, i, uniform() * (r % 7 == 3 ? 300. : 30.));
      tune_store_elem(ds, pb->dtype, i, c >= lo && c < hi ? scale * uniform() : NAN);
      x[i] = tune_load(xs, pb->dtype, i), dy[i] = tune_load(ds, pb->dtype, i);
    }
    tune_ref_row_attn(x + r * pb->k, pb->k, r, o, ref);
    for (int64_t c = 0; c < pb->k; c++) {
      tune_store_elem(ys, pb->dtype, r * pb->k + c, ref[c]);
      y[r * pb->k + c] = tune_load(ys, pb->dtype, r * pb->k + c);
    }
  }
  free(ref);
}

static void run(const Prob *pb)
{
  const int64_t rows = pb->b * pb->h * pb->q, n = rows * pb->k;
  const gen_Problem p = { .rows = rows, .cols = pb->k, .dtype = pb->dtype, .op = GEN_ATTN_BW, .mask = pb->mask };
  char what[160];
  snprintf(what, sizeof what, "%lldx%lldx%lldx%lld %s mask %s softcap %g", (long long)pb->b, (long long)pb->h, (long long)pb->q,
           (long long)pb->k, gen_dtype_name(pb->dtype), gen_mask_name(pb->mask), pb->o.softcap);
  double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y), *dy = malloc((size_t)n * sizeof *dy);
  double *ref = malloc((size_t)pb->k * sizeof *ref);
  void *xs = malloc((size_t)n * 4), *ys = malloc((size_t)n * 4), *ds = malloc((size_t)n * 4), *out = malloc((size_t)n * 4);
  int *len = malloc((size_t)pb->b * sizeof *len);
  tune_AttnRef o = { .mask = pb->mask, .lengths = len };
  tune_attn_params(&p, &pb->o, &o.p);
  for (int64_t b = 0; b < pb->b; b++) len[b] = am_fill_length(b, pb->k);
  inputs(pb, &o, xs, ys, ds, x, y, dy);
  for (int maker = 0; maker < NMAKERS; maker++) {
    int64_t shown = -1, hidden = -1;   /* the visible element of the largest |dx|, and a masked one */
    double big = 0.;
    for (int64_t r = 0; r < rows; r++) {
      tune_ref_row_attn_bw(pb->o.softcap > 0.f ? x + r * pb->k : NULL, y + r * pb->k, dy + r * pb->k, pb->k, r, &o, ref);
      long long lo, hi;
      am_range(pb->mask, &o.p, len, pb->k, r, &lo, &hi);
      for (int64_t c = 0; c < pb->k; c++) {
        if (c >= lo && c < hi && fabs(ref[c]) > big) big = fabs(ref[c]), shown = r * pb->k + c;
        if (hidden < 0 && (c < lo || c >= hi)) hidden = r * pb->k + c;
      }
      if (maker == RIGHT_F32) f32_row(pb, &o, x + r * pb->k, y + r * pb->k, dy + r * pb->k, r, out);
      else for (int64_t c = 0; c < pb->k; c++) tune_store_elem(out, pb->dtype, r * pb->k + c, ref[c]);
    }
    const int64_t at = maker == WRONG_MASKED ? hidden : shown;
    if (maker >= WRONG_OFF && at < 0) continue;   /* nothing masked (or shown) to spoil */
    if (maker == WRONG_OFF) {
      const double v = tune_load(out, pb->dtype, at);
      tune_store_elem(out, pb->dtype, at, v + fabs(v) * 0.25 + 3 * tune_ulp(v, pb->dtype));
    }
    if (maker == WRONG_POISON) poison_at(out, pb->dtype, at);
    if (maker == WRONG_MASKED) tune_store_elem(out, pb->dtype, at, pb->dtype == GEN_F32 ? 0x1p-149 : pb->dtype == GEN_F16 ? 0x1p-24 : 0x1p-133);
    tune_Check c = { .first_bad = -1 };
    tune_check_rows_attn_bw(xs, ys, ds, out, pb->dtype, pb->k, 0, rows, &o, tune_poison(pb->dtype), &c);
    const int64_t want = maker >= WRONG_OFF;
    CHECK(c.bad == want, "%s, %s: %lld bad, want %lld (first %lld, max err %.3g ulp)", what, MAKER[maker], (long long)c.bad,
          (long long)want, (long long)c.first_bad, c.max_err);
  }
  free(x), free(y), free(dy), free(ref), free(xs), free(ys), free(ds), free(out), free(len);
}

int main(void)
{
  (void)gpu_mode, (void)prepare_for, (void)label, (void)off;   /* verify_util.h's GPU mode: not this test's */
  rng = 0xa77eb02026u;
  for (int dt = 0; dt < GEN_NDTYPE; dt++)
    for (int mask = 0; mask < GEN_NMASK; mask++)
      for (int cap = 0; cap < 2; cap++) {
        const int windowed = (mask & GEN_MASK_WINDOW) != 0;
        Prob pb = { 3, 2, 24, 300 + 37 * mask, dt, mask, { 24, 2, TUNE_ATTN_AUTO, windowed ? 40 : -1, 0.125f, cap ? 20.f : 0.f } };
        run(&pb);
        pb.q = pb.o.q = 40, pb.k = 33, pb.o.window = windowed ? 5 : -1, pb.o.scale = 1.3f;   /* Q > K: rows that see nothing */
        run(&pb);
      }
  Prob wide = { 2, 1, 4, 20000, GEN_F32, GEN_MASK_CAUSAL, { 4, 1, TUNE_ATTN_AUTO, -1, 0.0883883f, 30.f } };
  run(&wide);
  return check_done("test_verify_attn_bw");
}
