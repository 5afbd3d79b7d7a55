/*
** batch.h — a list of problems tuned in one process, on one GPU or several: a worker thread per
** GPU, GPUs of one model sharing the list (a problem is tuned once per model, its entry is
** good for all of them), GPUs of different models each tuning all of it. Each worker compiles
** its next problem's configs while the GPU times this one's (tune_Ahead), answers problems
** the cache has (unless forced), and stores each problem in its own transaction as it
** finishes, so an interruption keeps what was done.
*/
#ifndef TUNE_BATCH_H
#define TUNE_BATCH_H

#include <pthread.h>

#include "tune.h"

/* One GPU as a batch sees it: the GPU backend (gpus.c) or a fake in the tests. */
typedef struct tune_Unit {
  const tune_Device *dev;   /* its facts: the model (name, arch, SMs, driver) groups units */
  void *ud;
  /* Compile for this GPU; any thread, any problem. */
  int (*compile)(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen);
  /* Ready for p (buffers, nslots configs; an attention problem's options attn, NULL: the defaults)
  ** in the calling thread, and the backend to sweep it with; 2 when p does not fit. release undoes
  ** it (also after a failed prepare). */
  int (*prepare)(void *ud, gen_State *g, const gen_Problem *p, const tune_AttnOptions *attn, int nslots, tune_Backend *b,
                 char *err, size_t errlen);
  void (*release)(void *ud);
} tune_Unit;

enum { TUNE_ITEM_WAITING, TUNE_ITEM_RUNNING, TUNE_ITEM_TUNED, TUNE_ITEM_CACHED, TUNE_ITEM_FAILED, TUNE_ITEM_STOPPED };

/* One problem on one GPU model, and what became of it. */
typedef struct tune_Item {
  gen_Problem p;            /* rows, cols, dtype, op as listed */
  tune_AttnOptions attn;    /* an attention problem's launch options (Q, H, window, ...) it is tuned with */
  int model;                /* the model group */
  int unit;                 /* the unit that answered it, -1 before */
  int state;                /* TUNE_ITEM_* */
  char config[256];         /* the winner's */
  double us, frac, seconds; /* seconds: tuning time (0 from the cache) */
  int64_t run;
  int done, total;          /* configs swept so far, of */
  char error[512];
} tune_Item;

struct tune_Batch;

typedef struct tune_BatchOptions {
  tune_Options sweep;       /* for each problem; its cancel flag also stops between problems */
  int force;                /* tune again what the cache has */
  const char *cache_path;   /* each worker opens it (made if missing) */
  const char *templates;    /* NULL: the built-in templates */
  int compile_threads;      /* per GPU; 0: the cores shared among the GPUs */
  const tune_AttnOptions *attn;   /* per problem, its attention options; NULL: the defaults */
  /* After every change of an item (started, a config swept, finished); under the batch's lock. */
  void (*progress)(void *ud, const struct tune_Batch *b, int item);
  void *progress_ud;
} tune_BatchOptions;

typedef struct tune_Batch {
  const tune_Unit *units;
  int nunits, nmodels, nproblems;
  int *model;               /* per unit: its model group */
  int *current;             /* per unit: the item it tunes, -1 */
  tune_Item *items;         /* problem i on model m: items[m * nproblems + i] */
  int nitems;
  int cancelled;            /* the cancel flag stopped it */
  pthread_mutex_t mu;
  int *order;               /* the problems in the order claimed: longest first */
  int *next;                /* per model: the next of order to claim */
  const tune_BatchOptions *o;
} tune_Batch;

/* Tune problems[0..n) on the units, one thread each; 0 when it ran (whatever each item's state),
** else err says why it could not start. */
int tune_batch(const tune_Unit *units, int nunits, const gen_Problem *problems, int n, const tune_BatchOptions *o,
               tune_Batch *b, char *err, size_t errlen);
void tune_batch_free(tune_Batch *b);
/* Whether units a and b are the same model (cache entries of one serve the other). */
int tune_same_model(const tune_Device *a, const tune_Device *b);

/* ---- compiling ahead (ahead.c): a queue of problems' configs, compiled in order by a pool ---- */
typedef struct tune_Ahead tune_Ahead;
int tune_ahead_open(tune_Ahead **a, const tune_Unit *u, int threads, char *err, size_t errlen);
/* Render p's configs as the sweep of options o will (tune_fast_space; in the caller's thread)
** and queue their compiles behind those queued. */
int tune_ahead_add(tune_Ahead *a, gen_State *g, const gen_Problem *p, const tune_Options *o, char *err, size_t errlen);
/* b, compiling from the oldest queued problem: a config's cubin is taken from the queue (or
** compiled at once when the pool has not reached it). */
tune_Backend tune_ahead_backend(tune_Ahead *a, const tune_Backend *b);
/* The oldest problem is done: drop what is left of it. */
void tune_ahead_done(tune_Ahead *a);
void tune_ahead_close(tune_Ahead *a);

/* ---- GPUs as units (gpus.c) ---- */
/* Units for ordinals[0..n), or every GPU when n is 0; *units is malloc'ed. */
int tune_gpu_units(const int *ordinals, int n, tune_Unit **units, int *nunits, char *err, size_t errlen);
void tune_gpu_units_free(tune_Unit *units, int n);

#endif
