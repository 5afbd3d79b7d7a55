/*
** bundle.h — cache bundles: a self-contained file of cache entries (their cubins, checksums
** and keys) with the log rows (runs and trials) of the runs that chose them, to carry tuned
** kernels from one host to others with the same GPU model.
**
** A bundle is one header line, `softmax-tune bundle 1 bytes=N sha256=HEX`, then N bytes: an
** SQLite database image with the cache's schema (cache_sql.h) and a meta row bundle = 1. The
** SHA-256 covers the image, so a truncated file or any flipped byte is refused whole; an image
** of another schema, a cubin that fails its checksum or a key its run does not hold is refused
** whole too. An import merges in one transaction: on a key held by both, the faster entry
** stays; every run of the bundle joins the log under a new id (ids would collide).
*/
#ifndef BUNDLE_H
#define BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"

#define CACHE_BUNDLE_VERSION 1

/* Besides the CACHE_* codes: the bundle (or its output file) is bad input; nothing written. */
enum { CACHE_REFUSED = 4 };

typedef struct cache_Bundle {
  int entries, runs, trials;       /* in the bundle */
  int added, replaced, kept;       /* import: new keys here; faster than the entry here; slower (not taken) */
  int64_t first_run, last_run;     /* import: the ids its runs got here (0 when none) */
} cache_Bundle;

/* Write the entries of the cache at cache_path that match filter (as cache_entries), with
** their runs and trials, to a bundle at out (a temporary file renamed into place). No cache
** is CACHE_MISS, no entry matching is CACHE_MISS too, an entry failing its checksum
** CACHE_CORRUPT, an unwritable out CACHE_REFUSED: nothing is written then. */
int cache_export(const char *cache_path, const cache_Key *filter, const char *out, cache_Bundle *b, char *err,
                 size_t errlen);

/* Check the bundle at path whole, then merge it into the cache at cache_path (made when
** missing) in one transaction. A missing, damaged or foreign bundle is CACHE_REFUSED; the cache
** failing is CACHE_ERROR; nothing of the bundle is written then. */
int cache_import(const char *cache_path, const char *path, cache_Bundle *b, char *err, size_t errlen);

/* The file format alone, for tests and tools: read and check the header and checksum into
** *image (free with sqlite3_free), or write an image under a header (atomically). */
int cache_bundle_read(const char *path, void **image, size_t *n, char *err, size_t errlen);
int cache_bundle_write(const char *path, const void *image, size_t n, char *err, size_t errlen);

#endif
