/*
** migrate.c — the schema's version and bringing a cache of an earlier version up to date.
**
** Versions: 1 (the first release), 2 (entries gained the launch fields coop and workspace, and
** later ws_groups, under the same number), 3 (an entry's key no longer holds the driver and
** NVRTC versions: they are recorded with it, and an entry made under others is re-verified on
** first use), 4 (entries and runs gained origin: '' for what was tuned here, or a bundle's).
** The trials table has not changed. The migration rebuilds the entries table under the new
** key in the caller's transaction and adds the runs' origin column: where two entries differ only in
** driver or NVRTC, the one of the newest driver and NVRTC stays. Entries of older templates
** stay too (their template hash makes them misses); their runs stay in the log.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_sql.h"

int cache_read_version(sqlite3 *db, int *v)
{
  sqlite3_stmt *st;
  int rc;
  *v = 0;
  if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k = 'schema'", -1, &st, NULL) != SQLITE_OK)
    return strstr(sqlite3_errmsg(db), "no such table") ? SQLITE_OK : SQLITE_ERROR;
  if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *s = (const char *)sqlite3_column_text(st, 0);
    char *end = NULL;
    long n = s ? strtol(s, &end, 10) : 0;
    *v = s && *s && !*end && n > 0 && n < 1000000 ? (int)n : -1;
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc;
}

/* 1 when table has the column, 0 when not, -1 on an error. */
static int has_column(sqlite3 *db, const char *table, const char *column)
{
  sqlite3_stmt *st;
  int rc = -1;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", -1, &st, NULL) != SQLITE_OK)
    return -1;
  if (sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) == SQLITE_OK &&
      sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    rc = sqlite3_column_int(st, 0) > 0;
  sqlite3_finalize(st);
  return rc;
}

int cache_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
  snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
  sqlite3_free(msg);
  return 1;
}

int cache_migrate(sqlite3 *db, int from, char *err, size_t errlen)
{
  /* entries' columns missing before version 2 (launch fields) and 4 (origin), and their values then */
  static const char *const added[][2] = { { "coop", "0" }, { "workspace", "0" }, { "ws_groups", "0" }, { "origin", "''" } };
  const char *have[4];
  char sql[8192];
  int runs_origin = has_column(db, "runs", "origin");
  if (from < 1 || from >= CACHE_SCHEMA_VERSION)
    return snprintf(err, errlen, "no migration from schema version %d", from), 1;
  for (int i = 0; i < 4; i++) {
    int h = has_column(db, "entries", added[i][0]);
    if (h < 0 || runs_origin < 0) return snprintf(err, errlen, "reading the tables: %s", sqlite3_errmsg(db)), 1;
    have[i] = added[i][!h];
  }
  snprintf(sql, sizeof sql,
           "ALTER TABLE entries RENAME TO entries_old;"
           "%s%s"
           "INSERT OR IGNORE INTO entries(" ENTRY_COLS ", cubin)"
           " SELECT gpu, arch, sms, driver, nvrtc, templates, dtype, op, rows, cols, config, kernel, threads,"
           " rows_per_block, blocks_per_row, cluster, smem, %s, %s, %s, sha256, us, gbps, frac, copy_us, run, created,"
           " %s, cubin FROM entries_old ORDER BY driver DESC, nvrtc DESC, created DESC;"
           "DROP TABLE entries_old;"
           "UPDATE meta SET v = '%d' WHERE k = 'schema';",
           runs_origin ? "" : "ALTER TABLE runs ADD COLUMN origin TEXT NOT NULL DEFAULT '';", cache_schema_sql, have[0],
           have[1], have[2], have[3], CACHE_SCHEMA_VERSION);
  return cache_exec(db, sql, err, errlen);
}
