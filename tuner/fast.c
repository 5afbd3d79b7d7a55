/*
** fast.c — the fast sweep's pick (see tune.h): the space ranked by a prior fitted offline on
** full sweeps (fast_prior.h, made by lab/fast_sim.py), and cut to the `keep` best-ranked
** configs plus the best-ranked one of each family (passes, hold, row or split; the ring with
** claimed parts, xchg=claim, and attention's pair=mirror apart), so that no family goes untried.
** A config's score is the sum, over its features (family, threads, threads per row, bytes per
** access, hint, reduce, split, blocks per wave, values per thread), of the mean log(time / best)
** the full sweeps saw for it in the problem's regime (row bytes by 4x, rows <= 64, <= 8192 or
** more), else over all regimes. Lower is better.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"
#include "fast_prior.h"

#define NPRIOR ((int)(sizeof PRIOR / sizeof PRIOR[0]))

typedef struct Knobs {
  int threads, items, vec, passes, rows, split;
  char reduce[8], hold[8], xchg[8], hint[8];
  int mirror;               /* pair=mirror (attention_softmax; a config without pair is none) */
} Knobs;

/* floor(log2(x)) for x >= 1 (0 below), as the script's lg(). */
static int ilog2(int64_t x)
{
  int k = 0;
  while (x > 1) x >>= 1, k++;
  return k;
}

/* The value of knob `name` in config string s, into out; 1 when found. */
static int knob(const char *s, const char *name, char *out, size_t outlen)
{
  size_t len = strlen(name);
  for (const char *q = s; q && *q; q = strchr(q, ','), q = q ? q + 1 : NULL)
    if (strncmp(q, name, len) == 0 && q[len] == '=') {
      size_t n = strcspn(q + len + 1, ",");
      if (n >= outlen) n = outlen - 1;
      memcpy(out, q + len + 1, n);
      out[n] = '\0';
      return 1;
    }
  return 0;
}

static int knob_int(const char *s, const char *name, int *v)
{
  char buf[16];
  if (!knob(s, name, buf, sizeof buf)) return 0;
  *v = atoi(buf);
  return *v > 0;
}

static int parse(const char *s, Knobs *k)
{
  char pair[8];
  k->mirror = knob(s, "pair", pair, sizeof pair) && strcmp(pair, "mirror") == 0;   /* optional: absent is none */
  return knob_int(s, "threads", &k->threads) && knob_int(s, "items", &k->items) && knob_int(s, "vec", &k->vec) &&
         knob_int(s, "passes", &k->passes) && knob_int(s, "rows", &k->rows) && knob_int(s, "split", &k->split) &&
         knob(s, "reduce", k->reduce, sizeof k->reduce) && knob(s, "hold", k->hold, sizeof k->hold) &&
         knob(s, "xchg", k->xchg, sizeof k->xchg) && knob(s, "hint", k->hint, sizeof k->hint);
}

static int cmp_prior(int cb, int rb, const char *f, int i)
{
  if (cb != PRIOR[i].cb) return cb < PRIOR[i].cb ? -1 : 1;
  if (rb != PRIOR[i].rb) return rb < PRIOR[i].rb ? -1 : 1;
  return strcmp(f, PRIOR[i].f);
}

/* The table's value of feature f in regime (cb, rb), or NAN. The table is sorted. */
static double prior(int cb, int rb, const char *f)
{
  int lo = 0, hi = NPRIOR - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = cmp_prior(cb, rb, f, mid);
    if (c == 0) return PRIOR[mid].v;
    if (c < 0) hi = mid - 1;
    else lo = mid + 1;
  }
  return NAN;
}

/* Config k's score for p (see the top of the file). */
static double score(const gen_Problem *p, const Knobs *k)
{
  const int es = gen_dtype_size(p->dtype), sms = p->sms > 0 ? p->sms : 132;
  const char *where = k->split == 1 ? "row" : k->xchg;
  /* xchg=claim: the ring with claimed parts, scored as the ring (xchg=global) while the prior has
  ** no figures of its own for it */
  if (strcmp(where, "claim") == 0 && isnan(prior(-1, -1, "fam=1/ring/claim"))) where = "global";
  const int cb = ilog2(p->cols * es) / 2 > 10 ? 10 : ilog2(p->cols * es) / 2;
  const int rb = p->rows <= 64 ? 0 : p->rows <= 8192 ? 1 : 2;
  const int per_sm = 2048 / k->threads > 1 ? 2048 / k->threads : 1;
  const double blocks = (double)((p->rows + k->rows - 1) / k->rows) * k->split;
  int fill = (int)floor(log2(blocks / ((double)sms * per_sm)) + 0.5), it = ilog2((int64_t)k->items * k->vec);
  fill = fill < -4 ? -4 : fill > 6 ? 6 : fill;
  char f[9][48];
  snprintf(f[0], sizeof f[0], "fam=%d/%s/%s", k->passes, k->hold, where);
  snprintf(f[1], sizeof f[1], "t=%d/%s", k->threads, where);
  snprintf(f[2], sizeof f[2], "G=%d/%s", ilog2(k->threads / k->rows), where);
  snprintf(f[3], sizeof f[3], "vb=%d", k->vec * es);
  snprintf(f[4], sizeof f[4], "hint=%s/%d", k->hint, k->passes);
  snprintf(f[5], sizeof f[5], "red=%s/%s", k->reduce, where);
  snprintf(f[6], sizeof f[6], "split=%d", k->split);
  snprintf(f[7], sizeof f[7], "fill=%d", fill);
  snprintf(f[8], sizeof f[8], "it=%d/%s", it > 7 ? 7 : it, k->hold);
  double s = 0;
  for (int i = 0; i < 9; i++) {
    double v = prior(cb, rb, f[i]);
    if (isnan(v)) v = prior(-1, -1, f[i]);
    s += isnan(v) ? 0.5 : v;
  }
  return s;
}

typedef struct Ranked {
  double score;
  int index;                /* in the space's order: ties go to the earlier */
  int family;               /* passes, hold and row or split, as a small number */
} Ranked;

static int cmp_ranked(const void *a, const void *b)
{
  const Ranked *x = a, *y = b;
  if (x->score != y->score) return x->score < y->score ? -1 : 1;
  return x->index - y->index;
}

static int family_of(const Knobs *k)
{
  static const char *const HOLDS[] = { "reg", "packed", "pipe", "smem", "none", "mix", "ahead", "ring" };
  int h = 0;
  while (h < 8 && strcmp(HOLDS[h], k->hold) != 0) h++;
  if (strcmp(k->xchg, "claim") == 0) return 32;   /* a family of its own: one is always tried */
  if (k->mirror) return 33;                        /* pair=mirror too (scored as its twin) */
  return (h * 2 + (k->passes == 2)) * 2 + (k->split > 1);
}

int tune_fast_pick(const gen_Problem *p, char **list, int n, int keep, int *idx)
{
  Ranked *r = malloc(sizeof *r * (size_t)(n ? n : 1));
  char seen[64] = { 0 };
  int m = 0;
  if (!r) return -1;
  for (int i = 0; i < n; i++) {
    Knobs k;
    memset(&k, 0, sizeof k);
    int ok = parse(list[i], &k);
    r[i].index = i;
    r[i].score = ok ? score(p, &k) : 1e9;   /* a config the prior cannot read goes last */
    r[i].family = ok ? family_of(&k) : 63;
  }
  qsort(r, (size_t)n, sizeof *r, cmp_ranked);
  for (int i = 0; i < n; i++) {   /* the keep best, and the first of each family further down */
    int first = !seen[r[i].family];
    seen[r[i].family] = 1;
    if (i < keep || first) idx[m++] = r[i].index;
  }
  free(r);
  return m;
}

/* Whether the fast sweep cuts p's space of n configs to keep picks. */
static int cuts(const gen_Problem *p, int n, int keep) { return keep > 0 && keep < n && !p->full && !p->only; }

int tune_fast_list(const gen_Problem *p, char **list, int *n, int keep, char *err, size_t errlen)
{
  if (!cuts(p, *n, keep)) return 0;
  int *idx = malloc(sizeof *idx * (size_t)*n), m;
  char **kept = malloc(sizeof *kept * (size_t)*n);
  if (!idx || !kept || (m = tune_fast_pick(p, list, *n, keep, idx)) < 0) {
    free(idx);
    free(kept);
    return snprintf(err, errlen, "out of memory ranking %d configs", *n), 1;
  }
  for (int j = 0; j < m; j++) kept[m - 1 - j] = list[idx[j]], list[idx[j]] = NULL;
  for (int i = 0; i < *n; i++) free(list[i]);   /* those not picked */
  memcpy(list, kept, sizeof *kept * (size_t)m);
  *n = m;
  free(idx);
  free(kept);
  return 0;
}

/* Whether configs a and b (canonical: the same knobs in the same order) differ in the xchg or
** the hint knob (or both) and nowhere else. */
static int sibling(const char *a, const char *b)
{
  int diff = 0;
  while (*a && *b) {
    size_t la = strcspn(a, ","), lb = strcspn(b, ",");
    if (la != lb || memcmp(a, b, la) != 0) {
      size_t k = strcspn(a, "=");
      if (k != strcspn(b, "=") || memcmp(a, b, k) != 0) return 0;   /* not canonical alike */
      if (!(k == 4 && memcmp(a, "xchg", 4) == 0) && !(k == 4 && memcmp(a, "hint", 4) == 0)) return 0;
      diff++;
    }
    a += la + (a[la] == ','), b += lb + (b[lb] == ',');
  }
  return !*a && !*b && diff > 0;
}

static int listed(const char *c, char *const *list, int n)
{
  for (int i = 0; i < n; i++)
    if (list[i] && strcmp(list[i], c) == 0) return 1;
  return 0;
}

/* Whether o->untuned names a config of p's space list[0..n): into canon. */
static int untuned_in(gen_State *g, const gen_Problem *p, const tune_Options *o, char *const *list, int n, char *canon,
                      size_t len)
{
  char config[256];
  return !o->untuned(g, p, config, sizeof config) && !gen_canon(g, p, config, canon, len) && listed(canon, list, n);
}

int tune_fast_space(gen_State *g, const gen_Problem *p, const tune_Options *o, char ***list, int *n, int *space,
                    char *err, size_t errlen)
{
  char canon[256];
  if (gen_space(g, p, list, n)) return snprintf(err, errlen, "%s", gen_error(g)), 1;
  *space = *n;
  /* of the space only: a sweep's slots (picks, the untuned config, siblings) never outnumber it */
  const int add = cuts(p, *n, o->keep) && o->untuned && untuned_in(g, p, o, *list, *n, canon, sizeof canon);
  if (tune_fast_list(p, *list, n, o->keep, err, errlen)) return gen_free_list(*list, *n), *list = NULL, *n = 0, 1;
  if (!add || listed(canon, *list, *n)) return 0;
  char *s = strdup(canon), **more = s ? realloc(*list, sizeof *more * (size_t)(*n + 1)) : NULL;
  if (!more) {
    free(s), gen_free_list(*list, *n), *list = NULL, *n = 0;
    return snprintf(err, errlen, "out of memory adding the untuned config"), 1;
  }
  *list = more;
  (*list)[(*n)++] = s;   /* last: timed last, as a likely winner */
  return 0;
}

int tune_fast_siblings(char *const *leaders, int nl, char *const *all, int nall, char *const *have, int nhave, int *out,
                       int max)
{
  int m = 0;
  for (int l = 0; l < nl; l++)
    for (int i = 0; i < nall && m < max; i++) {
      if (!sibling(leaders[l], all[i]) || listed(all[i], have, nhave)) continue;
      int dup = 0;
      for (int k = 0; k < m; k++) dup |= out[k] == i;
      if (!dup) out[m++] = i;
    }
  return m;
}
