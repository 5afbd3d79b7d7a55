/*
** reverify.c — verifying a cached entry again under a new driver or NVRTC (see reverify.h).
*/
#include "reverify.h"

#include <stdio.h>
#include <string.h>

int tune_stale(const cache_Key *k, const cache_Entry *e)
{
  return e->key.driver != k->driver || e->key.nvrtc != k->nvrtc;
}

#define RETIME_ROUNDS 5    /* copy and kernel timed in turn, this many times */
#define RETIME_REPS 10     /* launches each time */

/* The kernel in slot 0, then the copy, RETIME_ROUNDS times: medians into t->us and *copy_us. */
static int time_entry(const tune_Backend *b, tune_Trial *t, double *copy_us, char *err, size_t errlen)
{
  double us[RETIME_REPS], k[RETIME_ROUNDS], c[RETIME_ROUNDS];
  for (int i = 0; i < RETIME_ROUNDS; i++) {
    if (b->time(b->ud, 0, RETIME_REPS, us, err, errlen)) return TUNE_EFATAL;
    k[i] = tune_median(us, RETIME_REPS);
    if (b->time(b->ud, -1, RETIME_REPS, us, err, errlen)) return TUNE_EFATAL;
    c[i] = tune_median(us, RETIME_REPS);
  }
  t->us = tune_median(k, RETIME_ROUNDS);
  *copy_us = tune_median(c, RETIME_ROUNDS);
  return TUNE_EOK;
}

/* Load e's cubin into slot 0 and verify it (and time it, when copy_us is not NULL): t holds the
** trial; TUNE_EOK, TUNE_ECONFIG (it failed) or TUNE_EFATAL (the device failed: err). */
static int check_entry(const tune_Backend *b, const cache_Entry *e, tune_Trial *t, double *copy_us, char *err, size_t errlen)
{
  gen_Kernel kern;
  gen_Cubin cubin;
  memset(&kern, 0, sizeof kern);
  memset(&cubin, 0, sizeof cubin);
  memset(t, 0, sizeof *t);
  snprintf(kern.name, sizeof kern.name, "%s", e->kernel);
  snprintf(kern.config, sizeof kern.config, "%s", e->config);
  kern.launch = e->launch;
  cubin.data = e->cubin, cubin.size = e->size;
  snprintf(t->config, sizeof t->config, "%s", e->config);
  int rc = b->load(b->ud, 0, &kern, &cubin, t);
  if (rc == TUNE_EOK) {
    rc = b->verify(b->ud, 0, t);
    if (rc == TUNE_EOK && copy_us) rc = time_entry(b, t, copy_us, err, errlen);
    b->unload(b->ud, 0);
  }
  if (rc == TUNE_EFATAL && !err[0]) snprintf(err, errlen, "verifying %s: %s", e->config, t->reason);
  t->status = rc == TUNE_EOK ? TUNE_OK : TUNE_FAILED;
  return rc;
}

int tune_reverify(cache_Db *db, const cache_Key *k, const cache_Entry *e, const tune_Backend *b, char *err,
                  size_t errlen)
{
  tune_Trial t;
  cache_Trial logged;
  int64_t run;
  memset(&logged, 0, sizeof logged);
  if (err && errlen) err[0] = '\0';
  int rc = check_entry(b, e, &t, NULL, err, errlen);
  if (rc == TUNE_EFATAL) return CACHE_ERROR;
  tune_trial_record(&t, &logged);
  if (cache_reverified(db, k, e, &logged, rc == TUNE_EOK, &run))
    snprintf(err, errlen, "verified again (%s) but not logged: %s", rc == TUNE_EOK ? "passed" : t.reason, cache_error(db));
  else if (rc != TUNE_EOK)
    snprintf(err, errlen, "failed its verification under driver %d, NVRTC %d: %s (run %lld)", k->driver, k->nvrtc,
             t.reason, (long long)run);
  return rc == TUNE_EOK ? 0 : CACHE_MISS;
}

int tune_retime(const tune_Backend *b, cache_Entry *e, cache_Trial *t, char *err, size_t errlen)
{
  tune_Trial s;
  double copy_us = 0;
  if (err && errlen) err[0] = '\0';
  int rc = check_entry(b, e, &s, &copy_us, err, errlen);
  if (rc == TUNE_EFATAL) return CACHE_ERROR;
  if (rc == TUNE_EOK && s.us > 0) {
    const double bytes = (double)gen_op_bytes(e->key.op, e->key.rows, e->key.cols, e->key.dtype);
    s.gbps = bytes / s.us / 1e3, s.frac = copy_us / s.us;
    e->us = s.us, e->gbps = s.gbps, e->frac = s.frac, e->copy_us = copy_us;
  }
  tune_trial_record(&s, t);
  return rc == TUNE_EOK ? 0 : CACHE_MISS;
}

int tune_unit_retime(void *ud, cache_Entry *e, cache_Trial *t, char *err, size_t errlen)
{
  tune_Retimer *r = ud;
  const tune_Unit *u = r->unit;
  tune_Backend b;
  gen_Problem p;
  memset(&p, 0, sizeof p);
  tune_device_limits(u->dev, &p);
  p.rows = e->key.rows, p.cols = e->key.cols, p.dtype = e->key.dtype, p.op = e->key.op;
  p.mask = e->key.mask, p.bias = e->key.bias;
  int rc = u->prepare(u->ud, r->gen, &p, NULL, 1, &b, err, errlen) ? CACHE_ERROR : tune_retime(&b, e, t, err, errlen);
  u->release(u->ud);
  return rc;
}

int tune_gpu_reverify(int ordinal, gen_State *g, const gen_Problem *p, cache_Db *db, const cache_Key *k,
                      const cache_Entry *e, char *err, size_t errlen)
{
  tune_Gpu *gpu = NULL;
  int rc = tune_gpu_open(&gpu, ordinal, err, errlen) || tune_gpu_prepare(gpu, g, p, 1, err, errlen) ? CACHE_ERROR : 0;
  if (rc == 0) {
    tune_Backend b = tune_gpu_backend(gpu);
    rc = tune_reverify(db, k, e, &b, err, errlen);
  }
  tune_gpu_close(gpu);
  return rc;
}
