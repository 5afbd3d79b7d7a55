/*
** reverify.h — an entry tuned under another driver or NVRTC version than the one running now
** (or imported from a bundle and not timed here: driver 0) is verified again, not tuned again,
** on its first use: loaded and checked against the float64 reference by the tuner's backend
** (the GPU, or a fake in the tests). It stays, now recording the running versions, if it
** passes; it is removed, so that the shape is tuned again, if not. The log has a run for
** either verdict (cache_reverified). `cache import --retime` does the same check, and times the
** entry too, before an imported entry is merged (tune_retime, as cache_Rebuild.retime).
*/
#ifndef REVERIFY_H
#define REVERIFY_H

#include "batch.h"
#include "tune.h"

/* Whether e, found for k, was made under another driver or NVRTC than k's. */
int tune_stale(const cache_Key *k, const cache_Entry *e);

/* Verify e with b (prepared for e's problem, slot 0 free) and record the verdict under k.
** 0: it passed, use it; CACHE_MISS: it failed and is gone; CACHE_ERROR: the device failed.
** err (empty when there is nothing to say) says why it failed, or that the verdict, which
** stands, could not be logged. */
int tune_reverify(cache_Db *db, const cache_Key *k, const cache_Entry *e, const tune_Backend *b, char *err,
                  size_t errlen);

/* tune_reverify on GPU ordinal, through a tune_Gpu of its own prepared for p (e's shape). */
int tune_gpu_reverify(int ordinal, gen_State *g, const gen_Problem *p, cache_Db *db, const cache_Key *k,
                      const cache_Entry *e, char *err, size_t errlen);

/* Verify e (its cubin) with b as tune_reverify does, then time it against the copy, interleaved:
** e's us, gbps, frac and copy_us become b's measurements. 0 passed; CACHE_MISS failed (t->reason
** says why); CACHE_ERROR the device failed (err). t: the trial, as the log keeps it. */
int tune_retime(const tune_Backend *b, cache_Entry *e, cache_Trial *t, char *err, size_t errlen);

/* cache_Rebuild.retime on a batch's unit (a GPU, tune_gpu_units; ud: a tune_Retimer):
** tune_retime on it, prepared for e's problem with the unit's limits. */
typedef struct tune_Retimer {
  const tune_Unit *unit;
  gen_State *gen;
} tune_Retimer;
int tune_unit_retime(void *ud, cache_Entry *e, cache_Trial *t, char *err, size_t errlen);

#endif
