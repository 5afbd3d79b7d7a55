/*
** test_verify_ce.c — the verifier of the cross-entropy ops (verify.h's vr_ce_*, tuner/ref.c's
** tune_check_rows_ce, ce_aux.cu's st_check_ce): right outputs pass and wrong ones do not, for
** every dtype, both ops and each option (none, label smoothing, z-loss, softcap, class weights,
** a gradient scale other than 1, an ignore_index that is a class, and all of smoothing, z-loss
** and softcap at once), on rows of logits of every class the verifier draws (ordinary, wide,
** large-magnitude, offset by +-1e4) with a label each: row 1 ignored, row 2 a label past the
** columns (loss NaN, gradient 0), row 5 a negative one; int64 and int32 labels.
**   right: the float64 reference rounded (gradient to the dtype, loss and lse to float); the
**          kernels' float32 arithmetic (ce.cu's steps) rounded once, its sums a tree's, or as
**          the two-read kernels add: each of 1024 threads a running sum of every 1024th
**          element, then a tree
**   wrong: one gradient element a few ulps off, one poisoned, the label's term left out, the
**          gradient scaled twice, an ignored row's gradient not zero, the loss off by 2^-10 of
**          itself, the lse off by 2^-10, a bad label's loss finite, an ignored row's loss not 0
** "A few ulps" are 3 of a 16-bit dtype; f32's wrong elements are 2^-14 off, at the element whose
** bound is narrowest for its size. First, the loss-only kernel's softcap polynomial
** (softcap_poly.h) against its stated error.
**   test_verify_ce      the CPU check; label cpu
**   test_verify_ce gpu  the GPU check kernel must agree with the CPU on every case (label gpu;
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
#include "softcap_poly.h"

#define SEED 0xce2026u
#define ROWS 8

enum { RIGHT_ROUNDED, RIGHT_F32, RIGHT_F32_RUN, WRONG_ULPS, WRONG_POISON, WRONG_LABEL, WRONG_SCALE, WRONG_IGNORED, WRONG_LOSS, WRONG_LSE,
       WRONG_BADLOSS, WRONG_IGNLOSS, NMAKERS };
static const char *const MAKER[NMAKERS] = { "rounded reference", "float32 math", "float32 math, running sums", "one element off", "one poisoned",
                                            "label term left out", "gradient scaled twice", "ignored row's gradient",
                                            "loss off", "lse off", "bad label's loss finite", "ignored row's loss" };
#define GRAD_MAKERS ((1u << WRONG_ULPS) | (1u << WRONG_POISON) | (1u << WRONG_LABEL) | (1u << WRONG_SCALE) | (1u << WRONG_IGNORED))

typedef struct Opt { const char *name; tune_CeOptions ce; double scale; } Opt;
static const Opt OPTS[] = {
  { "no options", { -100, 0.f, 0.f, 0.f, 0, 1 }, 1. },
  { "smoothing 0.1", { -100, 0.1f, 0.f, 0.f, 0, 1 }, 1. },
  { "z-loss 1e-4", { -100, 0.f, 1e-4f, 0.f, 0, 0 }, 1. },
  { "softcap 30", { -100, 0.f, 0.f, 30.f, 0, 1 }, 1. },
  { "weights", { -100, 0.f, 0.f, 0.f, 1, 0 }, 1. },
  { "scale 1/3", { -100, 0.f, 0.f, 0.f, 0, 1 }, 1. / 3. },
  { "ignore_index 3", { 3, 0.f, 0.f, 0.f, 0, 0 }, 1. },
  { "smoothing, z-loss, softcap, scale", { -100, 0.2f, 1e-3f, 15.f, 0, 1 }, 0.125 },
};

typedef struct Prob { int64_t cols; int dtype, op; const Opt *opt; } Prob;

/* Everything of one case: logits (as loaded, and in the dtype), labels, weights, outputs. */
typedef struct Case {
  double *x, *ref, *lossref, *lseref;
  void *xs, *dx;
  int64_t y[ROWS];
  void *labels;             /* y in the options' width */
  float *weight, loss[ROWS], lse[ROWS], *tmp;
  tune_CeRef o;
} Case;

static tune_Gpu *gpu;
static gen_State *gen;
static double f32_err[GEN_NDTYPE], f32_dev[GEN_NDTYPE];   /* the float32 math's largest errors, for the record */

static void fill_row(double *x, int64_t cols, int64_t r)
{
  static const double SCALE[ROWS] = { 3, 3, 12, 40, 3, 3, 4, 4 }, OFFSET[ROWS] = { 0, 0, 0, 0, 0, 0, 1e4, -1e4 };
  for (int64_t c = 0; c < cols; c++) x[c] = OFFSET[r] + SCALE[r] * uniform();
}

/* Row r's label: r 1 ignored, r 2 past the columns, r 5 negative (not ignore_index), else a class
** (row 4 the ignore_index 3 when that is a class: so ignored too). */
static int64_t label_of(int64_t r, int64_t cols, int64_t ignore)
{
  if (r == 1) return ignore;
  if (r == 2) return cols + 5;
  if (r == 5) return ignore == -7 ? -8 : -7;
  if (r == 4 && ignore >= 0 && ignore < cols) return ignore;
  return (int64_t)((uniform() + 1.) * 0.5 * (double)cols) % cols;
}

/* 1024 threads' running sums of every 1024th value, then a tree over them: the two-read kernels'. */
static float strided_sum(const float *v, int64_t n)
{
  float part[1024] = { 0 };
  for (int64_t i = 0; i < n; i++) part[i % 1024] += v[i];
  return tree_sum(part, 1024);
}

/* A row as ce.cu computes it in float32 (expf for ex2; sums by tree_sum, or strided_sum when run;
** dtype's softcap tanh). */
static void f32_row(const double *x, int64_t cols, int64_t y, const tune_CeRef *o, int dtype, double *dx, float *loss,
                    float *lse, float *z, int run)
{
  float (*sum)(const float *, int64_t) = run ? strided_sum : tree_sum;
  const float cap = (float)o->softcap, icap = cap > 0.f ? 1.f / cap : 0.f, eps = (float)o->smoothing;
  const float zl = (float)o->zloss, scale = (float)o->scale;
  float m = -INFINITY;
  for (int64_t j = 0; j < cols; j++) z[j] = cap > 0.f ? cap * tanh_cap((float)x[j] * icap, dtype) : (float)x[j], m = fmaxf(m, z[j]);
  const float t = sum(z, cols);
  float *e = malloc((size_t)cols * sizeof *e);
  if (!e) return;
  for (int64_t j = 0; j < cols; j++) e[j] = expf(z[j] - m);
  *lse = m + logf(sum(e, cols));
  free(e);
  const int ignored = y == o->ignore, bad = !ignored && (y < 0 || y >= cols);
  const float w = ignored || bad ? 0.f : o->weight ? o->weight[y] : 1.f, wl = (1.f - eps) * w, b = scale * wl;
  const float c = ignored || bad ? 0.f : scale * eps / (float)cols, a = ignored || bad ? 0.f : b + scale * (eps + 2.f * zl * *lse);
  for (int64_t j = 0; j < cols; j++) {
    float g = a * expf(z[j] - *lse) - c - (j == y ? b : 0.f);
    if (cap > 0.f) g *= 1.f - z[j] * icap * (z[j] * icap);
    dx[j] = g;
  }
  *loss = ignored ? 0.f : bad ? NAN : wl * (*lse - z[y]) + eps * (*lse - t / (float)cols) + zl * *lse * *lse;
}

/* The element of row 0 whose bound is narrowest relative to its size: the largest logit's (its
** p the largest, |z - lse| the smallest), the label's excepted (its term is another rule's). */
static int64_t narrowest(const double *x, int64_t cols, int64_t y)
{
  int64_t at = y == 0 ? 1 : 0;
  for (int64_t j = 0; j < cols; j++)
    if (j != y && x[j] > x[at]) at = j;
  return at;
}

/* The outputs of maker into k->dx, k->loss and k->lse. */
static void make(const Prob *p, Case *k, int maker)
{
  const int64_t C = p->cols;
  double *row = malloc((size_t)C * sizeof *row);
  if (!row) return;
  for (int64_t r = 0; r < ROWS; r++) {
    const double *xr = k->x + r * C;
    tune_CeRef o = k->o;
    double loss, lse;
    if (maker == WRONG_SCALE && r == 0) o.scale *= 2.;
    tune_ref_row_ce(xr, C, k->y[r], &o, row, &loss, &lse);
    if (maker == RIGHT_F32 || maker == RIGHT_F32_RUN)
      f32_row(xr, C, k->y[r], &o, p->dtype, row, &k->loss[r], &k->lse[r], k->tmp, maker == RIGHT_F32_RUN);
    else k->loss[r] = (float)loss, k->lse[r] = (float)lse;
    if (maker == WRONG_IGNORED && r == 1) {   /* the ignored row's gradient as if labelled 0 */
      o.ignore = -12345;
      tune_ref_row_ce(xr, C, 0, &o, row, &loss, &lse);
    }
    if (maker == WRONG_LABEL && r == 0) row[k->y[0]] += o.scale * (1. - o.smoothing) * (o.weight ? o.weight[k->y[0]] : 1.);
    if (maker == WRONG_LOSS && r == 0) k->loss[0] += fabsf(k->loss[0]) * 0x1p-10f + 0x1p-10f;
    if (maker == WRONG_LSE && r == 3) k->lse[3] += fabsf(k->lse[3]) * 0x1p-10f + 0x1p-10f;
    if (maker == WRONG_BADLOSS && r == 2) k->loss[2] = 0.f;
    if (maker == WRONG_IGNLOSS && r == 1) k->loss[1] = 0x1p-20f;
    const int64_t spot = r == 0 && (maker == WRONG_ULPS || maker == WRONG_POISON) ? narrowest(xr, C, k->y[0]) : -1;
    for (int64_t j = 0; j < C; j++) {
      double v = row[j];
      if (j == spot && maker == WRONG_ULPS) v = off(v, p->dtype, 3);
      tune_store_elem(k->dx, p->dtype, r * C + j, v);
      if (j == spot && maker == WRONG_POISON) poison_at(k->dx, p->dtype, j);
    }
  }
  free(row);
}

/* The GPU check's verdict on the same inputs and outputs must be the CPU's c. */
static void gpu_agrees(const Prob *p, Case *k, const tune_Check *c, const char *what)
{
  char err[1024] = "";
  tune_Check g;
  tune_Args a;
  tune_CeOptions ce = p->opt->ce;
  const tune_Driver *d = tune_gpu_driver(gpu);
  const size_t n = (size_t)(ROWS * p->cols) * (size_t)gen_dtype_size(p->dtype), ls = ce.labels64 ? 8 : 4;
  CUdeviceptr in, out;
  CUstream s;
  tune_gpu_ce_options(gpu, &ce);
  tune_gpu_args(gpu, &a);
  tune_gpu_buffers(gpu, &in, &out, &s);
  const CeParams *cp = a.params;
  int ok = !tune_gpu_ce_scale(gpu, (float)p->opt->scale, err, sizeof err);   /* in stream order, as the copies */
  ok = ok && !d->cuMemcpyHtoDAsync(a.buf[0], k->xs, n, s) && !d->cuMemcpyHtoDAsync(a.buf[1], k->labels, ROWS * ls, s) &&
       !d->cuMemcpyHtoDAsync(a.buf[2], k->dx, n, s) && !d->cuMemcpyHtoDAsync(a.buf[3], k->loss, sizeof k->loss, s) &&
       !d->cuMemcpyHtoDAsync(a.buf[4], k->lse, sizeof k->lse, s) &&
       !(cp->weight && d->cuMemcpyHtoDAsync((CUdeviceptr)cp->weight, k->weight, (size_t)p->cols * 4, s));
  if (ok && tune_gpu_check(gpu, a.buf[0], a.buf[2], &g, err, sizeof err)) ok = 0;
  else if (!ok && !err[0]) snprintf(err, sizeof err, "copy to the GPU failed");
  CHECK(ok, "%s: GPU check: %s", what, err);
  CHECK(!ok || (g.bad == c->bad && g.first_bad == c->first_bad && g.bad_sums == c->bad_sums),
        "%s: GPU says %lld bad (first %lld), %lld rows off; CPU %lld (%lld), %lld", what, (long long)g.bad,
        (long long)g.first_bad, (long long)g.bad_sums, (long long)c->bad, (long long)c->first_bad, (long long)c->bad_sums);
}

/* Whether maker's outputs must fail the check for p. */
static int wrong(const Prob *p, int maker)
{
  if (maker <= RIGHT_F32_RUN) return 0;
  if (p->op == GEN_CE_LOSS && (GRAD_MAKERS >> maker & 1)) return 0;   /* no gradient: not looked at */
  return 1;
}

static void run(const Prob *p)
{
  const int64_t n = ROWS * p->cols;
  const size_t bytes = (size_t)n * (size_t)gen_dtype_size(p->dtype);
  Case k = { 0 };
  k.x = malloc((size_t)n * sizeof *k.x), k.xs = malloc(bytes), k.dx = malloc(bytes);
  k.weight = malloc((size_t)p->cols * sizeof *k.weight), k.tmp = malloc((size_t)p->cols * sizeof *k.tmp);
  k.labels = malloc(ROWS * 8);
  if (!k.x || !k.xs || !k.dx || !k.weight || !k.tmp || !k.labels) {
    CHECK(0, "out of memory");
    goto done;
  }
  const tune_CeOptions *ce = &p->opt->ce;
  k.o = (tune_CeRef){ ce->ignore, ce->smoothing, ce->zloss, ce->softcap, p->opt->scale, ce->weight ? k.weight : NULL };
  for (int64_t j = 0; j < p->cols; j++) k.weight[j] = 0.5f + 0.75f * (float)(uniform() + 1.);
  for (int64_t r = 0; r < ROWS; r++) {
    fill_row(k.x + r * p->cols, p->cols, r);
    k.y[r] = label_of(r, p->cols, ce->ignore);
    if (ce->labels64) ((int64_t *)k.labels)[r] = k.y[r];
    else ((int32_t *)k.labels)[r] = (int32_t)k.y[r];
  }
  for (int64_t i = 0; i < n; i++) tune_store_elem(k.xs, p->dtype, i, k.x[i]), k.x[i] = tune_load(k.xs, p->dtype, i);
  static Prob ready;   /* the problem the GPU is prepared for: the options are launch arguments */
  if (ready.cols != p->cols || ready.dtype != p->dtype || ready.op != p->op) {
    if (prepare_for(gpu, gen, ROWS, p->cols, p->dtype, p->op)) goto done;
    ready = *p;
  }
  for (int m = 0; m < NMAKERS; m++) {
    char what[200], opname[64];
    tune_Check c = { .first_bad = -1 };
    snprintf(opname, sizeof opname, "%s", p->opt->name);
    label(what, sizeof what, ROWS, p->cols, p->dtype, p->op, MAKER[m]);
    snprintf(what + strlen(what), sizeof what - strlen(what), " (%s)", opname);
    make(p, &k, m);
    tune_check_rows_ce(k.xs, k.labels, ce->labels64, p->op == GEN_CE ? k.dx : NULL, k.loss, k.lse, p->dtype, p->cols, 0,
                       ROWS, &k.o, tune_poison(p->dtype), &c);
    CHECK((c.bad == 0 && c.bad_sums == 0) == !wrong(p, m), "%s: %lld bad (first %lld), %lld rows off, max err %.3g ulp, max"
          " loss dev %.3g", what, (long long)c.bad, (long long)c.first_bad, (long long)c.bad_sums, c.max_err, c.max_sumdev);
    if (m == RIGHT_ROUNDED) CHECK(c.max_err <= 0.5, "%s: max err %.3g ulp", what, c.max_err);
    if (m == RIGHT_F32 || m == RIGHT_F32_RUN) f32_err[p->dtype] = fmax(f32_err[p->dtype], c.max_err), f32_dev[p->dtype] = fmax(f32_dev[p->dtype], c.max_sumdev);
    if (gpu) gpu_agrees(p, &k, &c, what);
  }
done:
  free(k.x), free(k.xs), free(k.dx), free(k.weight), free(k.tmp), free(k.labels);
}

/* The loss-only kernel's softcap r by softcap_poly.h's polynomial, in float32 as the kernel takes
** it: within its stated 3.05 u on t = 1 - 2 r (u = 2^-24) over its whole range, so within
** vr_tanh_err; a coefficient edited wrong fails here, without a GPU. */
static void poly_err(void)
{
  enum { N = 400000 };
  double worst = 0.;
  for (int k = -N; k <= N; k++) {
    const float s = SP_SMAX * (float)k / (float)N;
    worst = fmax(worst, fabs(2. * ((double)sp_r(s) - 1. / (1. + exp2((double)s)))));
  }
  CHECK(worst <= 3.1 * VR_U && worst <= vr_tanh_err(GEN_BF16), "softcap polynomial: %.3f u on t, stated 3.05 u",
        worst / VR_U);
  printf("softcap polynomial: %.3f u on t at most over |s| <= %.6f\n", worst / VR_U, (double)SP_SMAX);
}

int main(int argc, char **argv)
{
  static const int64_t COLS[] = { 2, 7, 64, 1000, 32003 };
  const int rc = gpu_mode(argc, argv, SEED, &gpu, &gen);
  if (rc) return rc;
  printf("seed %#x\n", SEED);
  poly_err();
  for (int dt = 0; dt < GEN_NDTYPE; dt++)
    for (int op = GEN_CE; op <= GEN_CE_LOSS; op++)
      for (size_t j = 0; j < sizeof COLS / sizeof *COLS; j++)
        for (size_t i = 0; i < sizeof OPTS / sizeof *OPTS; i++) run(&(Prob){ COLS[j], dt, op, &OPTS[i] });
  for (int dt = 0; dt < GEN_NDTYPE && !check_small(); dt++)   /* the two-read kernels' rows: none, all options */
    for (size_t i = 0; i < sizeof OPTS / sizeof *OPTS; i += sizeof OPTS / sizeof *OPTS - 1) run(&(Prob){ 262147, dt, GEN_CE, &OPTS[i] });
  for (int dt = 0; dt < GEN_NDTYPE; dt++)
    printf("%s: float32 math within %.3g ulp of the gradient's reference, the loss within %.3g\n", gen_dtype_name(dt),
           f32_err[dt], f32_dev[dt]);
  if (gpu) gen_close(gen), tune_gpu_close(gpu);
  return check_done(gpu ? "test_verify_ce gpu" : "test_verify_ce");
}
