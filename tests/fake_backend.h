/*
** fake_backend.h — a fake tune_Backend for the reliability tests (test_kill, test_concurrent),
** after the scripted one in test_sweep.c but simpler: every config of the space compiles, loads,
** verifies and times; config i takes its own distinct time, so the winner is known (fake_best).
** Each call may sleep a random 0..max_sleep_us (nanosleep), so that a SIGKILL can land in any
** phase of a sweep; the winner's cubin may be made big_bytes long, so that storing it takes a
** while. Also: a fake GPU's cache key, fake_tune() = tune_sweep with quick options, and fake
** GPUs as the units of a batch (fake_gpu), of a model each names.
*/
#ifndef TESTS_FAKE_BACKEND_H
#define TESTS_FAKE_BACKEND_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "batch.h"
#include "gen.h"
#include "tune.h"

/* The first column of the first row of sql, or -1. */
static inline long long query_int(sqlite3 *db, const char *sql)
{
  sqlite3_stmt *st;
  long long v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

typedef struct fake_Backend {
  char **configs;           /* the space, in the sweep's order */
  int n;
  int best;                 /* the fastest config: the winner */
  int max_sleep_us;         /* each call sleeps 0..max_sleep_us */
  size_t big_bytes;         /* > 0: the winner's cubin is this long */
  unsigned seed;            /* seeds the sleeps */
  int *loaded;              /* per slot: the config loaded there (the text fakes: the sweep's slots
                            ** follow its own list, which the fast sweep cuts and reorders) */
} fake_Backend;

/* A small PRNG step (xorshift32). */
static inline unsigned fake_rand(unsigned *s)
{
  unsigned x = *s ? *s : 2463534242u;
  x ^= x << 13, x ^= x >> 17, x ^= x << 5;
  return *s = x;
}

/* Sleep 0..max_sleep_us; each thread draws from its own generator, seeded from f->seed. */
static inline void fake_sleep(fake_Backend *f)
{
  static _Thread_local unsigned s;
  if (f->max_sleep_us <= 0) return;
  if (!s) s = f->seed ^ (unsigned)(uintptr_t)&s;
  long us = (long)(fake_rand(&s) % (unsigned)(f->max_sleep_us + 1));
  struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
  nanosleep(&ts, NULL);
}

/* Config i's time: distinct, shuffled, 100 us or more. */
static inline double fake_us(const fake_Backend *f, int i)
{
  return 100 + (i * 37) % f->n + (double)i / f->n;
}

static inline int fake_index(const fake_Backend *f, const char *config)
{
  for (int i = 0; i < f->n; i++)
    if (strcmp(f->configs[i], config) == 0) return i;
  return -1;
}

/* The cubin of config i: its index, then (for the winner, when big) pseudo-random bytes. */
static inline int fake_compile(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  fake_Backend *f = ud;
  int i = fake_index(f, k->config);
  fake_sleep(f);
  if (i < 0) return snprintf(err, errlen, "fake: unknown config %s", k->config), 1;
  size_t size = i == f->best && f->big_bytes > sizeof i ? f->big_bytes : sizeof i;
  unsigned char *d = malloc(size);
  if (!d) return snprintf(err, errlen, "fake: out of memory"), 1;
  memcpy(d, &i, sizeof i);
  unsigned s = (unsigned)i * 2654435761u + (unsigned)size;
  for (size_t j = sizeof i; j < size; j++) d[j] = (unsigned char)fake_rand(&s);
  c->data = d, c->size = size, c->ms = 1.5;
  return 0;
}

/* What a loaded config reports. */
static inline int fake_load_figures(tune_Trial *t)
{
  t->regs = 40, t->local_bytes = 0, t->smem = 2048, t->blocks_sm = 8, t->occupancy = 1.;
  return TUNE_EOK;
}

static inline int fake_load(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t)
{
  fake_Backend *f = ud;
  fake_sleep(f);
  if (c->size < sizeof slot || memcmp(c->data, &slot, sizeof slot) != 0)
    return snprintf(t->reason, sizeof t->reason, "fake: slot %d got another config's cubin", slot), TUNE_EFATAL;
  return fake_load_figures(t);
}

static inline int fake_verify(void *ud, int slot, tune_Trial *t)
{
  fake_sleep(ud);
  t->max_err = 1e-7;
  return TUNE_EOK;
}

static inline int fake_time(void *ud, int slot, int n, double *us, char *err, size_t errlen)
{
  fake_Backend *f = ud;
  fake_sleep(f);
  int i = slot >= 0 && f->loaded ? f->loaded[slot] : slot;
  for (int j = 0; j < n; j++) us[j] = slot < 0 ? 80. : fake_us(f, i);
  return TUNE_EOK;
}

static inline void fake_unload(void *ud, int slot)
{
  (void)ud, (void)slot;
}

/* The fake for problem p: its space from the generator. 0 on success. */
static inline int fake_init(fake_Backend *f, gen_State *g, const gen_Problem *p, int max_sleep_us, unsigned seed)
{
  memset(f, 0, sizeof *f);
  if (gen_space(g, p, &f->configs, &f->n) || f->n == 0) return 1;
  f->best = 0;
  for (int i = 1; i < f->n; i++)
    if (fake_us(f, i) < fake_us(f, f->best)) f->best = i;
  f->max_sleep_us = max_sleep_us;
  f->seed = seed;
  return !(f->loaded = calloc((size_t)f->n, sizeof *f->loaded));
}

static inline void fake_free(fake_Backend *f)
{
  gen_free_list(f->configs, f->n);
  free(f->loaded);
  memset(f, 0, sizeof *f);
}

static inline tune_Backend fake_backend(fake_Backend *f)
{
  tune_Backend b = { f, fake_compile, fake_load, fake_verify, fake_time, fake_unload };
  return b;
}

/* tune_sweep on backend b (the fake, or one wrapping it), with few repetitions and rounds. */
static inline int fake_tune_on(gen_State *g, const gen_Problem *p, const tune_Backend *b, tune_Result *r, char *err,
                               size_t errlen)
{
  tune_Options o;
  tune_default_options(&o);
  o.threads = 2, o.min_reps = 3, o.max_reps = 5, o.rounds = 5, o.max_finalists = 3;
  return tune_sweep(g, p, b, &o, r, err, errlen);
}

static inline int fake_tune(gen_State *g, const gen_Problem *p, fake_Backend *f, tune_Result *r, char *err, size_t errlen)
{
  tune_Backend b = fake_backend(f);
  return fake_tune_on(g, p, &b, r, err, errlen);
}

/* The cache key of problem p on a fake GPU. */
static inline void fake_key(const gen_Problem *p, cache_Key *k)
{
  memset(k, 0, sizeof *k);
  snprintf(k->gpu, sizeof k->gpu, "Fake GPU (softmax-tune tests)");
  k->arch = p->arch, k->sms = 132, k->driver = 13000, k->nvrtc = 13000;
  memset(k->templates, 'f', 64);
  k->dtype = p->dtype, k->op = p->op, k->rows = p->rows, k->cols = p->cols;
}

/* How many runs the log of db holds (up to 1000), or -1 when it cannot be read. */
static inline int fake_count_runs(cache_Db *db)
{
  cache_Key all;
  cache_Run *r = NULL;
  int n = -1;
  cache_filter_all(&all);
  if (cache_runs(db, &all, 0, 1000, &r, &n)) n = -1;
  free(r);
  return n;
}

/* Tune p on the fake and store it in db under the fake GPU's key, every time scaled by speed
** (< 1: faster than the fake's own figures); *run gets the run id. templates: the key's hash
** (NULL: the fake's). 0, or 1 with err set. */
static inline int fake_tune_store_as(gen_State *g, cache_Db *db, const gen_Problem *p, double speed, const char *templates,
                                     int64_t *run, char *err, size_t errlen)
{
  fake_Backend f;
  tune_Result r;
  cache_Key k;
  if (fake_init(&f, g, p, 0, 1)) return snprintf(err, errlen, "fake_init: %s", gen_error(g)), 1;
  int rc = fake_tune(g, p, &f, &r, err, errlen);
  if (rc == 0 && r.winner != f.best) rc = 1, snprintf(err, errlen, "the fake's fastest config did not win");
  for (int i = 0; i < r.ntrials; i++) r.trials[i].us *= speed;
  fake_key(p, &k);
  if (templates) snprintf(k.templates, sizeof k.templates, "%s", templates);
  if (rc == 0) rc = tune_store(db, &k, &r, run, err, errlen);
  tune_result_free(&r);
  fake_free(&f);
  return rc;
}

static inline int fake_tune_store(gen_State *g, cache_Db *db, const gen_Problem *p, double speed, int64_t *run, char *err,
                                  size_t errlen)
{
  return fake_tune_store_as(g, db, p, speed, NULL, run, err, errlen);
}

/* A problem of rows x 4096 f32 softmax on sm_90. */
static inline gen_Problem fake_problem(int64_t rows)
{
  gen_Problem p;
  memset(&p, 0, sizeof p);
  p.rows = rows, p.cols = 4096, p.dtype = GEN_F32, p.op = GEN_SOFTMAX, p.arch = 90;
  return p;
}

/* ---- fake GPUs for batches: a config's cubin is its text, checked when loaded ---- */

typedef struct fake_Gpu {
  tune_Device dev;
  fake_Backend f;           /* the problem being tuned */
  int max_sleep_us;
  int prepared;             /* problems given to it */
  int compiles, configs;    /* configs compiled (any thread), and in the problems given */
  int ready;                /* problems after the first whose every config was compiled before it was given */
  int sigint_at;            /* > 0: raise SIGINT when preparing this many-th problem */
  tune_AttnOptions attn;    /* the attention options of the last problem given (the defaults for NULL) */
} fake_Gpu;

static inline int fake_text_compile(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  size_t n = strlen(k->config) + 1;
  (void)ud;
  if (!(c->data = malloc(n))) return snprintf(err, errlen, "fake: out of memory"), 1;
  memcpy(c->data, k->config, n);
  c->size = n, c->ms = 1.5;
  return 0;
}

static inline int fake_text_load(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t)
{
  fake_Backend *f = ud;
  int i = fake_index(f, k->config);
  if (slot < 0 || slot >= f->n || i < 0 || c->size != strlen(k->config) + 1 || memcmp(c->data, k->config, c->size) != 0)
    return snprintf(t->reason, sizeof t->reason, "fake: slot %d got another config's cubin", slot), TUNE_EFATAL;
  f->loaded[slot] = i;
  return fake_load_figures(t);
}

/* The unit's compile: counted. */
static inline int fake_gpu_compile(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  __atomic_add_fetch(&((fake_Gpu *)ud)->compiles, 1, __ATOMIC_SEQ_CST);
  return fake_text_compile(ud, k, c, err, errlen);
}

static inline int fake_gpu_prepare(void *ud, gen_State *g, const gen_Problem *p, const tune_AttnOptions *attn, int nslots,
                                   tune_Backend *b, char *err, size_t errlen)
{
  fake_Gpu *u = ud;
  tune_Backend fb = { &u->f, fake_text_compile, fake_text_load, fake_verify, fake_time, fake_unload };
  (void)nslots;
  if (attn) u->attn = *attn;
  else tune_attn_defaults(&u->attn);
  if (++u->prepared == u->sigint_at) raise(SIGINT);
  if (fake_init(&u->f, g, p, u->max_sleep_us, (unsigned)u->prepared)) return snprintf(err, errlen, "fake: no space"), 1;
  u->configs += u->f.n;
  u->ready += u->prepared > 1 && __atomic_load_n(&u->compiles, __ATOMIC_SEQ_CST) >= u->configs;
  *b = fb;
  return 0;
}

static inline void fake_gpu_release(void *ud)
{
  fake_free(&((fake_Gpu *)ud)->f);
}

/* GPU `ordinal`, of model `model`, as a batch's unit. */
static inline tune_Unit fake_gpu(fake_Gpu *u, int ordinal, const char *model, int max_sleep_us)
{
  memset(u, 0, sizeof *u);
  snprintf(u->dev.name, sizeof u->dev.name, "%s", model);
  u->dev.ordinal = ordinal, u->dev.arch = 90, u->dev.sms = 132, u->dev.threads_sm = 2048;
  u->dev.smem_block = 227 * 1024, u->dev.cluster = 16, u->dev.mem = 80LL << 30, u->dev.driver = 13000;
  u->max_sleep_us = max_sleep_us;
  tune_Unit unit = { &u->dev, u, fake_gpu_compile, fake_gpu_prepare, fake_gpu_release };
  return unit;
}

#endif
