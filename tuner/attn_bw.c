/*
** attn_bw.c — attention_softmax_backward's CPU check (ref.h), by the rule of verify.h and
** verify_attn_bw.h; the GPU check, st_check_attn_bw in attn_bw_aux.cu, applies the same rule.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "tune.h"
#include "verify.h"
#include "attn_mask.h"
#include "verify_attn_bw.h"

void tune_ref_row_attn_bw(const double *x, const double *y, const double *dy, int64_t cols, int64_t row, const tune_AttnRef *o,
                          double *ref)
{
  long long lo, hi;
  double s = 0., t2;
  am_range(o->mask, &o->p, o->lengths, cols, row, &lo, &hi);
  for (int64_t c = lo; c < hi; c++) s += dy[c] * y[c];
  for (int64_t c = 0; c < cols; c++)
    ref[c] = c >= lo && c < hi ? vr_attn_bw_k(x ? x[c] : 0., o->p.scale, o->p.softcap, &t2) * y[c] * (dy[c] - s) : 0.;
}

/* Row `row` of dx against the rule, from its inputs loaded (x NULL without a softcap). */
static void check_row(const double *x, const double *y, const double *dy, const void *dx, int dtype, int64_t cols, int64_t row,
                      const tune_AttnRef *o, uint32_t poison, tune_Check *c)
{
  long long lo, hi;
  const int capped = o->p.softcap > 0.f;
  double s = 0., a = 0.;
  am_range(o->mask, &o->p, o->lengths, cols, row, &lo, &hi);
  for (int64_t j = lo; j < hi; j++) s += dy[j] * y[j], a += fabs(dy[j] * y[j]);
  const double es = vr_sum_err((double)(hi - lo), a);
  for (int64_t j = 0; j < cols; j++) {
    const int64_t i = row * cols + j;
    const double v = tune_load(dx, dtype, i);
    int ok = tune_bits_of(dx, dtype, i) != poison;
    c->checked++;
    if (j < lo || j >= hi) ok = ok && v == 0.;
    else {
      double t2, blo, bhi;
      const double g = y[j] * (dy[j] - s), k = vr_attn_bw_k(capped ? x[j] : 0., o->p.scale, o->p.softcap, &t2);
      if (isnan(k * g)) ok = ok && isnan(v);
      else {
        vr_bounds_attn_bw(dtype, g, k, t2, o->p.scale, y[j], es, capped, &blo, &bhi);
        ok = ok && blo <= v && v <= bhi;
        const double e = vr_ulps(v, k * g, dtype);
        if (e > c->max_err) c->max_err = e;
      }
    }
    if (!ok) {
      if (c->first_bad < 0) c->first_bad = i;
      c->bad++;
    }
  }
}

void tune_check_rows_attn_bw(const void *x, const void *y, const void *dy, const void *dx, int dtype, int64_t cols, int64_t r0,
                             int64_t r1, const tune_AttnRef *o, uint32_t poison, tune_Check *c)
{
  const int capped = o->p.softcap > 0.f;
  double *xr = malloc((size_t)cols * sizeof *xr), *yr = malloc((size_t)cols * sizeof *yr), *dr = malloc((size_t)cols * sizeof *dr);
  for (int64_t r = r0; xr && yr && dr && r < r1; r++) {
    for (int64_t j = 0; j < cols; j++) {
      xr[j] = capped ? tune_load(x, dtype, r * cols + j) : 0.;
      yr[j] = tune_load(y, dtype, r * cols + j);
      dr[j] = tune_load(dy, dtype, r * cols + j);
    }
    check_row(capped ? xr : NULL, yr, dr, dx, dtype, cols, r, o, poison, c);
  }
  free(xr), free(yr), free(dr);
}
