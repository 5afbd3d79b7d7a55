/*
** reverify.h — an entry tuned under another driver or NVRTC version than the one running now
** is verified again, not tuned again, on its first use: loaded and checked against the float64
** reference by the tuner's backend (the GPU, or a fake in the tests). It stays, now recording
** the running versions, if it passes; it is removed, so that the shape is tuned again, if not.
** The log has a run for either verdict (cache_reverified).
*/
#ifndef REVERIFY_H
#define REVERIFY_H

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

#endif
