/*
** ref.c — the float64 reference and the checking rule (see ref.h).
*/
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

tune_Tol tune_tolerance(int dtype, int op, int64_t cols)
{
  tune_Tol t;
  /* one unit in the last place of the output type; float32 math adds a few ulp of float32 */
  t.rtol = dtype == GEN_F32 ? 2e-5 : dtype == GEN_F16 ? 0x1p-10 : 0x1p-7;
  if (op == GEN_SOFTMAX) {
    t.atol = dtype == GEN_F16 ? 0x1p-24 : 1e-37;   /* smallest subnormal; ftz exp below 1e-38 */
    t.stol = t.rtol;
  } else {
    t.atol = t.rtol;                                /* log-probabilities near 0 */
    t.stol = t.rtol * (1. + log((double)cols));     /* exp amplifies rounding by |out| <= entropy */
  }
  return t;
}

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
    memcpy(&w, &f, 4);
    w = isnan(f) ? 0x7fc00000u : w + 0x7fffu + (w >> 16 & 1);   /* round to nearest even */
    ((uint16_t *)buf)[i] = (uint16_t)(w >> 16);
  }
}

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

void tune_check_rows(const void *x, const void *out, int dtype, int op, int64_t cols, int64_t r0, int64_t r1,
                     uint32_t poison, tune_Check *c)
{
  tune_Tol t = tune_tolerance(dtype, op, cols);
  double *xr = malloc((size_t)cols * sizeof *xr), *ref = malloc((size_t)cols * sizeof *ref);
  if (!xr || !ref) {
    c->bad = c->checked = -1;
    free(xr), free(ref);
    return;
  }
  for (int64_t r = r0; r < r1; r++) {
    double sum = 0.;
    for (int64_t j = 0; j < cols; j++) xr[j] = tune_load(x, dtype, r * cols + j);
    tune_ref_row(xr, cols, op, ref);
    for (int64_t j = 0; j < cols; j++) {
      const int64_t i = r * cols + j;
      const double o = tune_load(out, dtype, i), f = ref[j];
      int ok;
      if (bits(out, dtype, i) == poison) ok = 0;
      else if (isnan(f)) ok = isnan(o);
      else if (isinf(f)) ok = o == f;
      else {
        const double d = fabs(o - f);
        ok = d <= t.rtol * fabs(f) + t.atol;
        if (d == d && d / (fabs(f) + t.atol / t.rtol) > c->max_err) c->max_err = d / (fabs(f) + t.atol / t.rtol);
      }
      sum += op == GEN_SOFTMAX ? o : exp(o);
      c->checked++;
      if (!ok && c->bad++ == 0) c->first_bad = i;
    }
    if (!isnan(ref[0])) {
      const double dev = fabs(sum - 1.);
      if (!(dev <= t.stol)) c->bad_sums++;
      if (!(dev <= c->max_sumdev)) c->max_sumdev = dev;
    }
  }
  free(xr);
  free(ref);
}
