/*
** tune.c — the sweep (see tune.h), the cache key and storing a run.
*/
#include "tune.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The options of a sweep: picks (0: all), first round, finalists, warm-up; margin 3%. */
static void set_options(tune_Options *o, int keep, double budget_ms, int min_reps, int max_reps, int max_finalists,
                        int rounds, double warmup_ms)
{
  memset(o, 0, sizeof *o);
  o->keep = keep, o->budget_ms = budget_ms, o->min_reps = min_reps, o->max_reps = max_reps;
  o->margin = 0.03, o->max_finalists = max_finalists, o->rounds = rounds, o->warmup_ms = warmup_ms;
}

void tune_default_options(tune_Options *o)
{
  set_options(o, 0, 30., 10, 200, 6, 40, 0.);
}

void tune_fast_options(tune_Options *o)
{
  set_options(o, 48, 4., 5, 50, 8, 30, 200.);
  o->siblings = 8;
}

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double tune_median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the compile pool: threads take configs in order; the sweep waits for each in turn ---- */

typedef struct Pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const tune_Backend *b;
  const gen_Kernel *kernels;
  gen_Cubin *cubins;
  int *state;               /* 0 waiting, 1 compiled, 2 failed */
  char (*errs)[512];
  int n, next, stop;
} Pool;

static void *compile_worker(void *arg)
{
  Pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int i = p->stop || p->next >= p->n ? -1 : p->next++;
    pthread_mutex_unlock(&p->mu);
    if (i < 0) return NULL;
    int rc = p->kernels[i].source ? p->b->compile(p->b->ud, &p->kernels[i], &p->cubins[i], p->errs[i], sizeof p->errs[i])
                                  : 1;
    pthread_mutex_lock(&p->mu);
    p->state[i] = rc ? 2 : 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
}

static int pool_wait(Pool *p, int i)
{
  pthread_mutex_lock(&p->mu);
  while (p->state[i] == 0) pthread_cond_wait(&p->cv, &p->mu);
  int s = p->state[i];
  pthread_mutex_unlock(&p->mu);
  return s;
}

/* ---- one config ---- */

/* Time slot in a first round: a few launches to size it, then enough to fill the budget. */
static int first_round(const tune_Backend *b, const tune_Options *o, int slot, double *us_out, char *err, size_t errlen)
{
  double us[TUNE_MAX_REPS];
  int rc = b->time(b->ud, slot, 3, us, err, errlen);
  if (rc) return rc;
  double est = tune_median(us, 3) + 50.;   /* plus the L2 flush before each */
  int n = (int)(o->budget_ms * 1e3 / est);
  n = n < o->min_reps ? o->min_reps : n > o->max_reps ? o->max_reps : n;
  if ((rc = b->time(b->ud, slot, n, us, err, errlen))) return rc;
  *us_out = tune_median(us, n);
  return 0;
}

/* The copy, run for warmup_ms of wall time: an idle GPU's clocks take a while to rise, and a
** short first round would hold it against the configs timed first. */
static int warm_up(const tune_Backend *b, const tune_Options *o, char *err, size_t errlen)
{
  double us[8], t0 = now_s();
  int rc = 0;
  for (int k = 0; k < 10000 && !rc && now_s() - t0 < o->warmup_ms / 1e3; k++) rc = b->time(b->ud, -1, 8, us, err, errlen);
  return rc ? TUNE_EFATAL : 0;
}

/* Load, verify and time config i; returns TUNE_EFATAL when the device is lost. */
static int run_config(const tune_Backend *b, const tune_Options *o, Pool *pool, int i, tune_Trial *t, char *err,
                      size_t errlen)
{
  int rc;
  if (pool_wait(pool, i) == 2) {
    t->status = TUNE_FAILED;
    snprintf(t->reason, sizeof t->reason, "compile: %s", pool->errs[i]);
    return 0;
  }
  t->compile_ms = pool->cubins[i].ms;
  t->kept = pool->cubins[i].kept;
  if ((rc = b->load(b->ud, i, &pool->kernels[i], &pool->cubins[i], t))) {
    t->status = rc == TUNE_EFATAL ? TUNE_FAILED : TUNE_PRUNED;
    return rc == TUNE_EFATAL ? (snprintf(err, errlen, "%s", t->reason), TUNE_EFATAL) : 0;
  }
  if ((rc = b->verify(b->ud, i, t)) == TUNE_EOK) rc = first_round(b, o, i, &t->us, t->reason, sizeof t->reason);
  if (rc) {
    t->status = TUNE_FAILED;
    b->unload(b->ud, i);
    return rc == TUNE_EFATAL ? (snprintf(err, errlen, "%s", t->reason), TUNE_EFATAL) : 0;
  }
  t->status = TUNE_OK;
  return 0;
}

int tune_top(const tune_Result *r, int *idx, int n)
{
  int k = 0;
  for (int i = 0; i < r->ntrials; i++) {
    if (r->trials[i].status != TUNE_OK) continue;
    /* insert i among the best k so far; equal times keep the earlier config first */
    int j = k;
    while (j > 0 && r->trials[i].us < r->trials[idx[j - 1]].us) {
      if (j < n) idx[j] = idx[j - 1];
      j--;
    }
    if (j < n) idx[j] = i;
    if (k < n) k++;
  }
  return k;
}

/* Time the finalists and the copy again, one launch each per round, in rotating order, so
** drift in clocks or temperature falls on all of them alike. */
static int final_rounds(const tune_Backend *b, const tune_Options *o, tune_Result *r, const int *fin, int nf, char *err,
                        size_t errlen)
{
  const int rounds = o->rounds, m = nf + 1;
  double *s = malloc(sizeof *s * (size_t)(m * rounds));
  int rc = 0;
  if (!s) return snprintf(err, errlen, "out of memory"), TUNE_EFATAL;
  for (int k = 0; k < rounds && !rc; k++)
    for (int j = 0; j < m && !rc; j++) {
      int f = (j + k) % m;   /* f == nf is the copy */
      rc = b->time(b->ud, f == nf ? -1 : fin[f], 1, &s[f * rounds + k], err, errlen);
    }
  if (!rc) {
    for (int f = 0; f < nf; f++) r->trials[fin[f]].us = tune_median(s + f * rounds, rounds);
    r->copy_us = tune_median(s + nf * rounds, rounds);
  }
  free(s);
  return rc ? TUNE_EFATAL : 0;
}

/* Finalists, the winner (fastest after re-timing; ties go to the earlier config) and figures. */
static int pick_winner(const tune_Backend *b, const tune_Options *o, tune_Result *r, char *err, size_t errlen)
{
  int fin[64], nf = tune_top(r, fin, o->max_finalists);
  while (nf > 1 && r->trials[fin[nf - 1]].us > r->trials[fin[0]].us * (1. + o->margin)) nf--;
  if (first_round(b, o, -1, &r->copy_us, err, errlen)) return TUNE_EFATAL;
  if (nf > 0 && final_rounds(b, o, r, fin, nf, err, errlen)) return TUNE_EFATAL;
  for (int f = 0; f < nf; f++) r->trials[fin[f]].finalist = 1;
  r->winner = -1;
  for (int f = 0; f < nf; f++) {
    int i = fin[f];
    if (r->winner < 0 || r->trials[i].us < r->trials[r->winner].us ||
        (r->trials[i].us == r->trials[r->winner].us && i < r->winner))
      r->winner = i;
  }
  for (int i = 0; i < r->ntrials; i++) {
    tune_Trial *t = &r->trials[i];
    if (t->status != TUNE_OK || t->us <= 0) continue;
    t->gbps = r->bytes / t->us / 1e3;
    t->frac = r->copy_us / t->us;
  }
  return 0;
}

static void count(tune_Result *r)
{
  for (int i = 0; i < r->ntrials; i++) {
    r->verified += r->trials[i].status == TUNE_OK;
    r->pruned += r->trials[i].status == TUNE_PRUNED;
    r->failed += r->trials[i].status == TUNE_FAILED;
  }
}

/* Options brought into the ranges the sweep needs. */
static tune_Options sane(const tune_Options *in)
{
  tune_Options o = *in;
  o.min_reps = o.min_reps < 1 ? 1 : o.min_reps > TUNE_MAX_REPS ? TUNE_MAX_REPS : o.min_reps;
  o.max_reps = o.max_reps < o.min_reps ? o.min_reps : o.max_reps > TUNE_MAX_REPS ? TUNE_MAX_REPS : o.max_reps;
  o.rounds = o.rounds < 1 ? 1 : o.rounds;
  o.max_finalists = o.max_finalists < 1 ? 1 : o.max_finalists > 64 ? 64 : o.max_finalists;
  o.margin = o.margin < 0 ? 0 : o.margin;
  return o;
}

/* Compile threads for the configs [pool->next, pool->n); how many started. */
static int pool_start(Pool *pool, pthread_t *th, int nthreads)
{
  int started = 0;
  while (started < nthreads && pthread_create(&th[started], NULL, compile_worker, pool) == 0) started++;
  return started;
}

static void pool_stop(Pool *pool, pthread_t *th, int started)
{
  pthread_mutex_lock(&pool->mu);
  pool->stop = 1;
  pthread_mutex_unlock(&pool->mu);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pool->stop = 0;
}

/* Configs [from, to) loaded, verified and timed in order; *best the fastest so far. */
static int sweep_range(const tune_Backend *b, const tune_Options *o, Pool *pool, tune_Result *r, int from, int to,
                       int total, int *best, char *err, size_t errlen)
{
  for (int i = from; i < to; i++) {
    if (o->cancel && *o->cancel) return r->cancelled = 1, 0;
    int rc = run_config(b, o, pool, i, &r->trials[i], err, errlen);
    if (rc) return rc;
    if (r->trials[i].status == TUNE_OK && (*best < 0 || r->trials[i].us < r->trials[*best].us)) *best = i;
    if (o->progress) o->progress(o->progress_ud, i + 1, total, &r->trials[i], *best >= 0 ? &r->trials[*best] : NULL);
  }
  return 0;
}

/* The fast sweep's second round: the xchg/hint siblings of the first round's three leaders
** (not picked by the prior) rendered into slots n.. of the sweep; returns how many. */
static int add_siblings(gen_State *g, const gen_Problem *p, tune_Result *r, gen_Kernel *kernels, Pool *pool, int n,
                        int max)
{
  char **all = NULL, *lead[3], **have = malloc(sizeof *have * (size_t)n);
  int nall = 0, lidx[3], nl = tune_top(r, lidx, 3), out[64], m = 0;
  if (!have || gen_space(g, p, &all, &nall)) return free(have), 0;   /* no second round, the first stands */
  for (int k = 0; k < nl; k++) lead[k] = r->trials[lidx[k]].config;
  for (int i = 0; i < n; i++) have[i] = r->trials[i].config;
  m = tune_fast_siblings(lead, nl, all, nall, have, n, out, max < 64 ? max : 64);
  for (int j = 0; j < m; j++) {
    tune_Trial *t = &r->trials[n + j];
    snprintf(t->config, sizeof t->config, "%s", all[out[j]]);
    if (gen_render(g, p, all[out[j]], &kernels[n + j]))
      snprintf(pool->errs[n + j], sizeof pool->errs[n + j], "render: %s", gen_error(g));
  }
  gen_free_list(all, nall);
  free(have);
  return m;
}

int tune_sweep(gen_State *g, const gen_Problem *p, const tune_Backend *b, const tune_Options *opt, tune_Result *r,
               char *err, size_t errlen)
{
  const tune_Options opts = sane(opt), *o = &opts;
  char **list = NULL;
  int n = 0, rc = 0, nthreads = o->threads, space;
  double t0 = now_s();
  Pool pool;
  pthread_t th[64];

  memset(r, 0, sizeof *r);
  r->winner = -1;
  r->bytes = gen_problem_bytes(p);   /* read + written */
  if (tune_fast_space(g, p, o, &list, &n, &space, err, errlen)) return 1;
  r->space = space;
  if (n == 0) {
    gen_free_list(list, n);
    return snprintf(err, errlen, "the space is empty for %lldx%lld %s", (long long)p->rows, (long long)p->cols,
                    gen_dtype_name(p->dtype)), 1;
  }
  const int extra = n < space && o->siblings > 0 ? (o->siblings < 64 ? o->siblings : 64) : 0, cap = n + extra;
  memset(&pool, 0, sizeof pool);
  r->trials = calloc((size_t)cap, sizeof *r->trials);
  gen_Kernel *kernels = calloc((size_t)cap, sizeof *kernels);
  pool.cubins = calloc((size_t)cap, sizeof *pool.cubins);
  pool.state = calloc((size_t)cap, sizeof *pool.state);
  pool.errs = calloc((size_t)cap, sizeof *pool.errs);
  if (!r->trials || !kernels || !pool.cubins || !pool.state || !pool.errs) {
    snprintf(err, errlen, "out of memory for %d configs", cap);
    rc = 1;
    goto done;
  }
  r->ntrials = n;
  for (int i = 0; i < n; i++) {   /* Lua is single-threaded: render everything first */
    snprintf(r->trials[i].config, sizeof r->trials[i].config, "%s", list[i]);
    if (gen_render(g, p, list[i], &kernels[i])) snprintf(pool.errs[i], sizeof pool.errs[i], "render: %s", gen_error(g));
  }
  pool.b = b;
  pool.kernels = kernels;
  pool.n = n;
  pthread_mutex_init(&pool.mu, NULL);
  pthread_cond_init(&pool.cv, NULL);
  if (nthreads <= 0) nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  nthreads = nthreads < 1 ? 1 : nthreads > 64 ? 64 : nthreads;
  int started = pool_start(&pool, th, nthreads), best = -1;
  if (started == 0) {
    snprintf(err, errlen, "cannot start compile threads");
    rc = 1;
  }
  if (!rc && o->warmup_ms > 0) rc = warm_up(b, o, err, errlen);
  if (!rc) rc = sweep_range(b, o, &pool, r, 0, n, n, &best, err, errlen);
  pool_stop(&pool, th, started);
  int more = !rc && !r->cancelled && extra > 0 ? add_siblings(g, p, r, kernels, &pool, n, extra) : 0;
  if (more > 0) {   /* the same pool, grown: its threads compile the siblings, the GPU times each as it is ready */
    pool.n = r->ntrials = n + more;
    started = pool_start(&pool, th, nthreads < more ? nthreads : more);
    if (started) rc = sweep_range(b, o, &pool, r, n, n + more, n + more, &best, err, errlen);
    else pool.n = r->ntrials = n;   /* no threads: the first round stands */
    pool_stop(&pool, th, started);
  }
  pthread_mutex_destroy(&pool.mu);
  pthread_cond_destroy(&pool.cv);
  if (!rc && !r->cancelled && pick_winner(b, o, r, err, errlen)) rc = 1;
  count(r);
  if (r->winner >= 0) {   /* the winner's kernel and cubin move into the result */
    r->kernel = kernels[r->winner];
    r->cubin = pool.cubins[r->winner];
    memset(&kernels[r->winner], 0, sizeof kernels[0]);
    memset(&pool.cubins[r->winner], 0, sizeof pool.cubins[0]);
  }
  for (int i = 0; i < r->ntrials; i++)
    if (r->trials[i].status == TUNE_OK) b->unload(b->ud, i);
done:
  for (int i = 0; kernels && i < cap; i++) gen_kernel_free(&kernels[i]);
  for (int i = 0; pool.cubins && i < cap; i++) gen_cubin_free(&pool.cubins[i]);
  free(kernels);
  free(pool.cubins);
  free(pool.state);
  free(pool.errs);
  gen_free_list(list, n);
  r->seconds = now_s() - t0;
  return rc;
}

void tune_result_free(tune_Result *r)
{
  free(r->trials);
  gen_kernel_free(&r->kernel);
  gen_cubin_free(&r->cubin);
  memset(r, 0, sizeof *r);
  r->winner = -1;
}

int tune_templates_hash(gen_State *g, char out[65], int *nvrtc, char *err, size_t errlen)
{
  char *text;
  size_t len;
  int major = 0, minor = 0;
  if (gen_sources(g, &text, &len)) return snprintf(err, errlen, "%s", gen_error(g)), 1;
  cache_sha256(text, len, out);
  free(text);
  if (gen_nvrtc_version(&major, &minor)) return snprintf(err, errlen, "cannot read the NVRTC version"), 1;
  *nvrtc = major * 1000 + minor * 10;
  return 0;
}

int tune_key(gen_State *g, const tune_Device *dev, const gen_Problem *p, cache_Key *k, char *err, size_t errlen)
{
  memset(k, 0, sizeof *k);
  if (tune_templates_hash(g, k->templates, &k->nvrtc, err, errlen)) return 1;
  snprintf(k->gpu, sizeof k->gpu, "%s", dev->name);
  k->arch = dev->arch;
  k->sms = dev->sms;
  k->driver = dev->driver;
  k->dtype = p->dtype;
  k->op = p->op;
  k->mask = p->mask, k->bias = p->bias;
  k->rows = p->rows;
  k->cols = p->cols;
  return 0;
}

static const char *status_name(int s)
{
  return s == TUNE_OK ? "ok" : s == TUNE_PRUNED ? "pruned" : s == TUNE_FAILED ? "failed" : "not run";
}

void tune_trial_record(const tune_Trial *s, cache_Trial *t)
{
  snprintf(t->config, sizeof t->config, "%s", s->config);
  snprintf(t->status, sizeof t->status, "%s", status_name(s->status));
  snprintf(t->reason, sizeof t->reason, "%s", s->reason);
  t->regs = s->regs, t->local_bytes = s->local_bytes, t->smem = s->smem, t->blocks_sm = s->blocks_sm;
  t->occupancy = s->occupancy, t->compile_ms = s->compile_ms, t->us = s->us, t->gbps = s->gbps;
  t->frac = s->frac, t->max_err = s->max_err, t->finalist = s->finalist;
}

int tune_store(cache_Db *db, const cache_Key *k, const tune_Result *r, int64_t *run_id, char *err, size_t errlen)
{
  cache_Run run;
  cache_Entry e;
  cache_Trial *t = calloc((size_t)(r->ntrials ? r->ntrials : 1), sizeof *t);
  if (!t) return snprintf(err, errlen, "out of memory"), 1;
  for (int i = 0; i < r->ntrials; i++) tune_trial_record(&r->trials[i], &t[i]);
  memset(&run, 0, sizeof run);
  run.key = *k;
  run.seconds = r->seconds;
  run.configs = r->ntrials;
  run.verified = r->verified, run.pruned = r->pruned, run.failed = r->failed;
  run.copy_us = r->copy_us;
  snprintf(run.status, sizeof run.status, "%s", r->winner >= 0 ? "ok" : "no winner");
  memset(&e, 0, sizeof e);
  if (r->winner >= 0) {
    const tune_Trial *w = &r->trials[r->winner];
    snprintf(run.winner, sizeof run.winner, "%s", w->config);
    run.winner_us = w->us;
    run.frac = w->frac;
    e.key = *k;
    snprintf(e.config, sizeof e.config, "%s", r->kernel.config);
    snprintf(e.kernel, sizeof e.kernel, "%s", r->kernel.name);
    e.launch = r->kernel.launch;
    e.cubin = r->cubin.data;
    e.size = r->cubin.size;
    e.us = w->us, e.gbps = w->gbps, e.frac = w->frac, e.copy_us = r->copy_us;
  }
  int rc = cache_store(db, &run, t, r->ntrials, r->winner >= 0 ? &e : NULL);
  free(t);
  if (rc) return snprintf(err, errlen, "%s", cache_error(db)), 1;
  *run_id = run.id;
  return 0;
}
