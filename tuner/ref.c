/*
** ref.c — the float64 reference and the checking rule (see ref.h).
*/
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "verify.h"   /* templates/: the rule, shared with the GPU check */

static double f16_to_double(uint16_t h)
{
  int e = h >> 10 & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return h & 0x8000 ? -v : v;
}

static uint16_t double_to_f16(double v)
{
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  double a = fabs(v);
  if (isnan(v)) return 0x7e00;
  if (a == 0.) return sign;
  if (a >= 65520.) return sign | 0x7c00;
  int e;
  frexp(a, &e);                        /* a = f * 2^e, f in [0.5, 1) */
  int q = e - 11 < -24 ? -24 : e - 11; /* quantum: 2^q (subnormals share 2^-24) */
  double m = nearbyint(ldexp(a, -q));  /* rounds half to even */
  return sign | (uint16_t)(q == -24 && m < 1024 ? m : ((q + 25) << 10) + (m - 1024));
}

double tune_load(const void *buf, int dtype, int64_t i)
{
  if (dtype == GEN_F32) return ((const float *)buf)[i];
  uint16_t h = ((const uint16_t *)buf)[i];
  if (dtype == GEN_F16) return f16_to_double(h);
  uint32_t w = (uint32_t)h << 16;
  float f;
  memcpy(&f, &w, 4);
  return f;
}

void tune_store_elem(void *buf, int dtype, int64_t i, double v)
{
  float f = (float)v;
  uint32_t w;
  if (dtype == GEN_F32) {
    ((float *)buf)[i] = f;
  } else if (dtype == GEN_F16) {
    ((uint16_t *)buf)[i] = double_to_f16(v);
  } else {
    f = (float)vr_round(v, GEN_BF16);   /* rounded once, to nearest even: then exact in float */
    memcpy(&w, &f, 4);
    ((uint16_t *)buf)[i] = (uint16_t)(isnan(f) ? 0x7fc0u : w >> 16);
  }
}

uint32_t tune_poison(int dtype)
{
  static const uint32_t bits[GEN_NDTYPE] = { 0x7fa5a5a5u, 0x7d5a, 0x7fa5 };   /* NaNs no arithmetic produces */
  return bits[dtype];
}

double tune_ulp(double v, int dtype) { return vr_ulp(v, dtype); }

void tune_ref_row(const double *x, int64_t cols, int op, double *ref)
{
  double m = -INFINITY, s = 0.;
  int nan = 0;
  for (int64_t c = 0; c < cols; c++) {
    if (isnan(x[c])) nan = 1;
    else if (x[c] > m) m = x[c];
  }
  if (nan || isinf(m)) {
    for (int64_t c = 0; c < cols; c++) ref[c] = NAN;
    return;
  }
  for (int64_t c = 0; c < cols; c++)
    if (!isinf(x[c])) s += exp(x[c] - m);
  const double ls = log(s);
  for (int64_t c = 0; c < cols; c++)
    ref[c] = op == GEN_SOFTMAX ? (isinf(x[c]) ? 0. : exp(x[c] - m) / s) : (x[c] - m) - ls;
}

/* The raw bits of element i, to spot the poison pattern left where nothing was written. */
static uint32_t bits(const void *buf, int dtype, int64_t i)
{
  uint32_t w;
  if (dtype != GEN_F32) return ((const uint16_t *)buf)[i];
  memcpy(&w, (const float *)buf + i, 4);
  return w;
}

/* What the rule needs of a row whose reference is not NaN: its max (returned), the log of its
** sum, and its sum's float32 error bound erow (verify.h). */
static double row_facts(const double *x, const double *ref, int64_t cols, int op, double *ls, double *erow)
{
  int64_t at = 0;
  for (int64_t j = 1; j < cols; j++)
    if (x[j] > x[at]) at = j;
  const double m = x[at], h0 = op == GEN_SOFTMAX ? ref[at] : exp(ref[at]);   /* exp(0) / sum */
  double h = 0.;
  for (int64_t j = 0; j < cols; j++)
    if (!isinf(x[j])) h += (op == GEN_SOFTMAX ? ref[j] : exp(ref[j])) * (m - x[j]);
  *ls = -log(h0);
  *erow = vr_row_err((double)cols, h);
  return m;
}

/* Check one element o (raw bits w) against ref; adds the row sums of the outputs, of the bounds
** and of the rounded reference (of their exps for log_softmax). */
static int check_elem(double o, uint32_t w, uint32_t poison, double ref, double d, int dtype, int op, double ls,
                      double erow, double sums[4], tune_Check *c)
{
  if (w == poison) return 0;
  if (isnan(ref)) return isnan(o);
  if (isinf(ref)) return o == ref;
  double lo, hi;
  vr_bounds(dtype, op != GEN_SOFTMAX, ref, d, erow, ls, &lo, &hi);
  const double r = vr_round(ref, dtype), e = vr_ulps(o, ref, dtype);
  const int sm = op == GEN_SOFTMAX;
  sums[0] += sm ? o : exp(o), sums[1] += sm ? lo : exp(lo), sums[2] += sm ? hi : exp(hi), sums[3] += sm ? r : exp(r);
  if (e == e && e > c->max_err) c->max_err = e;
  return lo <= o && o <= hi;
}

void tune_check_rows(const void *x, const void *out, int dtype, int op, int64_t cols, int64_t r0, int64_t r1,
                     uint32_t poison, tune_Check *c)
{
  double *xr = malloc((size_t)cols * sizeof *xr), *ref = malloc((size_t)cols * sizeof *ref);
  if (!xr || !ref) {
    c->bad = c->checked = -1;
    free(xr), free(ref);
    return;
  }
  for (int64_t r = r0; r < r1; r++) {
    double sums[4] = { 0, 0, 0, 0 }, ls = 0., erow = 0., m = 0.;
    for (int64_t j = 0; j < cols; j++) xr[j] = tune_load(x, dtype, r * cols + j);
    tune_ref_row(xr, cols, op, ref);
    const int nanrow = isnan(ref[0]);
    if (!nanrow) m = row_facts(xr, ref, cols, op, &ls, &erow);
    for (int64_t j = 0; j < cols; j++) {
      const int64_t i = r * cols + j;
      const int ok = check_elem(tune_load(out, dtype, i), bits(out, dtype, i), poison, ref[j], xr[j] - m, dtype, op,
                                ls, erow, sums, c);
      c->checked++;
      if (!ok && c->bad++ == 0) c->first_bad = i;
    }
    if (!nanrow) {
      const double slack = (double)cols * 0x1p-52 * sums[2];   /* float64 rounding of the sums */
      if (!(sums[1] - slack <= sums[0] && sums[0] <= sums[2] + slack)) c->bad_sums++;
      const double dev = fabs(sums[0] - sums[3]);
      if (!(dev <= c->max_sumdev)) c->max_sumdev = dev;
    }
  }
  free(xr);
  free(ref);
}

/* The row's sum of terms (dy*y, or dy for log_softmax_backward) and of their magnitudes. */
static double row_sum_bw(const double *y, const double *dy, int64_t cols, int op, double *a)
{
  double s = 0.;
  *a = 0.;
  for (int64_t c = 0; c < cols; c++) {
    const double t = op == GEN_LOG_SOFTMAX_BW ? dy[c] : dy[c] * y[c];
    s += t, *a += fabs(t);
  }
  return s;
}

void tune_ref_row_bw(const double *y, const double *dy, int64_t cols, int op, double *ref)
{
  double a;
  const double s = row_sum_bw(y, dy, cols, op, &a);
  for (int64_t c = 0; c < cols; c++) ref[c] = op == GEN_LOG_SOFTMAX_BW ? dy[c] - exp(y[c]) * s : y[c] * (dy[c] - s);
}

void tune_check_rows_bw(const void *y, const void *dy, const void *dx, int dtype, int op, int64_t cols, int64_t r0,
                        int64_t r1, uint32_t poison, tune_Check *c)
{
  double *yr = malloc((size_t)cols * sizeof *yr), *dr = malloc((size_t)cols * sizeof *dr);
  double *ref = malloc((size_t)cols * sizeof *ref);
  if (!yr || !dr || !ref) {
    c->bad = c->checked = -1;
    free(yr), free(dr), free(ref);
    return;
  }
  for (int64_t r = r0; r < r1; r++) {
    double a;
    for (int64_t j = 0; j < cols; j++) yr[j] = tune_load(y, dtype, r * cols + j), dr[j] = tune_load(dy, dtype, r * cols + j);
    const double s = row_sum_bw(yr, dr, cols, op, &a), es = vr_sum_err((double)cols, a);
    tune_ref_row_bw(yr, dr, cols, op, ref);
    for (int64_t j = 0; j < cols; j++) {
      const int64_t i = r * cols + j;
      const double o = tune_load(dx, dtype, i);
      int ok;
      if (bits(dx, dtype, i) == poison) ok = 0;
      else if (isnan(ref[j])) ok = isnan(o);
      else if (isinf(ref[j])) ok = o == ref[j];
      else {
        double lo, hi;
        vr_bounds_bw(dtype, op == GEN_LOG_SOFTMAX_BW, ref[j], yr[j], s, es, &lo, &hi);
        const double e = vr_ulps(o, ref[j], dtype);
        if (e == e && e > c->max_err) c->max_err = e;
        ok = lo <= o && o <= hi;
      }
      c->checked++;
      if (!ok && c->bad++ == 0) c->first_bad = i;
    }
  }
  free(yr), free(dr), free(ref);
}

/* ---- cross-entropy: the reference and st_check_ce's rule, step for step ---- */

/* What the rule needs of a row: z (the logits, softcapped), the float64 lse and its float32
** error bound, the sum of z and its error bound, and the row's terms of dz = (a p - c - b) k. */
typedef struct CeRow {
  double lse, lerr, t, terr, ez;   /* ez: a softcapped z's absolute error (vr_tanh_err) */
  int valid, bad;           /* a label in [0, cols); one outside it (not ignore_index) */
  double w, a, c, b, zl2;
} CeRow;

static double zof(double x, double cap) { return cap > 0. ? cap * tanh(x / cap) : x; }

static void ce_row(const double *x, int64_t cols, int64_t y, const tune_CeRef *o, int dtype, double *z, CeRow *r)
{
  const int capped = o->softcap > 0.;
  const double ez = capped ? o->softcap * vr_tanh_err(dtype) : 0.;   /* a softcapped z's absolute error */
  double m = -INFINITY, s = 0., h = 0., ta = 0.;
  r->t = 0.;
  for (int64_t j = 0; j < cols; j++) z[j] = zof(x[j], o->softcap), m = fmax(m, z[j]);
  for (int64_t j = 0; j < cols; j++) {
    r->t += z[j];
    if (!isinf(z[j])) s += exp(z[j] - m), h += exp(z[j] - m) * (m - z[j]), ta += fabs(z[j]);
  }
  const double ls = log(s);
  r->lse = m + ls;
  r->lerr = vr_ce_lse_err(dtype, m, ls, vr_row_err((double)cols, h / s), o->softcap);
  r->ez = ez;
  r->terr = vr_sum_err((double)cols, ta) + (capped ? 3. * VR_U * ta + (double)cols * ez : 0.);
  const int ignored = y == o->ignore;
  r->bad = !ignored && (y < 0 || y >= cols), r->valid = !ignored && !r->bad;
  r->w = r->valid ? (o->weight ? (double)o->weight[y] : 1.) : 0.;
  const double eps = o->smoothing, sc = o->scale;
  r->a = r->valid ? sc * ((1. - eps) * r->w + eps + 2. * o->zloss * r->lse) : 0.;
  r->c = r->valid ? sc * eps / (double)cols : 0.;
  r->b = sc * (1. - eps) * r->w;
  r->zl2 = fabs(2. * o->zloss * sc);
}

/* Element j's reference (z[j] given) and the softcap's factor k. */
static double ce_ref(const CeRow *r, const tune_CeRef *o, double zj, int64_t j, int64_t y, double *p, double *k)
{
  *p = exp(zj - r->lse);
  *k = o->softcap > 0. ? 1. - (zj / o->softcap) * (zj / o->softcap) : 1.;
  return (r->a * *p - r->c - (j == y ? r->b : 0.)) * *k;
}

static double ce_loss(const CeRow *r, const tune_CeRef *o, const double *z, int64_t cols, int64_t y)
{
  if (!r->valid) return r->bad ? NAN : 0.;
  const double eps = o->smoothing;
  return (1. - eps) * r->w * (r->lse - z[y]) + eps * (r->lse - r->t / (double)cols) + o->zloss * r->lse * r->lse;
}

void tune_ref_row_ce(const double *x, int64_t cols, int64_t y, const tune_CeRef *o, double *dx, double *loss, double *lse)
{
  double *z = malloc((size_t)cols * sizeof *z), p, k;
  CeRow r;
  if (!z) {
    *loss = *lse = NAN;
    return;
  }
  ce_row(x, cols, y, o, 0, z, &r);   /* the reference: its bounds unused */
  *lse = r.lse;
  *loss = ce_loss(&r, o, z, cols, y);
  for (int64_t j = 0; dx && j < cols; j++) dx[j] = r.valid ? ce_ref(&r, o, z[j], j, y, &p, &k) : 0.;
  free(z);
}

/* Row r's loss and lse: the number of them off (0 or 1); the loss's deviation into c. */
static int ce_check_scalars(const CeRow *r, const tune_CeRef *o, const double *z, int64_t cols, int64_t y, double loss,
                            double lse, tune_Check *c)
{
  const double want = ce_loss(r, o, z, cols, y), eps = o->smoothing;
  const double tol = r->valid ? vr_ce_loss_tol((1. - eps) * r->w, r->lse, r->lerr + r->ez, z[y], r->t, r->terr, eps, o->zloss,
                                               (double)cols, want) : 0.;
  const double dev = fabs(loss - want);
  const int okl = r->bad ? isnan(loss) : dev <= tol;
  const int okse = fabs(lse - r->lse) <= r->lerr + 2. * VR_U * fabs(r->lse);
  if (r->valid && dev == dev && (float)dev > c->max_sumdev) c->max_sumdev = (float)dev;
  return !okl || !okse;
}

void tune_check_rows_ce(const void *x, const void *labels, int labels64, const void *dx, const float *loss, const float *lse,
                        int dtype, int64_t cols, int64_t r0, int64_t r1, const tune_CeRef *o, uint32_t poison, tune_Check *c)
{
  double *xr = malloc((size_t)cols * sizeof *xr), *z = malloc((size_t)cols * sizeof *z);
  if (!xr || !z) {
    c->bad = c->checked = -1;
    free(xr), free(z);
    return;
  }
  for (int64_t row = r0; row < r1; row++) {
    const int64_t y = labels64 ? ((const int64_t *)labels)[row] : ((const int32_t *)labels)[row];
    CeRow r;
    for (int64_t j = 0; j < cols; j++) xr[j] = tune_load(x, dtype, row * cols + j);
    ce_row(xr, cols, y, o, dtype, z, &r);
    for (int64_t j = 0; dx && j < cols; j++) {
      const int64_t i = row * cols + j;
      const double out = tune_load(dx, dtype, i);
      int ok = bits(dx, dtype, i) != poison;
      if (!r.valid) ok = ok && out == 0.;
      else {
        double p, k, lo, hi;
        const double ref = ce_ref(&r, o, z[j], j, y, &p, &k), bj = j == y ? r.b : 0.;
        vr_bounds_ce(dtype, ref, z[j], r.a, p, r.c, bj, r.lse, r.lerr, r.zl2, o->softcap, k, &lo, &hi);
        ok = ok && lo <= out && out <= hi;
        const double e = vr_ulps(out, ref, dtype);
        if (e == e && e > c->max_err) c->max_err = e;
      }
      c->checked++;
      if (!ok && c->bad++ == 0) c->first_bad = i;
    }
    c->bad_sums += ce_check_scalars(&r, o, z, cols, y, loss[row], lse[row], c);
  }
  free(xr), free(z);
}
