/*
** ahead.c — compiling ahead (see batch.h): a FIFO of problems, each the rendered kernels of its
** space; a pool of threads compiles them in order, so while the GPU times one problem the
** CPU compiles the next. The sweep takes cubins through a backend whose compile looks its
** config up in the oldest problem.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

enum { QUEUED, COMPILING, COMPILED, FAILED, DROPPED };

typedef struct Job {
  gen_Kernel k;
  gen_Cubin c;
  int state;
  char err[512];
} Job;

typedef struct Set {        /* one problem's jobs */
  Job *jobs;
  int n;
  struct Set *next;
} Set;

struct tune_Ahead {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const tune_Unit *unit;
  tune_Backend inner;       /* what the sweep's backend forwards to */
  Set *head, *tail;
  int stop, nthreads;
  pthread_t th[64];
};

/* The first queued job, marked compiling; NULL when none. Under the lock. */
static Job *take(tune_Ahead *a)
{
  for (Set *s = a->head; s; s = s->next)
    for (int i = 0; i < s->n; i++)
      if (s->jobs[i].state == QUEUED) {
        s->jobs[i].state = COMPILING;
        return &s->jobs[i];
      }
  return NULL;
}

/* Compile j outside the lock, then publish it. Called with the lock held. */
static void compile_job(tune_Ahead *a, Job *j)
{
  pthread_mutex_unlock(&a->mu);
  int rc = a->unit->compile(a->unit->ud, &j->k, &j->c, j->err, sizeof j->err);
  pthread_mutex_lock(&a->mu);
  j->state = rc ? FAILED : COMPILED;
  pthread_cond_broadcast(&a->cv);
}

static void *worker(void *arg)
{
  tune_Ahead *a = arg;
  pthread_mutex_lock(&a->mu);
  while (!a->stop) {
    Job *j = take(a);
    if (j) compile_job(a, j);
    else pthread_cond_wait(&a->cv, &a->mu);
  }
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

int tune_ahead_open(tune_Ahead **out, const tune_Unit *u, int threads, char *err, size_t errlen)
{
  tune_Ahead *a = calloc(1, sizeof *a);
  *out = NULL;
  if (!a) return snprintf(err, errlen, "out of memory"), 1;
  a->unit = u;
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
  while (a->nthreads < threads && pthread_create(&a->th[a->nthreads], NULL, worker, a) == 0) a->nthreads++;
  if (a->nthreads == 0) {
    tune_ahead_close(a);
    return snprintf(err, errlen, "cannot start compile threads"), 1;
  }
  *out = a;
  return 0;
}

static void free_set(Set *s)
{
  for (int i = 0; i < s->n; i++) {
    gen_kernel_free(&s->jobs[i].k);
    gen_cubin_free(&s->jobs[i].c);
  }
  free(s->jobs);
  free(s);
}

int tune_ahead_add(tune_Ahead *a, gen_State *g, const gen_Problem *p, const tune_Options *o, char *err, size_t errlen)
{
  char **list;
  int n, space, rc = 0;
  Set *s = calloc(1, sizeof *s);
  if (!s) return snprintf(err, errlen, "out of memory"), 1;
  if (tune_fast_space(g, p, o, &list, &n, &space, err, errlen)) return free(s), 1;   /* as the sweep will */
  if (n && !(s->jobs = calloc((size_t)n, sizeof *s->jobs))) rc = 1, snprintf(err, errlen, "out of memory");
  for (int i = 0; i < n && !rc; i++, s->n++)   /* a config that does not render is left to the sweep */
    if (gen_render(g, p, list[i], &s->jobs[i].k)) s->jobs[i].state = DROPPED;
  gen_free_list(list, n);
  if (rc) return free_set(s), 1;
  pthread_mutex_lock(&a->mu);
  if (a->tail) a->tail->next = s;
  else a->head = s;
  a->tail = s;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
  return 0;
}

/* The oldest problem's job for kernel k (same config and source), or NULL. Under the lock. */
static Job *find(tune_Ahead *a, const gen_Kernel *k)
{
  for (int i = 0; a->head && i < a->head->n; i++) {
    Job *j = &a->head->jobs[i];
    if (j->state != DROPPED && strcmp(j->k.config, k->config) == 0 && strcmp(j->k.source, k->source) == 0) return j;
  }
  return NULL;
}

static int ahead_compile(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  tune_Ahead *a = ud;
  pthread_mutex_lock(&a->mu);
  Job *j = find(a, k);
  if (j && j->state == QUEUED) {   /* the pool has not reached it: compile it here */
    j->state = COMPILING;
    compile_job(a, j);
  }
  while (j && j->state == COMPILING) pthread_cond_wait(&a->cv, &a->mu);
  int rc = j ? j->state == FAILED : -1;
  if (rc == 0) {   /* the cubin moves to the sweep */
    *c = j->c;
    memset(&j->c, 0, sizeof j->c);
    j->state = DROPPED;
  } else if (rc == 1) {
    snprintf(err, errlen, "%s", j->err);
  }
  pthread_mutex_unlock(&a->mu);
  return rc >= 0 ? rc : a->unit->compile(a->unit->ud, k, c, err, errlen);
}

/* The rest of the backend forwards to the inner one. */
static int ahead_load(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t)
{
  tune_Ahead *a = ud;
  return a->inner.load(a->inner.ud, slot, k, c, t);
}

static int ahead_verify(void *ud, int slot, tune_Trial *t)
{
  tune_Ahead *a = ud;
  return a->inner.verify(a->inner.ud, slot, t);
}

static int ahead_time(void *ud, int slot, int n, double *us, char *err, size_t errlen)
{
  tune_Ahead *a = ud;
  return a->inner.time(a->inner.ud, slot, n, us, err, errlen);
}

static void ahead_unload(void *ud, int slot)
{
  tune_Ahead *a = ud;
  a->inner.unload(a->inner.ud, slot);
}

tune_Backend tune_ahead_backend(tune_Ahead *a, const tune_Backend *b)
{
  tune_Backend w = { a, ahead_compile, ahead_load, ahead_verify, ahead_time, ahead_unload };
  a->inner = *b;
  return w;
}

/* Whether any job of s is being compiled. */
static int busy(const Set *s)
{
  for (int i = 0; i < s->n; i++)
    if (s->jobs[i].state == COMPILING) return 1;
  return 0;
}

void tune_ahead_done(tune_Ahead *a)
{
  pthread_mutex_lock(&a->mu);
  Set *s = a->head;
  for (int i = 0; s && i < s->n; i++)
    if (s->jobs[i].state == QUEUED) s->jobs[i].state = DROPPED;
  while (s && busy(s)) pthread_cond_wait(&a->cv, &a->mu);
  if (s && !(a->head = s->next)) a->tail = NULL;
  pthread_mutex_unlock(&a->mu);
  if (s) free_set(s);
}

void tune_ahead_close(tune_Ahead *a)
{
  if (!a) return;
  pthread_mutex_lock(&a->mu);
  a->stop = 1;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
  for (int i = 0; i < a->nthreads; i++) pthread_join(a->th[i], NULL);
  while (a->head) tune_ahead_done(a);
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cv);
  free(a);
}
