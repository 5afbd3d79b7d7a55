/*
** test_verify.c — the verifier itself (the rule of templates/verify.h): outputs that are right
** must pass and outputs that are wrong must not, for every dtype and op.
**   right: the float64 reference rounded to the dtype (to nearest even, subnormals included),
**          and the float32 arithmetic of the kernels (expf, a tree sum, 1/sum) rounded once;
**          rows of every class the verifier draws (ordinary, wide, large-magnitude, offset,
**          some -inf, all -inf, NaN), cols 1..64 and 1000, 70000, f16 rows of 1000000 and
**          1048576 where nearly every output is subnormal, f32 and bf16 rows of 16M (those
**          left out under ST_TEST_SMALL, check.h);
**   wrong: one element a few ulps off, one skipped (poisoned or zero), a row's last vector
**          unwritten, the max not subtracted, the sum over cols-1, two rows swapped, a NaN row
**          not propagated, an all -inf row giving 0, every element biased the same way.
** "A few ulps" are 3 (2 for the bias) of a 16-bit dtype. For f32 the float32 arithmetic itself
** errs by tens to hundreds of f32 ulps (verify.h), so f32's wrong outputs are 2^-14 off.
**   test_verify        the CPU check (tune_check_rows); label cpu
**   test_verify gpu    the same cases through the GPU check kernel, whose verdict and counts
**                      must equal the CPU's (label gpu; exit 77, skipped, without a GPU)
** Inputs come from a fixed seed (SEED below), so a failure repeats.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "ref.h"
#include "tune.h"
#include "verify_util.h"

#define SEED 0x5eed2026u

enum { RIGHT_ROUNDED, RIGHT_F32, WRONG_ULPS, WRONG_POISON, WRONG_ZERO, WRONG_LASTVEC, WRONG_NOMAX, WRONG_SUMLESS,
       WRONG_SWAP, WRONG_NANROW, WRONG_ALLINF, WRONG_BIAS, NMAKERS };
static const char *const MAKER[NMAKERS] = { "rounded reference", "float32 math", "one element off", "one poisoned",
                                            "one zeroed", "last vector unwritten", "max not subtracted",
                                            "sum over cols-1", "rows swapped", "NaN row not propagated",
                                            "all -inf row as 0", "every element biased" };

typedef struct Prob { int64_t rows, cols; int dtype, op; } Prob;

static tune_Gpu *gpu;   /* gpu mode */
static gen_State *gen;

/* Row r's inputs, as the GPU's fill draws them: row 0 offset by +1e4 (so the max matters) with
** its last element the max by 24 (so it dominates the sum), rows 1..3 the specials (some -inf,
** all -inf, a NaN), then the kinds in turn. */
static void fill_row(double *x, int64_t cols, int64_t r)
{
  static const double SCALE[8] = { 3, 3, 3, 12, 40, 1000, 4, 4 }, OFFSET[8] = { 0, 0, 0, 0, 0, 0, 1e4, -1e4 };
  const int kind = r == 0 ? 6 : (int)(r % 8);
  for (int64_t c = 0; c < cols; c++) {
    x[c] = OFFSET[kind] + SCALE[kind] * uniform();
    if ((r == 1 && c % 4 == 0) || r == 2) x[c] = -INFINITY;
  }
  if (r == 0) x[cols - 1] = 1e4 + 24;
  if (r == 3) x[cols / 2] = NAN;
}

/* A row computed in float32 as the kernels do; nomax: without subtracting the max; skip >= 0:
** that element left out of the sum. */
static void f32_row(const double *x, int64_t cols, int op, int nomax, int64_t skip, double *out, float *e)
{
  float m = -INFINITY;
  int nan = 0;
  for (int64_t c = 0; c < cols; c++) {
    if (isnan(x[c])) nan = 1;
    else if ((float)x[c] > m) m = (float)x[c];
  }
  if (nomax) m = 0.f;
  for (int64_t c = 0; c < cols; c++) e[c] = c == skip || isinf(x[c]) ? 0.f : expf((float)x[c] - m);
  const float s = tree_sum(e, cols), k = 1.f / s, ls = logf(s);
  for (int64_t c = 0; c < cols; c++) {
    const float o = op == GEN_SOFTMAX ? (isinf(x[c]) ? 0.f : expf((float)x[c] - m) * k) : ((float)x[c] - m) - ls;
    out[c] = nan || isinf(m) ? NAN : o;
  }
}

static int64_t argmax(const double *x, int64_t cols)
{
  int64_t at = 0;
  for (int64_t c = 1; c < cols; c++)
    if (x[c] > x[at]) at = c;
  return at;
}

/* The output of maker for rows of input x (as loaded from the dtype), into y (dtype). */
static void make(const Prob *p, int maker, double *x, void *y, double *row, float *tmp)
{
  const int64_t R = p->rows, C = p->cols;
  const uint32_t poison = tune_poison(p->dtype);
  for (int64_t r = 0; r < R; r++) {
    double *xr = x + r * C;
    /* the element to spoil: the max for softmax (its output is near 1); for log_softmax, whose
    ** max's output is near 0 and so only absolutely bounded, the first */
    const int64_t at = argmax(xr, C), spot = p->op == GEN_SOFTMAX ? at : 0;
    if (maker == RIGHT_F32 || (r == 0 && maker == WRONG_NOMAX)) f32_row(xr, C, p->op, maker == WRONG_NOMAX, -1, row, tmp);
    else if (r == 0 && maker == WRONG_SUMLESS) f32_row(xr, C, p->op, 0, at, row, tmp);
    else tune_ref_row(xr, C, p->op, row);
    if (r == 3 && maker == WRONG_NANROW) {   /* the row as if its NaN were -inf */
      xr[C / 2] = -INFINITY;
      tune_ref_row(xr, C, p->op, row);
      xr[C / 2] = NAN;
    }
    for (int64_t c = 0; c < C; c++) {
      double v = row[c];
      if (r == 2 && maker == WRONG_ALLINF) v = 0.;
      if (maker == WRONG_BIAS && r != 2 && r != 3) v = off(v, p->dtype, 2);
      if (r == 0 && c == spot && maker == WRONG_ULPS) v = off(v, p->dtype, 3);
      if (r == 0 && c == spot && maker == WRONG_ZERO) v = 0.;
      tune_store_elem(y, p->dtype, r * C + c, v);
      if (r == 0 && ((c == spot && maker == WRONG_POISON) || (c >= C - 4 && maker == WRONG_LASTVEC)))
        p->dtype == GEN_F32 ? memcpy((float *)y + c, &poison, 4) : (void)(((uint16_t *)y)[c] = (uint16_t)poison);
    }
  }
  if (maker == WRONG_SWAP) {   /* rows 0 and 4 (offset and ordinary) trade places */
    const size_t n = (size_t)C * (size_t)gen_dtype_size(p->dtype);
    char *a = y, *b = (char *)y + 4 * n, t;
    for (size_t i = 0; i < n; i++) t = a[i], a[i] = b[i], b[i] = t;
  }
}

/* The GPU check kernel's verdict on the same x and y (tune_gpu_prepare'd for p); it must agree
** with the CPU's c. */
static void gpu_agrees(const Prob *p, const void *xs, const void *y, const tune_Check *c, const char *what)
{
  char err[1024] = "";
  tune_Check g;
  const size_t n = (size_t)(p->rows * p->cols) * (size_t)gen_dtype_size(p->dtype);
  const int ok = !gpu_check(gpu, xs, NULL, y, n, &g, err, sizeof err);
  CHECK(ok, "%s: GPU check: %s", what, err);
  CHECK(!ok || (g.bad == c->bad && g.bad_sums == c->bad_sums && g.first_bad == c->first_bad), "%s: GPU says %lld bad"
        " (%lld sums, first %lld), CPU %lld (%lld, %lld)", what, (long long)g.bad, (long long)g.bad_sums,
        (long long)g.first_bad, (long long)c->bad, (long long)c->bad_sums, (long long)c->first_bad);
}

/* Every maker in makers (a bit set) over one problem; right ones must pass, wrong ones fail. */
static void run(const Prob *p, unsigned makers)
{
  const int64_t n = p->rows * p->cols;
  const int es = gen_dtype_size(p->dtype);
  double *x = malloc((size_t)n * sizeof *x), *row = malloc((size_t)p->cols * sizeof *row);
  float *tmp = malloc((size_t)p->cols * sizeof *tmp);
  void *xs = malloc((size_t)(n * es)), *y = malloc((size_t)(n * es));
  if (!x || !row || !tmp || !xs || !y) {
    CHECK(0, "out of memory");
    goto done;
  }
  for (int64_t r = 0; r < p->rows; r++) fill_row(x + r * p->cols, p->cols, r);
  for (int64_t i = 0; i < n; i++) tune_store_elem(xs, p->dtype, i, x[i]), x[i] = tune_load(xs, p->dtype, i);
  if (prepare_for(gpu, gen, p->rows, p->cols, p->dtype, p->op)) goto done;
  for (int k = 0; k < NMAKERS; k++) {
    if (!(makers >> k & 1)) continue;
    char what[160];
    tune_Check c = { .first_bad = -1 };
    label(what, sizeof what, p->rows, p->cols, p->dtype, p->op, MAKER[k]);
    make(p, k, x, y, row, tmp);
    tune_check_rows(xs, y, p->dtype, p->op, p->cols, 0, p->rows, tune_poison(p->dtype), &c);
    const int passed = c.bad == 0 && c.bad_sums == 0;
    CHECK(passed == (k <= RIGHT_F32), "%s: %lld bad (first %lld), %lld rows' sums off, max err %.3g ulp", what,
          (long long)c.bad, (long long)c.first_bad, (long long)c.bad_sums, c.max_err);
    if (k <= RIGHT_F32) CHECK(k != RIGHT_ROUNDED || c.max_err <= 0.5, "%s: max err %.3g ulp", what, c.max_err);
    if (gpu) gpu_agrees(p, xs, y, &c, what);
  }
done:
  free(x), free(row), free(tmp), free(xs), free(y);
}

/* The GPU check kernel (aux.cu with check.cu and verify.h) compiles with NVRTC for sm_80 and
** sm_90, every dtype and op: the CPU half of the GPU test. */
static void aux_compiles(void)
{
  char err[1024];
  if (gen_open(&gen, NULL, err, sizeof err)) {
    CHECK(0, "gen: %s", err);
    return;
  }
  for (int dt = 0; dt < GEN_NDTYPE; dt++)
    for (int op = 0; op <= GEN_LOG_SOFTMAX_BW; op++) {
      const int arch = (dt + op) % 2 ? 80 : 90;
      gen_Problem p = { .rows = 8, .cols = 1000, .dtype = dt, .op = op, .arch = arch };
      char *src = NULL;
      gen_Cubin c;
      int ok = gen_aux(gen, &p, "aux", &src) == 0 && gen_compile(src, "aux.cu", arch, &c, err, sizeof err) == 0;
      CHECK(ok, "aux.cu %s %s sm_%d: %s", gen_dtype_name(dt), gen_op_name(op), arch, src ? err : gen_error(gen));
      if (ok) gen_cubin_free(&c);
      free(src);
    }
  gen_close(gen);
  gen = NULL;
}

#define RIGHT ((1u << RIGHT_ROUNDED) | (1u << RIGHT_F32))
#define ALL ((1u << NMAKERS) - 1)

int main(int argc, char **argv)
{
  const int rc = gpu_mode(argc, argv, SEED, &gpu, &gen);
  if (rc) return rc;
  if (!gpu) aux_compiles();
  printf("seed %#x\n", SEED);
  for (int dt = 0; dt < GEN_NDTYPE; dt++)
    for (int op = 0; op < GEN_SOFTMAX_BW; op++) {   /* the backward ops: test_verify_bw.c */
      for (int64_t cols = 1; cols <= 64; cols++)   /* on the GPU, a few: each compiles its check kernel */
        if (!gpu || cols <= 2 || cols == 7 || cols == 64) run(&(Prob){ 8, cols, dt, op }, cols >= 2 ? ALL : RIGHT);
      run(&(Prob){ 8, 1000, dt, op }, ALL);
      run(&(Prob){ 8, 70000, dt, op }, ALL);
    }
  for (int op = 0; op < GEN_SOFTMAX_BW && !check_small(); op++) {   /* f16 rows of mostly subnormal outputs */
    run(&(Prob){ 1, 1000000, GEN_F16, op }, RIGHT);
    run(&(Prob){ 5, 1048576, GEN_F16, op }, ALL);
  }
  if (!check_small()) {
    run(&(Prob){ 1, 16777216, GEN_BF16, GEN_SOFTMAX }, RIGHT);
    run(&(Prob){ 1, 16777216, GEN_F32, GEN_SOFTMAX }, RIGHT);
  }
  if (gpu) gen_close(gen), tune_gpu_close(gpu);
  return check_done(gpu ? "test_verify gpu" : "test_verify");
}
