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

int tune_reverify(cache_Db *db, const cache_Key *k, const cache_Entry *e, const tune_Backend *b, char *err,
                  size_t errlen)
{
  gen_Kernel kern;
  gen_Cubin cubin;
  tune_Trial t;
  cache_Trial logged;
  int64_t run;
  memset(&kern, 0, sizeof kern);
  memset(&cubin, 0, sizeof cubin);
  memset(&t, 0, sizeof t);
  memset(&logged, 0, sizeof logged);
  if (err && errlen) err[0] = '\0';
  snprintf(kern.name, sizeof kern.name, "%s", e->kernel);
  snprintf(kern.config, sizeof kern.config, "%s", e->config);
  kern.launch = e->launch;
  cubin.data = e->cubin, cubin.size = e->size;
  snprintf(t.config, sizeof t.config, "%s", e->config);
  int rc = b->load(b->ud, 0, &kern, &cubin, &t);
  if (rc == TUNE_EOK) {
    rc = b->verify(b->ud, 0, &t);
    b->unload(b->ud, 0);
  }
  if (rc == TUNE_EFATAL) return snprintf(err, errlen, "verifying %s again: %s", e->config, t.reason), CACHE_ERROR;
  t.status = rc == TUNE_EOK ? TUNE_OK : TUNE_FAILED;
  tune_trial_record(&t, &logged);
  if (cache_reverified(db, k, e, &logged, rc == TUNE_EOK, &run))
    snprintf(err, errlen, "verified again (%s) but not logged: %s", rc == TUNE_EOK ? "passed" : t.reason, cache_error(db));
  else if (rc != TUNE_EOK)
    snprintf(err, errlen, "failed its verification under driver %d, NVRTC %d: %s (run %lld)", k->driver, k->nvrtc,
             t.reason, (long long)run);
  return rc == TUNE_EOK ? 0 : CACHE_MISS;
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
