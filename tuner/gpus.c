/*
** gpus.c — GPUs as the units of a batch (batch.h): each unit keeps its device's facts and its
** primary context alive for the whole batch (so a problem's setup does not make a context
** afresh), and opens the GPU backend for one problem at a time, in the worker's thread.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

typedef struct GpuUnit {
  tune_Gpu *anchor;         /* the facts, the compiler, and the context kept */
  tune_Gpu *cur;            /* the problem being tuned */
  CUcontext keep;
  int ordinal;
} GpuUnit;

static int unit_compile(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  GpuUnit *g = ud;
  tune_Backend b = tune_gpu_backend(g->anchor);
  return b.compile(b.ud, k, c, err, errlen);
}

static int unit_prepare(void *ud, gen_State *gen, const gen_Problem *p, const tune_AttnOptions *attn, int nslots,
                        tune_Backend *b, char *err, size_t errlen)
{
  GpuUnit *g = ud;
  if (tune_gpu_open(&g->cur, g->ordinal, err, errlen)) return 1;
  if (attn) tune_gpu_attn_options(g->cur, attn);
  int rc = tune_gpu_prepare(g->cur, gen, p, nslots, err, errlen);
  if (!rc) *b = tune_gpu_backend(g->cur);
  return rc;
}

static void unit_release(void *ud)
{
  GpuUnit *g = ud;
  tune_gpu_close(g->cur);
  g->cur = NULL;
}

static void close_unit(GpuUnit *g)
{
  if (!g) return;
  if (g->keep) tune_gpu_driver(g->anchor)->cuDevicePrimaryCtxRelease(tune_gpu_device(g->anchor)->dev);
  tune_gpu_close(g->anchor);
  free(g);
}

static int open_unit(tune_Unit *u, int ordinal, char *err, size_t errlen)
{
  GpuUnit *g = calloc(1, sizeof *g);
  char buf[256];
  if (!g) return snprintf(err, errlen, "out of memory"), 1;
  g->ordinal = ordinal;
  if (tune_gpu_open(&g->anchor, ordinal, err, errlen)) return free(g), 1;
  const tune_Driver *d = tune_gpu_driver(g->anchor);
  CUresult r = d->cuDevicePrimaryCtxRetain(&g->keep, tune_gpu_device(g->anchor)->dev);
  if (r) {
    g->keep = NULL;
    snprintf(err, errlen, "cannot get a context on GPU %d: %s", ordinal, tune_cu_error(d, r, buf, sizeof buf));
    return close_unit(g), 1;
  }
  tune_Unit unit = { tune_gpu_device(g->anchor), g, unit_compile, unit_prepare, unit_release };
  *u = unit;
  return 0;
}

/* How many GPUs the driver sees. */
static int count_gpus(int *n, char *err, size_t errlen)
{
  tune_Driver d;
  char buf[256];
  if (tune_driver_load(&d, err, errlen)) return 1;
  CUresult r = d.cuDeviceGetCount(n);
  if (r) snprintf(err, errlen, "cannot count GPUs: %s", tune_cu_error(&d, r, buf, sizeof buf));
  else if (*n == 0) snprintf(err, errlen, "the driver sees no GPU");
  tune_driver_unload(&d);
  return r || *n == 0;
}

typedef struct Opener {     /* one unit opened (or closed) in its own thread */
  tune_Unit *u;
  int ordinal, rc;
  pthread_t th;
  char err[512];
} Opener;

static void *open_thread(void *arg)
{
  Opener *o = arg;
  o->rc = open_unit(o->u, o->ordinal, o->err, sizeof o->err);
  return NULL;
}

static void *close_thread(void *arg)
{
  close_unit(((Opener *)arg)->u->ud);
  return NULL;
}

/* Run fn on every opener, each in a thread (a context costs a few hundred ms: the GPUs make
** theirs at once); where a thread cannot start, fn runs here. */
static void each_unit(Opener *o, int n, void *(*fn)(void *))
{
  int started[n > 0 ? n : 1];
  for (int i = 0; i < n; i++)
    if (!(started[i] = n > 1 && pthread_create(&o[i].th, NULL, fn, &o[i]) == 0)) fn(&o[i]);
  for (int i = 0; i < n; i++)
    if (started[i]) pthread_join(o[i].th, NULL);
}

int tune_gpu_units(const int *ordinals, int n, tune_Unit **units, int *nunits, char *err, size_t errlen)
{
  int all = n == 0, bad = -1;
  *units = NULL, *nunits = 0;
  if (all && count_gpus(&n, err, errlen)) return 1;
  tune_Unit *u = calloc((size_t)n, sizeof *u);
  Opener *o = calloc((size_t)n, sizeof *o);
  if (!u || !o) return free(u), free(o), snprintf(err, errlen, "out of memory"), 1;
  for (int i = 0; i < n; i++) o[i].u = &u[i], o[i].ordinal = all ? i : ordinals[i];
  each_unit(o, n, open_thread);
  for (int i = n - 1; i >= 0; i--)
    if (o[i].rc) bad = i;   /* the first GPU that failed names the error */
  if (bad >= 0) snprintf(err, errlen, "%s", o[bad].err);
  free(o);
  if (bad >= 0) return tune_gpu_units_free(u, n), 1;   /* closes the opened ones: a failed one has no ud */
  *units = u, *nunits = n;
  return 0;
}

void tune_gpu_units_free(tune_Unit *units, int n)
{
  Opener *o = units && n > 0 ? calloc((size_t)n, sizeof *o) : NULL;
  for (int i = 0; units && !o && i < n; i++) close_unit(units[i].ud);   /* no memory for threads */
  for (int i = 0; o && i < n; i++) o[i].u = &units[i];
  if (o) each_unit(o, n, close_thread);
  free(o);
  free(units);
}
