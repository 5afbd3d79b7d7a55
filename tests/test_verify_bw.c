/*
** test_verify_bw.c — the verifier of the backward ops (verify.h's vr_bounds_bw, tuner/ref.c's
** tune_check_rows_bw, backward_aux.cu's st_check_bw): right outputs pass and wrong ones do not,
** for every dtype and both ops, y the real softmax (log_softmax) of rows of every class the
** verifier draws (ordinary, wide, large-magnitude, offset, some -inf, all -inf and NaN: y NaN),
** dy random at scales 1e-3..1e3.
**   right: the float64 reference rounded to the dtype; the kernels' float32 arithmetic (a tree
**          sum, then y * (dy - s) or dy - exp(y) * s) rounded once
**   wrong: one element a few ulps off, one poisoned (skipped), one zeroed, the row's last vector
**          unwritten, the sum over cols-1, two rows swapped, a NaN row not propagated, every
**          element biased
** "A few ulps" are 3 (2 for the bias) of a 16-bit dtype; f32's wrong outputs are 2^-14 off, at
** the element whose bound is narrowest for its size (the float32 sum errs by tens of f32 ulps).
**   test_verify_bw      the CPU check; label cpu
**   test_verify_bw gpu  the GPU check kernel must agree with the CPU on every case (label gpu;
**                       exit 77, skipped, without a GPU)
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "ref.h"
#include "tune.h"
#include "verify_util.h"
#include "verify.h"

#define SEED 0xbacc2026u

enum { RIGHT_ROUNDED, RIGHT_F32, WRONG_ULPS, WRONG_POISON, WRONG_ZERO, WRONG_LASTVEC, WRONG_SUMLESS, WRONG_SWAP,
       WRONG_NANROW, WRONG_BIAS, NMAKERS };
static const char *const MAKER[NMAKERS] = { "rounded reference", "float32 math", "one element off", "one poisoned",
                                            "one zeroed", "last vector unwritten", "sum over cols-1", "rows swapped",
                                            "NaN row not propagated", "every element biased" };

typedef struct Prob { int64_t rows, cols; int dtype, op; } Prob;

static tune_Gpu *gpu;
static gen_State *gen;

/* Row r of y (the forward of logits as the GPU's fill draws them) and dy. */
static void fill_row(double *y, double *dy, int64_t cols, int64_t r, int op)
{
  static const double SCALE[8] = { 3, 3, 3, 12, 40, 1000, 4, 4 }, OFFSET[8] = { 0, 0, 0, 0, 0, 0, 1e4, -1e4 };
  const int kind = (int)(r % 8);
  const double dscale = r % 3 == 0 ? 1. : r % 3 == 1 ? 1e3 : 1e-3;
  for (int64_t c = 0; c < cols; c++) {
    y[c] = OFFSET[kind] + SCALE[kind] * uniform();
    if ((r == 1 && c % 4 == 0) || r == 2) y[c] = -INFINITY;
    dy[c] = dscale * uniform();
  }
  if (r == 3) y[cols / 2] = NAN;
  double *x = malloc((size_t)cols * sizeof *x);
  if (!x) return;
  memcpy(x, y, (size_t)cols * sizeof *x);
  tune_ref_row(x, cols, op == GEN_SOFTMAX_BW ? GEN_SOFTMAX : GEN_LOG_SOFTMAX, y);
  free(x);
}

/* A row as the kernels compute it in float32; skip >= 0: that term left out of the sum. */
static void f32_row(const double *y, const double *dy, int64_t cols, int op, int64_t skip, double *out, float *t)
{
  for (int64_t c = 0; c < cols; c++)
    t[c] = c == skip ? 0.f : op == GEN_LOG_SOFTMAX_BW ? (float)dy[c] : (float)dy[c] * (float)y[c];
  const float s = tree_sum(t, cols);
  for (int64_t c = 0; c < cols; c++)
    out[c] = op == GEN_LOG_SOFTMAX_BW ? (float)dy[c] - expf((float)y[c]) * s : (float)y[c] * ((float)dy[c] - s);
}

/* The element whose bound is narrowest relative to its reference (nonzero, finite); and the
** term of the largest magnitude. */
static int64_t narrowest(const Prob *p, const double *y, const double *dy, const double *ref, int64_t *big)
{
  double s = 0., a = 0., best = INFINITY, tmax = -1.;
  int64_t at = 0;
  for (int64_t c = 0; c < p->cols; c++) {
    const double t = p->op == GEN_LOG_SOFTMAX_BW ? dy[c] : dy[c] * y[c];
    s += t, a += fabs(t);
    if (fabs(t) > tmax) tmax = fabs(t), *big = c;
  }
  for (int64_t c = 0; c < p->cols; c++) {
    double lo, hi;
    if (!(ref[c] != 0. && isfinite(ref[c]))) continue;
    vr_bounds_bw(p->dtype, p->op == GEN_LOG_SOFTMAX_BW, ref[c], y[c], s, vr_sum_err((double)p->cols, a), &lo, &hi);
    if ((hi - lo) / fabs(ref[c]) < best) best = (hi - lo) / fabs(ref[c]), at = c;
  }
  return at;
}

/* The output of maker for rows of y and dy (as loaded from the dtype), into out (dtype). */
static void make(const Prob *p, int maker, const double *y, const double *dy, void *out, double *row, float *tmp)
{
  const int64_t R = p->rows, C = p->cols;
  for (int64_t r = 0; r < R; r++) {
    const double *yr = y + r * C, *dr = dy + r * C;
    int64_t big = 0;
    tune_ref_row_bw(yr, dr, C, p->op, row);
    const int64_t spot = narrowest(p, yr, dr, row, &big);
    if (maker == RIGHT_F32) f32_row(yr, dr, C, p->op, -1, row, tmp);
    if (r == 0 && maker == WRONG_SUMLESS) f32_row(yr, dr, C, p->op, big, row, tmp);
    for (int64_t c = 0; c < C; c++) {
      double v = row[c];
      if (r == 3 && maker == WRONG_NANROW) v = dr[c];
      if (maker == WRONG_BIAS && r != 2 && r != 3) v = off(v, p->dtype, 2);
      if (r == 0 && c == spot && maker == WRONG_ULPS) v = off(v, p->dtype, 3);
      if (r == 0 && c == spot && maker == WRONG_ZERO) v = 0.;
      tune_store_elem(out, p->dtype, r * C + c, v);
      if (r == 0 && ((c == spot && maker == WRONG_POISON) || (c >= C - 4 && maker == WRONG_LASTVEC))) poison_at(out, p->dtype, c);
    }
  }
  if (maker == WRONG_SWAP) {   /* rows 0 and 4 trade places */
    const size_t n = (size_t)C * (size_t)gen_dtype_size(p->dtype);
    char *a = out, *b = (char *)out + 4 * n, t;
    for (size_t i = 0; i < n; i++) t = a[i], a[i] = b[i], b[i] = t;
  }
}

/* The GPU check's verdict on the same y, dy and dx must be the CPU's c. */
static void gpu_agrees(const Prob *p, const void *ys, const void *dys, const void *out, const tune_Check *c, const char *what)
{
  char err[1024] = "";
  tune_Check g;
  const size_t n = (size_t)(p->rows * p->cols) * (size_t)gen_dtype_size(p->dtype);
  const int ok = !gpu_check(gpu, ys, dys, out, n, &g, err, sizeof err);
  CHECK(ok, "%s: GPU check: %s", what, err);
  CHECK(!ok || (g.bad == c->bad && g.first_bad == c->first_bad), "%s: GPU says %lld bad (first %lld), CPU %lld (%lld)", what,
        (long long)g.bad, (long long)g.first_bad, (long long)c->bad, (long long)c->first_bad);
}

static void run(const Prob *p, unsigned makers)
{
  const int64_t n = p->rows * p->cols;
  const size_t bytes = (size_t)n * (size_t)gen_dtype_size(p->dtype);
  double *y = malloc((size_t)n * sizeof *y), *dy = malloc((size_t)n * sizeof *dy), *row = malloc((size_t)p->cols * sizeof *row);
  float *tmp = malloc((size_t)p->cols * sizeof *tmp);
  void *ys = malloc(bytes), *dys = malloc(bytes), *out = malloc(bytes);
  if (!y || !dy || !row || !tmp || !ys || !dys || !out) {
    CHECK(0, "out of memory");
    goto done;
  }
  for (int64_t r = 0; r < p->rows; r++) fill_row(y + r * p->cols, dy + r * p->cols, p->cols, r, p->op);
  for (int64_t i = 0; i < n; i++) {
    tune_store_elem(ys, p->dtype, i, y[i]), y[i] = tune_load(ys, p->dtype, i);
    tune_store_elem(dys, p->dtype, i, dy[i]), dy[i] = tune_load(dys, p->dtype, i);
  }
  if (prepare_for(gpu, gen, p->rows, p->cols, p->dtype, p->op)) goto done;
  for (int k = 0; k < NMAKERS; k++) {
    if (!(makers >> k & 1)) continue;
    char what[160];
    tune_Check c = { .first_bad = -1 };
    label(what, sizeof what, p->rows, p->cols, p->dtype, p->op, MAKER[k]);
    make(p, k, y, dy, out, row, tmp);
    tune_check_rows_bw(ys, dys, out, p->dtype, p->op, p->cols, 0, p->rows, tune_poison(p->dtype), &c);
    CHECK((c.bad == 0) == (k <= RIGHT_F32), "%s: %lld bad (first %lld), max err %.3g ulp", what, (long long)c.bad,
          (long long)c.first_bad, c.max_err);
    if (k == RIGHT_ROUNDED) CHECK(c.max_err <= 0.5, "%s: max err %.3g ulp", what, c.max_err);
    if (gpu) gpu_agrees(p, ys, dys, out, &c, what);
  }
done:
  free(y), free(dy), free(row), free(tmp), free(ys), free(dys), free(out);
}

#define RIGHT ((1u << RIGHT_ROUNDED) | (1u << RIGHT_F32))
#define ALL ((1u << NMAKERS) - 1)

int main(int argc, char **argv)
{
  const int rc = gpu_mode(argc, argv, SEED, &gpu, &gen);
  if (rc) return rc;
  printf("seed %#x\n", SEED);
  for (int dt = 0; dt < GEN_NDTYPE; dt++)
    for (int op = GEN_SOFTMAX_BW; op <= GEN_LOG_SOFTMAX_BW; op++) {
      for (int64_t cols = 1; cols <= 64; cols++)
        if (!gpu || cols <= 2 || cols == 7 || cols == 64) run(&(Prob){ 8, cols, dt, op }, cols >= 5 ? ALL : RIGHT);
      run(&(Prob){ 8, 1000, dt, op }, ALL);
      run(&(Prob){ 8, 70000, dt, op }, ALL);
    }
  if (gpu) gen_close(gen), tune_gpu_close(gpu);
  return check_done(gpu ? "test_verify_bw gpu" : "test_verify_bw");
}
