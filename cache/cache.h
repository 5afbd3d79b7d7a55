/*
** cache.h — the cache and the tuning log, in one SQLite database: the winning cubin per GPU and
** problem, with its config and figures, and a record of every run and every trial.
**
** An entry is keyed by everything that changes the kernel: GPU model, compute capability, SM
** count, a hash of the templates, dtype, op, rows and cols. The driver and NVRTC versions it
** was made (or last verified) under are recorded with it: a caller under others verifies it
** again before use (cache_reverified); driver 0 (an entry imported from a bundle, not timed
** here) is verified before its first use under any driver. Entries are written in one transaction with their run,
** or not at all; the cubin's SHA-256 is checked on every read. A cache of an earlier schema is
** migrated in place, in one transaction, when opened (migrate.c). WAL mode and a busy timeout let several tuners share
** one file. Functions return 0 or an error code; cache_error() says what went wrong.
*/
#ifndef CACHE_H
#define CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "gen.h"

enum { CACHE_OK = 0, CACHE_ERROR = 1, CACHE_MISS = 2, CACHE_CORRUPT = 3 };

typedef struct cache_Key {
  char gpu[256];
  int arch, sms;
  int driver, nvrtc;              /* not matched by look-ups; nvrtc as major*1000 + minor*10, like the driver */
  char templates[65];             /* SHA-256 of the generator's sources */
  int dtype, op;
  int mask, bias;                 /* attention_softmax's kinds (gen.h), in its op's key text */
  int64_t rows, cols;
} cache_Key;

typedef struct cache_Entry {
  cache_Key key;
  char config[256], kernel[64], created[32];
  gen_Launch launch;
  void *cubin;                    /* malloc'ed; cache_entry_free */
  size_t size;
  char sha256[65];
  double us, gbps, frac, copy_us;
  int64_t run;
  char origin[32];                /* "" tuned here, or CACHE_BUNDLE / CACHE_RETIMED (imported) */
} cache_Entry;

/* Where an entry came from (cache_Entry.origin): imported from a bundle, its figures the
** bundle's claims and its driver 0 until it is verified here before its first use; or imported
** and verified and timed on this host's GPU (cache import --retime). A run's origin is
** CACHE_BUNDLE when it is a bundle's run, carried into this log. */
#define CACHE_BUNDLE "bundle"
#define CACHE_RETIMED "bundle, retimed"

/* One trial of a run, as logged. */
typedef struct cache_Trial {
  char config[256], status[16], reason[256];
  int regs, local_bytes, smem, blocks_sm;
  double occupancy, compile_ms, us, gbps, frac, max_err;
  int finalist;
} cache_Trial;

typedef struct cache_Run {
  int64_t id;
  cache_Key key;
  char started[32], status[32], winner[256];
  double seconds, winner_us, copy_us, frac;
  int configs, verified, pruned, failed;
  char origin[32];                /* "" run here, CACHE_BUNDLE a bundle's run */
} cache_Run;

typedef struct cache_Db cache_Db;

/* mkdir -p for the folder holding path. */
int cache_make_parents(const char *path, char *err, size_t errlen);
/* $XDG_CACHE_HOME/softmax-tune/leaf, else ~/.cache/softmax-tune/leaf, into out: what snprintf
** returned, 0 when neither variable gives a place. */
int cache_default_place(const char *leaf, char *out, size_t n);
/* The database path: opt, else $SOFTMAX_TUNE_CACHE, else the default place of cache.db.
** Default folders are made when create is set. */
int cache_path(const char *opt, int create, char *out, size_t n, char *err, size_t errlen);
/* 0 if the cache at path can be written (the file, or its folder to make it and SQLite's
** -wal and -shm files beside it), else 1 with the reason in err. */
int cache_writable(const char *path, char *err, size_t errlen);
/* create: make the file when missing; else a missing file is CACHE_MISS. */
int cache_open(cache_Db **db, const char *path, int create, char *err, size_t errlen);
void cache_close(cache_Db *db);
const char *cache_error(const cache_Db *db);

/* CACHE_OK with e filled, CACHE_MISS, or CACHE_CORRUPT when the cubin fails its checksum.
** k's driver and NVRTC are not matched: e->key has those the entry was made under. */
int cache_get(cache_Db *db, const cache_Key *k, cache_Entry *e);
void cache_entry_free(cache_Entry *e);
/* The entry of this GPU, dtype and op (and kinds) whose cols lie in [lo, hi] (a width class:
** its kernel serves every width of it), nearest k's cols, then k's rows: for reusing a tuned
** kernel on other shapes. */
int cache_similar(cache_Db *db, const cache_Key *k, int64_t lo, int64_t hi, cache_Entry *e);

/* Store a run, its trials and (when e is not NULL) its winning entry, in one transaction. */
int cache_store(cache_Db *db, cache_Run *run, const cache_Trial *trials, int ntrials, const cache_Entry *e);

/* e (from cache_get for k) was made under another driver or NVRTC than k's and has been
** verified again with trial t: passed, it now records k's driver and NVRTC; failed, it is
** removed (the shape is tuned again). Logged as a run ("reverified" or "reverify failed") in
** one transaction with the change; *run gets its id. An entry replaced meanwhile is untouched. */
int cache_reverified(cache_Db *db, const cache_Key *k, const cache_Entry *e, const cache_Trial *t, int passed, int64_t *run);

/* Runs, newest first, filtered by key fields that are set (rows/cols > 0, dtype/op >= 0);
** id > 0 picks one run. *runs is malloc'ed. */
int cache_runs(cache_Db *db, const cache_Key *filter, int64_t id, int limit, cache_Run **runs, int *n);
int cache_trials(cache_Db *db, int64_t run, cache_Trial **trials, int *n);
/* Entries (without cubins) matching the filter; *e is malloc'ed. */
int cache_entries(cache_Db *db, const cache_Key *filter, cache_Entry **e, int *n);
/* Delete the entries matching the filter; *n says how many. */
int cache_clear(cache_Db *db, const cache_Key *filter, int *n);

/* A key that matches everything: the filter to fill in. */
void cache_filter_all(cache_Key *k);
void cache_sha256(const void *data, size_t n, char hex[65]);

/* Kept cubins (cubins.c): a folder of compiled kernels, each file named by the SHA-256 of what
** made it (source, file name, arch, NVRTC's version and options), shared by every process:
** the tuner and the runtime compile a source once, not once per problem or per process (rows
** are a launch argument, so problems of the same cols share their sources). A file is written
** atomically (a temporary file, then rename) and its checksum is checked on every read; a
** missing or bad one is compiled again and rewritten. */
#define CACHE_CUBINS_MAX ((int64_t)512 << 20)   /* bytes the folder keeps; the least recently used go */
/* The folder: opt, else $SOFTMAX_TUNE_CUBINS, else $XDG_CACHE_HOME/softmax-tune/cubins, else
** ~/.cache/softmax-tune/cubins; "none" (either way) or no HOME: *out = "", nothing kept. */
void cache_cubin_dir(const char *opt, char *out, size_t n);
/* gen_compile through the folder dir ("" or NULL: gen_compile alone). A file that cannot be
** written is not an error: the compile stands. The first use of a folder in a process trims it
** to CACHE_CUBINS_MAX. */
int cache_compile(const char *dir, const char *source, const char *name, int arch, gen_Cubin *out, char *err,
                  size_t errlen);
/* Remove the least recently used kept cubins of dir until it holds at most max_bytes * 3/4,
** when it holds more than max_bytes; *removed (may be NULL) says how many went. */
int cache_cubins_trim(const char *dir, int64_t max_bytes, int *removed);

#endif
