/*
** attn.c — attention_softmax in the tuner (tune.h, ref.h): its options and launch block, the
** elements its kernels read, and the CPU reference and check by the rule of templates/verify.h
** and verify_attn.h (the GPU check, st_check_attn in attn_aux.cu, applies the same rule).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "tune.h"
#include "verify.h"
#include "attn_mask.h"
#include "verify_attn.h"

#define OFFSET_MAX ((int64_t)1 << 40)

void tune_attn_defaults(tune_AttnOptions *o)
{
  memset(o, 0, sizeof *o);
  o->q = o->h = 1;
  o->offset = TUNE_ATTN_AUTO;
  o->window = -1;
  o->scale = 1.f;
}

int tune_attn_check(const gen_Problem *p, const tune_AttnOptions *o, char *err, size_t errlen)
{
  const int windowed = (p->mask & GEN_MASK_WINDOW) != 0;
  if (o->q < 1 || o->h < 1 || o->q > p->rows || p->rows % o->q || (p->rows / o->q) % o->h)
    return snprintf(err, errlen, "bad attention shape: Q %lld and H %lld must divide rows %lld (rows = B*H*Q)",
                    (long long)o->q, (long long)o->h, (long long)p->rows), 2;
  if (windowed && o->window < 0)
    return snprintf(err, errlen, "mask %s needs a window >= 0 (its left width), got %lld", gen_mask_name(p->mask),
                    (long long)o->window), 2;
  if (!windowed && o->window >= 0)
    return snprintf(err, errlen, "a window (%lld) is for the masks with a window (window, causal_window, padding_window, ...), not %s",
                    (long long)o->window, gen_mask_name(p->mask)), 2;
  if (o->window < -1) return snprintf(err, errlen, "bad window %lld: expected a width >= 0", (long long)o->window), 2;
  if (!isfinite(o->scale)) return snprintf(err, errlen, "bad scale %g: expected a finite number", o->scale), 2;
  if (!isfinite(o->softcap) || o->softcap < 0.f)
    return snprintf(err, errlen, "bad softcap %g: expected a finite number >= 0 (0: none)", o->softcap), 2;
  if (o->offset != TUNE_ATTN_AUTO && (o->offset > OFFSET_MAX || o->offset < -OFFSET_MAX))
    return snprintf(err, errlen, "bad causal offset %lld: expected at most 2^40 either way", (long long)o->offset), 2;
  if (o->window > OFFSET_MAX) return snprintf(err, errlen, "bad window %lld: expected at most 2^40", (long long)o->window), 2;
  return 0;
}

void tune_attn_params(const gen_Problem *p, const tune_AttnOptions *o, AttnParams *a)
{
  memset(a, 0, sizeof *a);
  a->cols = p->cols;
  a->q = o->q, a->h = o->h;
  a->offset = o->offset == TUNE_ATTN_AUTO ? p->cols - o->q : o->offset;
  a->window = o->window;
  a->scale = o->scale, a->softcap = o->softcap;
}

/* The key lengths the tuner times the batches of p by (am_time_length), malloc'ed; NULL out of memory. */
static int *fill_lengths(const gen_Problem *p, const AttnParams *a)
{
  const int64_t batches = p->rows / a->q / a->h;
  int *len = malloc((size_t)(batches > 0 ? batches : 1) * sizeof *len);
  for (int64_t b = 0; len && b < batches; b++) len[b] = am_time_length(b, p->cols);
  return len;
}

int64_t tune_attn_visible(const gen_Problem *p, const AttnParams *a)
{
  int *len = fill_lengths(p, a);
  int64_t n = 0;
  long long lo, hi;
  if (!len) return 0;
  for (int64_t r = 0; r < p->rows; r++) {
    am_range(p->mask, a, len, p->cols, r, &lo, &hi);
    n += hi - lo;
  }
  free(len);
  return n;
}

/* Row r's score at key c from input v, and its part before the bias. */
static double score(const tune_AttnRef *o, int64_t r, long long d, int64_t c, double v, double *part)
{
  const double b = o->slopes ? -(double)o->slopes[r / o->p.q % o->p.h] * fabs((double)(d - c))
                   : o->bias ? (double)o->bias[am_bias_row(&o->p, r) + c] : 0.;
  return vr_attn_z(v, o->p.scale, o->p.softcap, b, part);
}

void tune_ref_row_attn(const double *x, int64_t cols, int64_t row, const tune_AttnRef *o, double *ref)
{
  long long lo, hi;
  const long long d = am_range(o->mask, &o->p, o->lengths, cols, row, &lo, &hi);
  double m = -INFINITY, s = 0., part;
  int nan = 0;
  for (int64_t c = lo; c < hi; c++) {
    const double z = score(o, row, d, c, x[c], &part);
    if (isnan(z)) nan = 1;
    else if (z > m) m = z;
  }
  for (int64_t c = lo; c < hi && m > -INFINITY; c++) {
    const double z = score(o, row, d, c, x[c], &part);
    if (!isinf(z)) s += exp(z - m);
  }
  for (int64_t c = 0; c < cols; c++) {
    const double z = c >= lo && c < hi ? score(o, row, d, c, x[c], &part) : -INFINITY;
    ref[c] = nan || m == INFINITY ? NAN : isinf(z) || m == -INFINITY ? 0. : exp(z - m) / s;
  }
}

uint32_t tune_bits_of(const void *buf, int dtype, int64_t i)
{
  uint32_t w;
  if (dtype != GEN_F32) return ((const uint16_t *)buf)[i];
  memcpy(&w, (const float *)buf + i, 4);
  return w;
}

/* One row: the rule's figures from its reference (row error, and the weighted score error). */
static void check_row(const double *x, const double *ref, const void *out, int dtype, int64_t cols, int64_t row,
                      const tune_AttnRef *o, uint32_t poison, tune_Check *c);

void tune_check_rows_attn(const void *x, const void *out, int dtype, int64_t cols, int64_t r0, int64_t r1,
                          const tune_AttnRef *o, uint32_t poison, tune_Check *c)
{
  double *xr = malloc((size_t)cols * sizeof *xr), *ref = malloc((size_t)cols * sizeof *ref);
  for (int64_t r = r0; xr && ref && r < r1; r++) {
    for (int64_t j = 0; j < cols; j++) xr[j] = tune_load(x, dtype, r * cols + j);
    tune_ref_row_attn(xr, cols, r, o, ref);
    check_row(xr, ref, out, dtype, cols, r, o, poison, c);
  }
  free(xr), free(ref);
}

static void check_row(const double *x, const double *ref, const void *out, int dtype, int64_t cols, int64_t row,
                      const tune_AttnRef *o, uint32_t poison, tune_Check *c)
{
  long long lo, hi;
  const long long d = am_range(o->mask, &o->p, o->lengths, cols, row, &lo, &hi);
  double m = -INFINITY, h = 0., hz = 0., part;
  for (int64_t j = lo; j < hi; j++) {
    const double z = score(o, row, d, j, x[j], &part);
    if (ref[j] > 0.) m = z > m ? z : m;
  }
  for (int64_t j = lo; j < hi; j++) {
    const double z = score(o, row, d, j, x[j], &part);
    if (ref[j] > 0.) h += ref[j] * (m - z), hz += ref[j] * vr_attn_zerr(dtype, z, part, z - part, o->p.softcap);
  }
  const double erow = vr_row_err((double)(hi - lo), h) + hz;
  for (int64_t j = 0; j < cols; j++) {
    const int64_t i = row * cols + j;
    const double v = tune_load(out, dtype, i);
    int ok = tune_bits_of(out, dtype, i) != poison;
    c->checked++;
    if (isnan(ref[j])) ok = ok && isnan(v);
    else if (ref[j] == 0.) ok = ok && v == 0.;
    else {
      double blo, bhi;
      const double z = score(o, row, d, j, x[j], &part);
      vr_bounds(dtype, 0, ref[j], z - m, erow + vr_attn_zerr(dtype, z, part, z - part, o->p.softcap), 0., &blo, &bhi);
      ok = ok && blo <= v && v <= bhi;
      const double e = vr_ulps(v, ref[j], dtype);
      if (e > c->max_err) c->max_err = e;
    }
    if (!ok) {
      if (c->first_bad < 0) c->first_bad = i;
      c->bad++;
    }
  }
}
