/*
** bundle.h — cache bundles: a self-contained file of tuning choices (each entry's key, config,
** launch fields and timing, no code) with the log rows (runs and trials) of the runs that made
** them, to carry tuned shapes from one host to others with the same GPU model.
**
** A bundle is one header line, `softmax-tune bundle 2 bytes=N sha256=HEX`, then N bytes: an
** SQLite database image with the cache's schema (cache_sql.h), a meta row bundle = 2, and
** entries whose cubin is empty (their sha256 is the exporting host's, for comparison only).
** Format 1 (schema 3, cubins inside) still reads: its cubins are ignored. The SHA-256 covers
** the image, so a truncated file or any flipped byte is refused whole; an image of another
** schema or a key its run does not hold is refused whole too. Nothing of the exporting host is
** in it (no host name unless asked, no user name, no path).
**
** An import trusts nothing of a bundle's code: every entry's config is rendered with this
** host's templates and compiled with this host's NVRTC (an entry of other templates joins the
** log only). Then it merges in one transaction: on a key held by both, the faster entry stays;
** every run of the bundle joins the log under a new id (ids would collide). An imported entry
** is either verified and timed here first (retime: the faster-entry rule then compares this
** GPU's times) or stored with driver 0, so that it is verified before its first use.
*/
#ifndef BUNDLE_H
#define BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"

#define CACHE_BUNDLE_VERSION 2

/* Besides the CACHE_* codes: the bundle (or its output file) is bad input; nothing written. */
enum { CACHE_REFUSED = 4 };

typedef struct cache_Bundle {
  int format;                      /* import: the bundle's format (1 or 2) */
  int entries, runs, trials;       /* in the bundle */
  int added, replaced, kept;       /* import: new keys here; faster than the entry here; slower (not taken) */
  int foreign;                     /* import: entries of other templates, in the log only */
  int same;                        /* import: rebuilt cubins whose checksum is the exporting host's */
  int retimed, dropped;            /* import: verified and timed here; failed verification here (gone) */
  int64_t first_run, last_run;     /* import: the ids its runs got here (0 when none) */
} cache_Bundle;

/* How an import rebuilds and checks each entry on this host. */
typedef struct cache_Rebuild {
  gen_State *gen;                  /* this host's templates, and their hash: */
  char templates[65];              /* entries of other templates join the log only */
  int nvrtc;                       /* this host's NVRTC (as cache_Key.nvrtc), recorded with each entry */
  const char *cubins;              /* kept cubins folder for cache_compile ("" or NULL: none) */
  int threads;                     /* compiling at once; 0: one per core */
  /* Compile k, rendered for p, from any of those threads; NULL: cache_compile through cubins. */
  int (*compile)(void *ud, const gen_Problem *p, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen);
  /* NULL: no retiming. Else this host's GPU (model, arch, SM count, driver): entries of that GPU
  ** are verified and timed by retime before the merge: 0 passed, with e's us, gbps, frac and
  ** copy_us measured; CACHE_MISS failed (left out); CACHE_ERROR the device failed (nothing
  ** imported). t gets the trial to log either way. Entries of other GPUs are not retimed. */
  int (*retime)(void *ud, cache_Entry *e, cache_Trial *t, char *err, size_t errlen);
  char gpu[256];
  int arch, sms, driver;
  void *ud;
} cache_Rebuild;

/* Write the choices of the cache at cache_path that match filter (as cache_entries), with
** their runs and trials, to a bundle at out (a temporary file renamed into place); with_host,
** the host's name too. No cache is CACHE_MISS, no entry matching is CACHE_MISS too, an
** unwritable out CACHE_REFUSED: nothing is written then. */
int cache_export(const char *cache_path, const cache_Key *filter, int with_host, const char *out, cache_Bundle *b,
                 char *err, size_t errlen);

/* Check the bundle at path whole, rebuild its entries as r says, then merge it into the cache
** at cache_path (made when missing) in one transaction. A missing, damaged or foreign bundle,
** or a config these templates do not render, is CACHE_REFUSED; a compile, the cache or the
** device failing is CACHE_ERROR; nothing of the bundle is written then. */
int cache_import(const char *cache_path, const char *path, const cache_Rebuild *r, cache_Bundle *b, char *err,
                 size_t errlen);

/* The file format alone, for tests and tools: read and check the header and checksum into
** *image (free with sqlite3_free) and its format into *format, or write an image under a
** header of format (atomically). */
int cache_bundle_read(const char *path, int *format, void **image, size_t *n, char *err, size_t errlen);
int cache_bundle_write(const char *path, int format, const void *image, size_t n, char *err, size_t errlen);

#endif
