/*
** background.h — kernels made off the call path. A context's worker thread takes problems in the
** order given and, for each, chooses the untuned rule's config (untuned_choose, on a generator of
** its own, no cache), renders it and compiles it with NVRTC through the kept-cubins folder
** (cache_compile), while the calls of its class run a stand-in (the kernel set's, kset_stand_in).
** The caller polls a job (bg_done) and takes its cubin once done; the worker touches no CUDA state,
** no memo and no cache. docs/kernel-set.md.
*/
#ifndef BACKGROUND_H
#define BACKGROUND_H

#include <stdatomic.h>
#include <stddef.h>

#include "cache.h"
#include "gen.h"

typedef struct bg_Job {
  gen_Problem p;            /* in: the problem rendered for (its bias type too) */
  gen_Problem key;          /* in: the problem the config is chosen for (kset_key_problem: band, class) */
  int unaligned;
  cache_Key base;           /* in: the GPU and templates (untuned_choose) */
  char kept[4096];          /* in: the kept-cubins folder ("": none) */
  gen_Kernel k;             /* out, once done: the kernel (name, launch, config) and its cubin, */
  gen_Cubin cb;             /* or rc != 0 and err */
  int rc;
  char err[1024];
  atomic_int done;
  struct bg_Job *next;      /* the worker's queue */
} bg_Job;

typedef struct bg_Worker bg_Worker;

/* Queue job j (its inputs set), starting *w's thread on first use: 0, or 1 with err (j is then
** not queued). */
int bg_submit(bg_Worker **w, bg_Job *j, char *err, size_t errlen);
/* Whether j is compiled (or failed): its cb, rc and err may be read then. */
int bg_done(bg_Job *j);
/* Block until j is done. */
void bg_wait(bg_Worker *w, bg_Job *j);
/* Finish the job in hand, drop the queued ones (never done: their owners free them), stop the
** thread; w may be NULL. */
void bg_stop(bg_Worker *w);
void bg_job_free(bg_Job *j);

#endif
