/*
** batch.c — a list of problems over one or several GPUs (see batch.h): the model groups, a
** worker thread per unit claiming its model's problems in order, each problem answered from
** the cache or swept and stored in its own transaction.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "reverify.h"

int tune_same_model(const tune_Device *a, const tune_Device *b)
{
  return strcmp(a->name, b->name) == 0 && a->arch == b->arch && a->sms == b->sms && a->driver == b->driver;
}

typedef struct Worker {     /* one unit's thread and what it owns */
  tune_Batch *b;
  int unit;
  gen_State *g;
  cache_Db *db;
  tune_Ahead *ahead;
  int swept;                /* problems this unit has swept: the GPU is warm after the first */
  pthread_t th;
  char err[1024];
} Worker;

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int cancelled(const tune_Batch *b)
{
  return b->o->sweep.cancel && *b->o->sweep.cancel;
}

/* Tell the caller that item i changed. Under the lock. */
static void changed(tune_Batch *b, int i)
{
  if (b->o->progress) b->o->progress(b->o->progress_ud, b, i);
}

/* Set item i's state (and error) and tell. */
static void finish(Worker *w, int i, int state, const char *error)
{
  tune_Batch *b = w->b;
  pthread_mutex_lock(&b->mu);
  b->items[i].state = state;
  if (error) snprintf(b->items[i].error, sizeof b->items[i].error, "%s", error);
  if (b->current[w->unit] == i) b->current[w->unit] = -1;
  changed(b, i);
  pthread_mutex_unlock(&b->mu);
}

/* The item's problem with the unit's device limits, and its cache key. */
static int problem_key(Worker *w, int i, gen_Problem *p, cache_Key *k)
{
  *p = w->b->items[i].p;
  tune_device_limits(w->b->units[w->unit].dev, p);
  return tune_key(w->g, w->b->units[w->unit].dev, p, k, w->err, sizeof w->err);
}

/* 1 when the cache answers item i (recorded), else 0. An entry made under another driver or
** NVRTC answers once it passes verification again on this unit's GPU (else the item is tuned). */
static int from_cache(Worker *w, int i)
{
  gen_Problem p;
  cache_Key k;
  cache_Entry e;
  tune_Item *it = &w->b->items[i];
  if (w->b->o->force || problem_key(w, i, &p, &k) || cache_get(w->db, &k, &e) != CACHE_OK) return 0;
  if (tune_stale(&k, &e) &&
      tune_gpu_reverify(w->b->units[w->unit].dev->ordinal, w->g, &p, w->db, &k, &e, w->err, sizeof w->err)) {
    cache_entry_free(&e);
    return 0;
  }
  pthread_mutex_lock(&w->b->mu);
  snprintf(it->config, sizeof it->config, "%s", e.config);
  it->us = e.us, it->frac = e.frac, it->run = e.run, it->unit = w->unit;
  pthread_mutex_unlock(&w->b->mu);
  cache_entry_free(&e);
  finish(w, i, TUNE_ITEM_CACHED, NULL);
  return 1;
}

/* The next item of the unit's model the cache does not answer, or -1. */
static int claim(Worker *w)
{
  tune_Batch *b = w->b;
  const int m = b->model[w->unit];
  for (;;) {
    pthread_mutex_lock(&b->mu);
    int i = cancelled(b) || b->next[m] >= b->nproblems ? -1 : m * b->nproblems + b->order[b->next[m]++];
    pthread_mutex_unlock(&b->mu);
    if (i < 0 || !from_cache(w, i)) return i;
  }
}

/* The sweep's progress, into the item. */
static void on_config(void *ud, int done, int total, const tune_Trial *t, const tune_Trial *best)
{
  Worker *w = ud;
  tune_Batch *b = w->b;
  (void)t;
  pthread_mutex_lock(&b->mu);
  int i = b->current[w->unit];
  if (i >= 0) {
    b->items[i].done = done, b->items[i].total = total;
    if (best) b->items[i].us = best->us;
    changed(b, i);
  }
  pthread_mutex_unlock(&b->mu);
}

/* Store a finished sweep of item i and record its winner. */
static void store(Worker *w, int i, const cache_Key *k, const tune_Result *r, double t0)
{
  tune_Item *it = &w->b->items[i];
  int64_t run = 0;
  if (tune_store(w->db, k, r, &run, w->err, sizeof w->err)) return finish(w, i, TUNE_ITEM_FAILED, w->err);
  if (r->winner < 0) return finish(w, i, TUNE_ITEM_FAILED, "no config passed (see softmax-tune log)");
  const tune_Trial *t = &r->trials[r->winner];
  pthread_mutex_lock(&w->b->mu);
  snprintf(it->config, sizeof it->config, "%s", t->config);
  it->us = t->us, it->frac = t->frac, it->run = run, it->seconds = now_s() - t0;
  pthread_mutex_unlock(&w->b->mu);
  finish(w, i, TUNE_ITEM_TUNED, NULL);
}

/* Sweep item i on the unit (its compiles queued ahead) and store it. */
static void tune_item(Worker *w, int i)
{
  tune_Batch *b = w->b;
  const tune_Unit *u = &b->units[w->unit];
  tune_Options opt = b->o->sweep;
  tune_Backend inner, outer;
  tune_Result r;
  gen_Problem p;
  cache_Key k;
  char **list;
  int n;
  double t0 = now_s();   /* the item's time: the GPU's setup, the sweep, the store */
  pthread_mutex_lock(&b->mu);
  b->items[i].state = TUNE_ITEM_RUNNING, b->items[i].unit = w->unit, b->current[w->unit] = i;
  changed(b, i);
  pthread_mutex_unlock(&b->mu);
  if (problem_key(w, i, &p, &k)) return finish(w, i, TUNE_ITEM_FAILED, w->err);
  if (gen_space(w->g, &p, &list, &n)) return finish(w, i, TUNE_ITEM_FAILED, gen_error(w->g));
  gen_free_list(list, n);
  int rc = u->prepare(u->ud, w->g, &p, &b->items[i].attn, n, &inner, w->err, sizeof w->err);
  if (rc) {
    u->release(u->ud);
    return finish(w, i, TUNE_ITEM_FAILED, w->err);
  }
  outer = tune_ahead_backend(w->ahead, &inner);
  opt.progress = on_config, opt.progress_ud = w;
  opt.threads = 2;   /* the sweep's own pool only waits for the queue's cubins, in order */
  if (w->swept++) opt.warmup_ms = 0;   /* the last sweep kept the clocks up */
  rc = tune_sweep(w->g, &p, &outer, &opt, &r, w->err, sizeof w->err);
  u->release(u->ud);
  if (rc) finish(w, i, TUNE_ITEM_FAILED, w->err);
  else if (r.cancelled) finish(w, i, TUNE_ITEM_STOPPED, "interrupted");
  else store(w, i, &k, &r, t0);
  tune_result_free(&r);
}

/* Queue item i's compiles; a failure is the sweep's to find and report. */
static void queue(Worker *w, int i)
{
  gen_Problem p;
  cache_Key k;
  if (i >= 0 && !problem_key(w, i, &p, &k)) tune_ahead_add(w->ahead, w->g, &p, &w->b->o->sweep, w->err, sizeof w->err);
}

static void *work(void *arg)
{
  Worker *w = arg;
  int cur = claim(w);
  queue(w, cur);
  while (cur >= 0 && !cancelled(w->b)) {
    int next = claim(w);   /* claimed now so that its compiles overlap this sweep */
    queue(w, next);
    tune_item(w, cur);
    tune_ahead_done(w->ahead);
    cur = next;
  }
  return NULL;
}

/* Model groups: a unit joins the group of the first earlier unit of its model. */
static void group(tune_Batch *b)
{
  for (int u = 0; u < b->nunits; u++) {
    b->model[u] = b->nmodels;
    for (int v = 0; v < u; v++)
      if (tune_same_model(b->units[u].dev, b->units[v].dev)) {
        b->model[u] = b->model[v];
        break;
      }
    b->nmodels += b->model[u] == b->nmodels;
    b->current[u] = -1;
  }
}

/* A problem's tuning time in seconds, roughly: its configs each timed for the budget (or the
** minimum repetitions of a pass over its bytes at 3 TB/s, when longer), plus the float64 check
** and the finalists' re-timing, which grow with its elements and bytes (fitted to the 18 public
** problems' times on an H200: 0.85 s per 10^9 elements, 0.45 s per GB). */
static double cost(gen_State *g, const tune_Device *dev, const tune_Options *o, gen_Problem p)
{
  char **list;
  int n = 0;
  tune_device_limits(dev, &p);
  if (gen_space(g, &p, &list, &n)) return 0;
  gen_free_list(list, n);
  if (o->keep > 0 && n > o->keep) n = o->keep;   /* the fast sweep's picks, about */
  double elems = (double)p.rows * p.cols, bytes = elems * gen_dtype_size(p.dtype);
  double launch_ms = 2e3 * bytes / 3e12;
  double timing = n * (launch_ms * o->min_reps > o->budget_ms ? launch_ms * o->min_reps : o->budget_ms) / 1e3;
  return timing + 0.85e-9 * elems + 0.45e-9 * bytes;
}

/* b->order: the problems, longest first, so that the last ones claimed are short and the GPUs
** finish together. */
static int plan(tune_Batch *b, const gen_Problem *problems, char *err, size_t errlen)
{
  gen_State *g;
  double *c = calloc((size_t)b->nproblems, sizeof *c);
  if (!c) return snprintf(err, errlen, "out of memory"), 1;
  if (gen_open(&g, b->o->templates, err, errlen)) return free(c), 1;
  for (int i = 0; i < b->nproblems; i++) {
    c[i] = cost(g, b->units[0].dev, &b->o->sweep, problems[i]);
    int j = i;   /* insertion: equal costs keep the listed order */
    for (; j > 0 && c[b->order[j - 1]] < c[i]; j--) b->order[j] = b->order[j - 1];
    b->order[j] = i;
  }
  gen_close(g);
  free(c);
  return 0;
}

static int setup(tune_Batch *b, const gen_Problem *problems, int n)
{
  b->model = calloc((size_t)b->nunits, sizeof *b->model);
  b->current = calloc((size_t)b->nunits, sizeof *b->current);
  b->next = calloc((size_t)b->nunits, sizeof *b->next);
  if (!b->model || !b->current || !b->next) return 1;
  group(b);
  b->nproblems = n;
  b->nitems = b->nmodels * n;
  if (!(b->items = calloc((size_t)b->nitems, sizeof *b->items)) || !(b->order = calloc((size_t)n, sizeof *b->order)))
    return 1;
  for (int i = 0; i < b->nitems; i++) {
    tune_Item *it = &b->items[i];
    it->p = problems[i % n], it->model = i / n, it->unit = -1;
    if (b->o->attn) it->attn = b->o->attn[i % n];
    else tune_attn_defaults(&it->attn);
  }
  return 0;
}

/* Each worker's generator, cache connection and compile queue. */
static int open_worker(Worker *w, int threads, char *err, size_t errlen)
{
  const tune_BatchOptions *o = w->b->o;
  if (gen_open(&w->g, o->templates, err, errlen)) return 1;
  if (cache_open(&w->db, o->cache_path, 1, err, errlen)) return 1;
  return tune_ahead_open(&w->ahead, &w->b->units[w->unit], threads, err, errlen);
}

static void close_worker(Worker *w)
{
  tune_ahead_close(w->ahead);
  cache_close(w->db);
  gen_close(w->g);
}

int tune_batch(const tune_Unit *units, int nunits, const gen_Problem *problems, int n, const tune_BatchOptions *o,
               tune_Batch *b, char *err, size_t errlen)
{
  int rc = 0, started = 0, threads = o->compile_threads;
  memset(b, 0, sizeof *b);
  pthread_mutex_init(&b->mu, NULL);
  b->units = units, b->nunits = nunits, b->o = o;
  if (nunits < 1 || n < 1) return snprintf(err, errlen, "nothing to tune: %d GPUs, %d problems", nunits, n), 1;
  Worker *w = calloc((size_t)nunits, sizeof *w);
  if (!w || setup(b, problems, n)) return free(w), snprintf(err, errlen, "out of memory"), 1;
  if (plan(b, problems, err, errlen)) return free(w), 1;
  if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN) / nunits;
  threads = threads < 1 ? 1 : threads;
  for (int u = 0; u < nunits && !rc; u++) {
    w[u].b = b, w[u].unit = u;
    rc = open_worker(&w[u], threads, err, errlen);
  }
  while (!rc && started < nunits && pthread_create(&w[started].th, NULL, work, &w[started]) == 0) started++;
  if (!rc && started < nunits) rc = 1, snprintf(err, errlen, "cannot start a thread for GPU %d", started);
  for (int u = 0; u < started; u++) pthread_join(w[u].th, NULL);
  for (int u = 0; u < nunits; u++) close_worker(&w[u]);
  free(w);
  b->cancelled = cancelled(b);
  return rc;
}

void tune_batch_free(tune_Batch *b)
{
  free(b->model);
  free(b->current);
  free(b->next);
  free(b->order);
  free(b->items);
  pthread_mutex_destroy(&b->mu);
  memset(b, 0, sizeof *b);
}
