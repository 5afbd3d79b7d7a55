/*
** cache_sql.h — inside cache/ only: the schema, its version, the column lists and the filter
** that cache.c, migrate.c and bundle.c share. Callers outside cache/ use cache.h.
*/
#ifndef CACHE_SQL_H
#define CACHE_SQL_H

#include <sqlite3.h>

#include "cache.h"

/* 3: driver and NVRTC are recorded with an entry, no longer part of its key; 4: entries and
** runs say where they came from (origin), (migrate.c). */
#define CACHE_SCHEMA_VERSION 4

/* Every table, made when missing (CREATE TABLE IF NOT EXISTS), and the version row. */
extern const char *const cache_schema_sql;

/* The key of an entry: what changes the kernel. */
#define KEY_COLS "gpu, arch, sms, templates, dtype, op, rows, cols"
/* The key, then the driver and NVRTC an entry was made or last verified under. */
#define KEYED_COLS "gpu, arch, sms, driver, nvrtc, templates, dtype, op, rows, cols"
#define ENTRY_COLS KEYED_COLS ", config, kernel, threads, rows_per_block, blocks_per_row, cluster, smem, " \
                   "coop, workspace, ws_groups, sha256, us, gbps, frac, copy_us, run, created, origin"

/* A filter on ?1..?5: each field matches when the bound value is NULL. */
#define FILTER "(?1 IS NULL OR gpu = ?1) AND (?2 IS NULL OR dtype = ?2) AND (?3 IS NULL OR op = ?3) " \
               "AND (?4 IS NULL OR rows = ?4) AND (?5 IS NULL OR cols = ?5)"
int cache_bind_filter(sqlite3_stmt *st, const cache_Key *f);
/* A row of ENTRY_COLS (from column 0) into e, without its cubin. */
void cache_entry_row(sqlite3_stmt *st, cache_Entry *e);

/* The schema version in the meta table: *v 0 when there is none, -1 when it is not a number. */
int cache_read_version(sqlite3 *db, int *v);
/* Bring a cache of an earlier schema (version from) to CACHE_SCHEMA_VERSION; the caller holds
** a write transaction. 0, or 1 with err set. */
int cache_migrate(sqlite3 *db, int from, char *err, size_t errlen);

/* sqlite3_exec with its message in err; 0 or 1. */
int cache_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);

/* For bundles: open the cache at path (migrating it, or making it when create) and close it;
** an in-memory database; attach the file at path as schema `as`. 0 or a CACHE_* code with
** err set. */
int cache_ready(const char *path, int create, char *err, size_t errlen);
int cache_scratch(sqlite3 **db, char *err, size_t errlen);
int cache_attach(sqlite3 *db, const char *path, const char *as, char *err, size_t errlen);

#endif
