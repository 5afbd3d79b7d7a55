/*
** test_migrate.c — caches written by earlier versions of softmax-tune open (cache/migrate.c):
** files made with the CREATE statements of schema 1, of schema 2 before and after ws_groups, of 3
** (before origin), filled with plain SQL, are migrated in one transaction to the current schema; their runs,
** trials and entries read back; two entries that differed only in driver keep the newest; a
** newer or unreadable version, and a read-only old file, are refused with one line and left
** as they were; processes opening an old cache at once all succeed and it is migrated once.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cache.h"
#include "check.h"

static char root[] = "/tmp/st_migrateXXXXXX";

/* The tables of the earlier schemas (from `git log -p cache/cache.c`); %s is where the launch
** fields of each version go. */
static const char *const OLD_SCHEMA =
  "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
  "INSERT OR IGNORE INTO meta VALUES('schema', '%s');"
  "CREATE TABLE IF NOT EXISTS entries("
  "  gpu TEXT NOT NULL, arch INTEGER NOT NULL, sms INTEGER NOT NULL, driver INTEGER NOT NULL,"
  "  nvrtc INTEGER NOT NULL, templates TEXT NOT NULL, dtype TEXT NOT NULL, op TEXT NOT NULL,"
  "  rows INTEGER NOT NULL, cols INTEGER NOT NULL,"
  "  config TEXT NOT NULL, kernel TEXT NOT NULL, threads INTEGER NOT NULL, rows_per_block INTEGER NOT NULL,"
  "  blocks_per_row INTEGER NOT NULL, cluster INTEGER NOT NULL, smem INTEGER NOT NULL,%s"
  "  cubin BLOB NOT NULL, sha256 TEXT NOT NULL, us REAL, gbps REAL, frac REAL, copy_us REAL,"
  "  run INTEGER, created TEXT NOT NULL,"
  "  PRIMARY KEY(gpu, arch, sms, driver, nvrtc, templates, dtype, op, rows, cols));"
  "CREATE TABLE IF NOT EXISTS runs("
  "  id INTEGER PRIMARY KEY, started TEXT NOT NULL, seconds REAL, status TEXT NOT NULL,"
  "  gpu TEXT NOT NULL, arch INTEGER, sms INTEGER, driver INTEGER, nvrtc INTEGER, templates TEXT,"
  "  dtype TEXT NOT NULL, op TEXT NOT NULL, rows INTEGER NOT NULL, cols INTEGER NOT NULL,"
  "  configs INTEGER, verified INTEGER, pruned INTEGER, failed INTEGER,"
  "  winner TEXT, winner_us REAL, copy_us REAL, frac REAL);"
  "CREATE TABLE IF NOT EXISTS trials("
  "  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL,"
  "  config TEXT NOT NULL, status TEXT NOT NULL, reason TEXT,"
  "  regs INTEGER, local_bytes INTEGER, smem INTEGER, blocks_sm INTEGER, occupancy REAL,"
  "  compile_ms REAL, us REAL, gbps REAL, frac REAL, max_err REAL, finalist INTEGER,"
  "  PRIMARY KEY(run, idx));";

static const struct { const char *name, *version, *launch; } OLD[] = {
  { "v1", "1", "" },
  { "v2", "2", " coop INTEGER NOT NULL, workspace INTEGER NOT NULL," },
  { "v2ws", "2", " coop INTEGER NOT NULL, workspace INTEGER NOT NULL, ws_groups INTEGER NOT NULL," },
  { "v3", "3", " coop INTEGER NOT NULL, workspace INTEGER NOT NULL, ws_groups INTEGER NOT NULL," },
};

#define GPU "NVIDIA H100 80GB HBM3"
#define CUBIN "0123456789abcdef"

static char *path_in(const char *name, char *out)
{
  snprintf(out, 4096, "%s/%s.db", root, name);
  return out;
}

static int run_sql(const char *path, const char *sql)
{
  sqlite3 *s = NULL;
  char *msg = NULL;
  int rc = sqlite3_open(path, &s) != SQLITE_OK || sqlite3_exec(s, sql, NULL, NULL, &msg) != SQLITE_OK;
  CHECK(!rc, "%s: %s", path, msg ? msg : sqlite3_errmsg(s));
  sqlite3_free(msg);
  sqlite3_close(s);
  return rc;
}

/* An old cache: two runs with trials, and two entries of one shape that differ only in driver
** (12020 from run 1, 12040 from run 2), with the launch columns of version i. */
static void make_old(int i, const char *path, const char *templates)
{
  char sql[8192], sum[65], launch[64] = "";
  int n = snprintf(sql, sizeof sql, OLD_SCHEMA, OLD[i].version, OLD[i].launch);
  cache_sha256(CUBIN, 16, sum);
  if (i > 0) snprintf(launch, sizeof launch, ", coop, workspace%s", i > 1 ? ", ws_groups" : "");
  for (int r = 1; r <= 2; r++) {
    n += snprintf(sql + n, sizeof sql - (size_t)n,
                  "INSERT INTO runs VALUES(%d, '2025-0%d-01 10:00:00Z', 5.5, 'ok', '" GPU "', 90, 132, 120%d0, 12060,"
                  " '%s', 'f32', 'softmax', 4096, 16384, 2, 1, 1, 0, 'threads=256', 71.2, 68.9, 0.97);"
                  "INSERT INTO trials VALUES(%d, 0, 'threads=256', 'ok', '', 40, 0, 64, 8, 1.0, 300, 71.2, 3770, 0.97,"
                  " 1e-7, 1);"
                  "INSERT INTO trials VALUES(%d, 1, 'threads=32', 'pruned', 'spills', 255, 96, 0, 1, 0.03, 200, 0, 0,"
                  " 0, 0, 0);"
                  "INSERT INTO entries(gpu, arch, sms, driver, nvrtc, templates, dtype, op, rows, cols, config, kernel,"
                  " threads, rows_per_block, blocks_per_row, cluster, smem%s, cubin, sha256, us, gbps, frac, copy_us, run,"
                  " created) VALUES('" GPU "', 90, 132, 120%d0, 12060, '%s', 'f32', 'softmax', 4096, 16384,"
                  " 'threads=256', 'softmax_row', 256, 1, 1, 0, 0%s, CAST('" CUBIN "' AS BLOB), '%s', %d.5, 3770, 0.97,"
                  " 68.9, %d, '2025-0%d-01 10:00:05Z');",
                  r, r, 2 * r, templates, r, r, launch, 2 * r, templates, i > 0 ? (i > 1 ? ", 0, 0, 0" : ", 0, 0") : "",
                  sum, 70 + r, r, r);
  }
  run_sql(path, sql);
}

static long long query(const char *path, const char *sql)
{
  sqlite3 *s = NULL;
  sqlite3_stmt *st = NULL;
  long long v = -1;
  if (sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(s, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(s);
  return v;
}

/* Version i migrates on open: both runs and their trials read, one entry with the newer driver. */
static void test_old(int i)
{
  char path[4096], err[1024] = "", tpl[65];
  cache_Db *db = NULL;
  cache_Key k, all;
  cache_Entry e, *es = NULL;
  cache_Run *runs = NULL;
  cache_Trial *t = NULL;
  int n = -1, nt = -1;
  cache_sha256("templates", 9, tpl);
  make_old(i, path_in(OLD[i].name, path), tpl);
  CHECK(cache_open(&db, path, 0, err, sizeof err) == 0, "%s: open: %s", OLD[i].name, err);
  if (!db) return;
  CHECK(query(path, "SELECT v FROM meta WHERE k = 'schema'") == 4, "%s: not at version 4", OLD[i].name);
  cache_filter_all(&all);
  CHECK(cache_runs(db, &all, 0, 10, &runs, &n) == 0 && n == 2 && runs[0].id == 2 && !runs[0].origin[0], "%s: %d runs",
        OLD[i].name, n);
  CHECK(cache_trials(db, 1, &t, &nt) == 0 && nt == 2 && strcmp(t[1].reason, "spills") == 0, "%s: %d trials", OLD[i].name, nt);
  free(runs);
  free(t);
  CHECK(cache_entries(db, &all, &es, &n) == 0 && n == 1, "%s: %d entries (%s)", OLD[i].name, n, cache_error(db));
  free(es);
  memset(&k, 0, sizeof k);
  snprintf(k.gpu, sizeof k.gpu, GPU);
  memcpy(k.templates, tpl, sizeof tpl);
  k.arch = 90, k.sms = 132, k.driver = 13000, k.nvrtc = 13000, k.dtype = GEN_F32, k.op = GEN_SOFTMAX, k.rows = 4096,
  k.cols = 16384;
  int rc = cache_get(db, &k, &e);
  CHECK(rc == CACHE_OK && e.key.driver == 12040 && e.run == 2 && e.us == 72.5 && e.launch.coop == 0,
        "%s: rc %d, driver %d, run %lld (%s)", OLD[i].name, rc, e.key.driver, (long long)e.run, cache_error(db));
  if (rc == CACHE_OK) cache_entry_free(&e);
  cache_close(db);
  CHECK(cache_open(&db, path, 0, err, sizeof err) == 0, "%s: opened again: %s", OLD[i].name, err);
  cache_close(db);
}

/* path is refused with a message holding needle, and its bytes stay as they were. */
static void expect_refused(const char *path, const char *needle)
{
  char err[1024] = "", sum0[65], sum1[65];
  cache_Db *db = NULL;
  FILE *f = fopen(path, "rb");
  static char a[1 << 16], b[1 << 16];
  size_t na = f ? fread(a, 1, sizeof a, f) : 0;
  if (f) fclose(f);
  cache_sha256(a, na, sum0);
  CHECK(cache_open(&db, path, 1, err, sizeof err) == CACHE_ERROR && !db, "%s opened", path);
  CHECK(strstr(err, needle) && !strchr(err, '\n'), "message '%s' lacks '%s'", err, needle);
  cache_close(db);
  f = fopen(path, "rb");
  size_t nb = f ? fread(b, 1, sizeof b, f) : 0;
  if (f) fclose(f);
  cache_sha256(b, nb, sum1);
  CHECK(na == nb && strcmp(sum0, sum1) == 0, "%s changed", path);
}

static void test_refused(void)
{
  char path[4096], sql[8192];
  snprintf(sql, sizeof sql, OLD_SCHEMA, "5", " coop INTEGER, workspace INTEGER, ws_groups INTEGER,");
  run_sql(path_in("v5", path), sql);
  expect_refused(path, "schema version 5");
  snprintf(sql, sizeof sql, OLD_SCHEMA, "two", "");
  run_sql(path_in("vtwo", path), sql);
  expect_refused(path, "not a number");
  make_old(1, path_in("readonly", path), "t");
  CHECK(chmod(path, 0444) == 0, "chmod");
  if (access(path, W_OK) != 0) expect_refused(path, "read-only");   /* root writes anyway */
}

/* Eight processes open one old cache at once: every open succeeds, the file is migrated once
** (two runs, one entry, version 4). */
static void test_concurrent(void)
{
  char path[4096], tpl[65];
  pid_t pids[8];
  int ok = 0;
  cache_sha256("templates", 9, tpl);
  make_old(2, path_in("racing", path), tpl);
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < 8; i++)
    if ((pids[i] = fork()) == 0) {
      char err[1024];
      cache_Db *db = NULL;
      int rc = cache_open(&db, path, i % 2, err, sizeof err);
      if (rc) fprintf(stderr, "racing open %d: %s\n", i, err);
      cache_close(db);
      _exit(rc != 0);
    }
  for (int i = 0; i < 8; i++) {
    int status = 1;
    if (pids[i] > 0) waitpid(pids[i], &status, 0);
    ok += pids[i] > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  CHECK(ok == 8, "%d of 8 racing opens succeeded", ok);
  CHECK(query(path, "SELECT v FROM meta WHERE k = 'schema'") == 4 && query(path, "SELECT count(*) FROM runs") == 2 &&
        query(path, "SELECT count(*) FROM entries") == 1, "after the race: version, runs or entries wrong");
}

int main(void)
{
  char cmd[64];
  if (!mkdtemp(root)) return perror("mkdtemp"), 1;
  for (int i = 0; i < 4; i++) test_old(i);
  test_refused();
  test_concurrent();
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  CHECK(system(cmd) == 0, "removing %s", root);
  return check_done("test_migrate");
}
