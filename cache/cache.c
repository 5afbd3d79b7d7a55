/*
** cache.c — the SQLite side of the cache and the tuning log.
*/
#include "cache.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_sql.h"

#define STR_(x) #x
#define STR(x) STR_(x)

struct cache_Db {
  sqlite3 *db;
  char path[4096];
  char err[1024];
};

const char *const cache_schema_sql =
  "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
  "INSERT OR IGNORE INTO meta VALUES('schema', '" STR(CACHE_SCHEMA_VERSION) "');"
  "CREATE TABLE IF NOT EXISTS entries("
  "  gpu TEXT NOT NULL, arch INTEGER NOT NULL, sms INTEGER NOT NULL, driver INTEGER NOT NULL,"
  "  nvrtc INTEGER NOT NULL, templates TEXT NOT NULL, dtype TEXT NOT NULL, op TEXT NOT NULL,"
  "  rows INTEGER NOT NULL, cols INTEGER NOT NULL,"
  "  config TEXT NOT NULL, kernel TEXT NOT NULL, threads INTEGER NOT NULL, rows_per_block INTEGER NOT NULL,"
  "  blocks_per_row INTEGER NOT NULL, cluster INTEGER NOT NULL, smem INTEGER NOT NULL,"
  "  coop INTEGER NOT NULL, workspace INTEGER NOT NULL, ws_groups INTEGER NOT NULL,"
  "  cubin BLOB NOT NULL, sha256 TEXT NOT NULL, us REAL, gbps REAL, frac REAL, copy_us REAL,"
  "  run INTEGER, created TEXT NOT NULL, origin TEXT NOT NULL DEFAULT '',"
  "  PRIMARY KEY(" KEY_COLS "));"
  "CREATE TABLE IF NOT EXISTS runs("
  "  id INTEGER PRIMARY KEY, started TEXT NOT NULL, seconds REAL, status TEXT NOT NULL,"
  "  gpu TEXT NOT NULL, arch INTEGER, sms INTEGER, driver INTEGER, nvrtc INTEGER, templates TEXT,"
  "  dtype TEXT NOT NULL, op TEXT NOT NULL, rows INTEGER NOT NULL, cols INTEGER NOT NULL,"
  "  configs INTEGER, verified INTEGER, pruned INTEGER, failed INTEGER,"
  "  winner TEXT, winner_us REAL, copy_us REAL, frac REAL, origin TEXT NOT NULL DEFAULT '');"
  "CREATE TABLE IF NOT EXISTS trials("
  "  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL,"
  "  config TEXT NOT NULL, status TEXT NOT NULL, reason TEXT,"
  "  regs INTEGER, local_bytes INTEGER, smem INTEGER, blocks_sm INTEGER, occupancy REAL,"
  "  compile_ms REAL, us REAL, gbps REAL, frac REAL, max_err REAL, finalist INTEGER,"
  "  PRIMARY KEY(run, idx));";

/* The message, on one line whatever the database held (control bytes become '?'). */
static int fail(cache_Db *c, int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  for (unsigned char *p = (unsigned char *)c->err; *p; p++)
    if (*p < 0x20 || *p == 0x7f) *p = '?';
  return code;
}

static int sql_fail(cache_Db *c, const char *what)
{
  return fail(c, CACHE_ERROR, "cache '%s': %s: %s", c->path, what, sqlite3_errmsg(c->db));
}

int cache_make_parents(const char *path, char *err, size_t errlen)
{
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
      return snprintf(err, errlen, "cannot make cache folder '%s': %s", dir, strerror(errno)), 1;
    *p = '/';
  }
  return 0;
}

int cache_default_place(const char *leaf, char *out, size_t n)
{
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && *xdg == '/') return snprintf(out, n, "%s/softmax-tune/%s", xdg, leaf);
  if (home && *home) return snprintf(out, n, "%s/.cache/softmax-tune/%s", home, leaf);
  return 0;
}

int cache_path(const char *opt, int create, char *out, size_t n, char *err, size_t errlen)
{
  const char *env = getenv("SOFTMAX_TUNE_CACHE");
  int made = 0;
  if (opt && *opt) made = snprintf(out, n, "%s", opt);
  else if (env && *env) made = snprintf(out, n, "%s", env);
  else {
    if ((made = cache_default_place("cache.db", out, n)) == 0)
      return snprintf(err, errlen, "no place for the cache: set --cache PATH, SOFTMAX_TUNE_CACHE or HOME"), 1;
    if (made < (int)n && create && cache_make_parents(out, err, errlen)) return 1;
  }
  if (made <= 0 || made >= (int)n) return snprintf(err, errlen, "cache path too long"), 1;
  return 0;
}

/* WAL mode. Switching a rollback-mode file needs a moment with no writer, and SQLite answers
** a busy switch at once rather than through the busy timeout: retry for up to a minute. */
static int set_wal(cache_Db *c)
{
  struct timespec nap = { 0, 10 * 1000 * 1000 };
  for (int i = 0; i < 6000; i++) {
    int rc = sqlite3_exec(c->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
    if (rc == SQLITE_OK) return 0;
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
    nanosleep(&nap, NULL);
  }
  return sql_fail(c, "switching to WAL mode");
}

int cache_writable(const char *path, char *err, size_t errlen)
{
  char dir[4096];
  const char *slash = strrchr(path, '/');
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? (slash == path ? "/" : path) : ".");
  if (access(path, F_OK) == 0 && access(path, W_OK) != 0)
    return snprintf(err, errlen, "cannot write cache '%s': %s", path, strerror(errno)), 1;
  if (access(dir, F_OK) == 0 && access(dir, W_OK | X_OK) != 0)
    return snprintf(err, errlen, "cannot write cache '%s': its folder %s: %s", path, dir, strerror(errno)), 1;
  return 0;
}

static int exec(cache_Db *c, const char *sql)
{
  char *msg = NULL;
  if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
  fail(c, CACHE_ERROR, "cache '%s': %s", c->path, msg ? msg : sqlite3_errmsg(c->db));
  sqlite3_free(msg);
  return 1;
}

/* The schema version in the file (0: none yet), or an error: not a database, damaged, or a
** version this softmax-tune cannot read. An earlier version is no error: check_schema migrates. */
static int read_version(cache_Db *c, int *v)
{
  if (cache_read_version(c->db, v) != SQLITE_OK) {
    const char *msg = sqlite3_errmsg(c->db);
    if (strstr(msg, "malformed"))
      return fail(c, CACHE_ERROR, "cache '%s' is damaged: %s (move it away to start a new one)", c->path, msg);
    return fail(c, CACHE_ERROR, "cache '%s' is not a softmax-tune database: %s", c->path, msg);
  }
  if (*v < 0)
    return fail(c, CACHE_ERROR, "cache '%s' has a schema version that is not a number; this softmax-tune reads 1 to %d",
                c->path, CACHE_SCHEMA_VERSION);
  if (*v > CACHE_SCHEMA_VERSION)
    return fail(c, CACHE_ERROR, "cache '%s' has schema version %d; this softmax-tune reads versions 1 to %d", c->path, *v,
                CACHE_SCHEMA_VERSION);
  return 0;
}

/* Tables in the file: 0 for a new one. */
static int count_tables(cache_Db *c, int *n)
{
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(c->db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) != SQLITE_OK)
    return sql_fail(c, "reading it");
  *n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  sqlite3_finalize(st);
  return 0;
}

static int foreign(cache_Db *c)
{
  return fail(c, CACHE_ERROR, "cache '%s' is an SQLite database of something else, not softmax-tune's", c->path);
}

/* 0 when SQLite's quick_check finds the file sound, else an error: a migration writes new tables,
** and in a damaged file (a page that two trees claim) they can leave a schema that no later
** connection reads. */
static int sound(cache_Db *c)
{
  sqlite3_stmt *st;
  int rc;
  if (sqlite3_prepare_v2(c->db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK)
    return sql_fail(c, "checking the file before migrating it");
  if (sqlite3_step(st) != SQLITE_ROW) {
    rc = sql_fail(c, "checking the file before migrating it");
  } else {
    const char *r = (const char *)sqlite3_column_text(st, 0), *nl = r ? strchr(r, '\n') : NULL;
    if (nl && strncmp(r, "*** in database", 15) == 0) r = nl + 1;   /* the first finding, not the header */
    rc = r && strcmp(r, "ok") == 0 ? 0
           : fail(c, CACHE_ERROR, "cache '%s' is damaged: %s (move it away to start a new one)", c->path, r ? r : "?");
  }
  sqlite3_finalize(st);
  return rc;
}

/* Under the write lock: another process may have done it meanwhile; else make the schema in
** an empty file, or migrate an earlier one (a sound one). */
static int make_or_migrate(cache_Db *c)
{
  char msg[512];
  int v, n, rc;
  if ((rc = read_version(c, &v)) || v == CACHE_SCHEMA_VERSION) return rc;
  if (v > 0 && (rc = sound(c))) return rc;
  if (v > 0)
    return cache_migrate(c->db, v, msg, sizeof msg)
             ? fail(c, CACHE_ERROR, "cache '%s': migrating schema version %d to %d: %s", c->path, v, CACHE_SCHEMA_VERSION, msg)
             : 0;
  if ((rc = count_tables(c, &n))) return rc;
  return n != 0 ? foreign(c) : exec(c, cache_schema_sql) ? CACHE_ERROR : 0;
}

/* Our schema is there, or (create) is made in a new file, or an earlier one is migrated in
** one transaction; another program's file is refused. Another process may be making or
** migrating the schema at the same moment: the writer decides under BEGIN IMMEDIATE, a
** reader looks at the version again before calling the file foreign. */
static int check_schema(cache_Db *c, int create)
{
  int v, n, rc;
  if ((rc = read_version(c, &v)) || v == CACHE_SCHEMA_VERSION) return rc;
  if (!create && v == 0) {
    if ((rc = count_tables(c, &n))) return rc;
    if (n == 0) return fail(c, CACHE_MISS, "cache '%s' holds nothing yet", c->path);
    if ((rc = read_version(c, &v)) || v == CACHE_SCHEMA_VERSION) return rc;
    if (v == 0) return foreign(c);
  }
  if (v > 0 && sqlite3_db_readonly(c->db, "main") == 1)
    return fail(c, CACHE_ERROR, "cache '%s' has schema version %d and is read-only: cannot migrate it to version %d",
                c->path, v, CACHE_SCHEMA_VERSION);
  if (exec(c, "BEGIN IMMEDIATE")) return CACHE_ERROR;
  if ((rc = make_or_migrate(c))) {
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
  }
  return exec(c, "COMMIT") ? CACHE_ERROR : 0;
}

static int open_db(cache_Db **out, const char *path, int create, char *err, size_t errlen)
{
  struct stat sb;
  cache_Db *c = calloc(1, sizeof *c);
  int rc;
  *out = NULL;
  if (!c) return snprintf(err, errlen, "out of memory"), CACHE_ERROR;
  snprintf(c->path, sizeof c->path, "%s", path);
  int st = stat(path, &sb);
  if (st == 0 && S_ISDIR(sb.st_mode)) {
    rc = fail(c, CACHE_ERROR, "cache path '%s' is a directory; give a file, such as %s/cache.db", path, path);
  } else if (st != 0 && errno != ENOENT) {
    rc = fail(c, CACHE_ERROR, "cannot reach cache '%s': %s", path, strerror(errno));
  } else if (!create && st != 0) {
    rc = fail(c, CACHE_MISS, "no cache at '%s' yet (tune a shape first)", path);
  } else if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX,
                             NULL) != SQLITE_OK) {
    rc = fail(c, CACHE_ERROR, "cannot open cache '%s': %s", path, c->db ? sqlite3_errmsg(c->db) : "out of memory");
  } else if (sqlite3_busy_timeout(c->db, 60000) != SQLITE_OK ||
             sqlite3_exec(c->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL) != SQLITE_OK) {
    rc = sql_fail(c, "setting it up");
  } else {
    rc = check_schema(c, create);
    if (rc == 0 && !sqlite3_db_readonly(c->db, "main") && set_wal(c)) rc = CACHE_ERROR;
  }
  if (rc) {
    snprintf(err, errlen, "%s", c->err);
    cache_close(c);
    return rc;
  }
  *out = c;
  return 0;
}

int cache_open(cache_Db **out, const char *path, int create, char *err, size_t errlen)
{
  return open_db(out, path, create, err, errlen);
}

void cache_close(cache_Db *c)
{
  if (!c) return;
  sqlite3_close(c->db);
  free(c);
}

const char *cache_error(const cache_Db *c)
{
  return c->err;
}

void cache_filter_all(cache_Key *k)
{
  memset(k, 0, sizeof *k);
  k->dtype = k->op = -1;
}

/* ---- statements ---- */

/* The key's fields bound by bind_key; ?4 and ?5 (driver, NVRTC) are bound but not matched. */
#define KEY_MATCH "gpu = ?1 AND arch = ?2 AND sms = ?3 AND templates = ?6 AND dtype = ?7 AND op = ?8"

static int bind_key(sqlite3_stmt *st, const cache_Key *k, int full)
{
  char op[64];
  gen_op_key(k->op, k->mask, k->bias, op, sizeof op);
  int rc = sqlite3_bind_text(st, 1, k->gpu, -1, SQLITE_TRANSIENT);
  rc |= sqlite3_bind_int(st, 2, k->arch);
  rc |= sqlite3_bind_int(st, 3, k->sms);
  rc |= sqlite3_bind_int(st, 4, k->driver);
  rc |= sqlite3_bind_int(st, 5, k->nvrtc);
  rc |= sqlite3_bind_text(st, 6, k->templates, -1, SQLITE_TRANSIENT);
  rc |= sqlite3_bind_text(st, 7, gen_dtype_name(k->dtype), -1, SQLITE_STATIC);
  rc |= sqlite3_bind_text(st, 8, op, -1, SQLITE_TRANSIENT);
  if (full) {
    rc |= sqlite3_bind_int64(st, 9, k->rows);
    rc |= sqlite3_bind_int64(st, 10, k->cols);
  }
  return rc;
}

int cache_bind_filter(sqlite3_stmt *st, const cache_Key *f)
{
  char op[64];
  gen_op_key(f->op, f->mask, f->bias, op, sizeof op);
  int rc = f->gpu[0] ? sqlite3_bind_text(st, 1, f->gpu, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, 1);
  rc |= f->dtype >= 0 ? sqlite3_bind_text(st, 2, gen_dtype_name(f->dtype), -1, SQLITE_STATIC) : sqlite3_bind_null(st, 2);
  rc |= f->op >= 0 ? sqlite3_bind_text(st, 3, op, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, 3);
  rc |= f->rows > 0 ? sqlite3_bind_int64(st, 4, f->rows) : sqlite3_bind_null(st, 4);
  rc |= f->cols > 0 ? sqlite3_bind_int64(st, 5, f->cols) : sqlite3_bind_null(st, 5);
  return rc;
}

static void text_col(sqlite3_stmt *st, int i, char *out, size_t n)
{
  const unsigned char *t = sqlite3_column_text(st, i);
  snprintf(out, n, "%s", t ? (const char *)t : "");
}

/* Columns 0..9 of a row into a key. */
static void read_key(sqlite3_stmt *st, cache_Key *k)
{
  char buf[64];
  text_col(st, 0, k->gpu, sizeof k->gpu);
  k->arch = sqlite3_column_int(st, 1);
  k->sms = sqlite3_column_int(st, 2);
  k->driver = sqlite3_column_int(st, 3);
  k->nvrtc = sqlite3_column_int(st, 4);
  text_col(st, 5, k->templates, sizeof k->templates);
  text_col(st, 6, buf, sizeof buf);
  k->dtype = gen_parse_dtype(buf);
  text_col(st, 7, buf, sizeof buf);
  gen_parse_op_key(buf, &k->op, &k->mask, &k->bias);
  k->rows = sqlite3_column_int64(st, 8);
  k->cols = sqlite3_column_int64(st, 9);
}

void cache_entry_row(sqlite3_stmt *st, cache_Entry *e)
{
  memset(e, 0, sizeof *e);
  read_key(st, &e->key);
  text_col(st, 10, e->config, sizeof e->config);
  text_col(st, 11, e->kernel, sizeof e->kernel);
  e->launch.threads = sqlite3_column_int(st, 12);
  e->launch.rows_per_block = sqlite3_column_int(st, 13);
  e->launch.blocks_per_row = sqlite3_column_int(st, 14);
  e->launch.cluster = sqlite3_column_int(st, 15);
  e->launch.smem = sqlite3_column_int(st, 16);
  e->launch.coop = sqlite3_column_int(st, 17);
  e->launch.workspace = sqlite3_column_int(st, 18);
  e->launch.ws_groups = sqlite3_column_int(st, 19);
  e->launch.op = e->key.op;   /* not a column: the key has it */
  text_col(st, 20, e->sha256, sizeof e->sha256);
  e->us = sqlite3_column_double(st, 21);
  e->gbps = sqlite3_column_double(st, 22);
  e->frac = sqlite3_column_double(st, 23);
  e->copy_us = sqlite3_column_double(st, 24);
  e->run = sqlite3_column_int64(st, 25);
  text_col(st, 26, e->created, sizeof e->created);
  text_col(st, 27, e->origin, sizeof e->origin);
}

/* An entries row (ENTRY_COLS, then the cubin when with_cubin) into e. */
static int read_entry(cache_Db *c, sqlite3_stmt *st, cache_Entry *e, int with_cubin)
{
  cache_entry_row(st, e);
  if (!with_cubin) return 0;
  const void *blob = sqlite3_column_blob(st, 28);
  int n = sqlite3_column_bytes(st, 28);
  if (!blob || n <= 0) return fail(c, CACHE_CORRUPT, "cache entry for %s has no cubin", e->config);
  if (!(e->cubin = malloc((size_t)n))) return fail(c, CACHE_ERROR, "out of memory reading a cubin");
  memcpy(e->cubin, blob, (size_t)n);
  e->size = (size_t)n;
  char sum[65];
  cache_sha256(e->cubin, e->size, sum);
  /* the whole stored column, not a copy cut at 64 bytes or at a NUL */
  if (sqlite3_column_bytes(st, 20) == 64 && memcmp(sqlite3_column_text(st, 20), sum, 64) == 0) return 0;
  fail(c, CACHE_CORRUPT, "cache entry %s %lldx%lld on %s: cubin fails its checksum (computed %.12s)",
       gen_dtype_name(e->key.dtype), (long long)e->key.rows, (long long)e->key.cols, e->key.gpu, sum);
  cache_entry_free(e);
  memset(e, 0, sizeof *e);   /* nothing of a corrupt entry is handed out */
  return CACHE_CORRUPT;
}

static int get_where(cache_Db *c, const cache_Key *k, cache_Entry *e, const char *sql, int full)
{
  sqlite3_stmt *st;
  int rc;
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "looking up");
  if (bind_key(st, k, full) != SQLITE_OK) rc = sql_fail(c, "binding a key");
  else if ((rc = sqlite3_step(st)) == SQLITE_ROW) rc = read_entry(c, st, e, 1);
  else if (rc == SQLITE_DONE) rc = fail(c, CACHE_MISS, "no cache entry");
  else rc = sql_fail(c, "looking up");
  sqlite3_finalize(st);
  return rc;
}

int cache_get(cache_Db *c, const cache_Key *k, cache_Entry *e)
{
  return get_where(c, k, e, "SELECT " ENTRY_COLS ", cubin FROM entries WHERE " KEY_MATCH " AND rows = ?9 AND cols = ?10",
                   1);
}

int cache_similar(cache_Db *c, const cache_Key *k, int64_t lo, int64_t hi, cache_Entry *e)
{
  sqlite3_stmt *st;
  int rc;
  const char *sql = "SELECT " ENTRY_COLS ", cubin FROM entries WHERE " KEY_MATCH " AND cols BETWEEN ?11 AND ?12 "
                    "ORDER BY abs(cols - ?10), abs(rows - ?9) LIMIT 1";
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "looking up");
  if (bind_key(st, k, 1) != SQLITE_OK || sqlite3_bind_int64(st, 11, lo) != SQLITE_OK || sqlite3_bind_int64(st, 12, hi) != SQLITE_OK)
    rc = sql_fail(c, "binding a key");
  else if ((rc = sqlite3_step(st)) == SQLITE_ROW) rc = read_entry(c, st, e, 1);
  else if (rc == SQLITE_DONE) rc = fail(c, CACHE_MISS, "no similar entry");
  else rc = sql_fail(c, "looking up");
  sqlite3_finalize(st);
  return rc;
}

void cache_entry_free(cache_Entry *e)
{
  free(e->cubin);
  e->cubin = NULL;
}

static void now_utc(char *out, size_t n)
{
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, n, "%Y-%m-%d %H:%M:%SZ", &tm);
}

static int insert_run(cache_Db *c, cache_Run *r)
{
  sqlite3_stmt *st;
  int rc = 0;
  const char *sql = "INSERT INTO runs(" KEYED_COLS ", started, seconds,"
                    " status, configs, verified, pruned, failed, winner, winner_us, copy_us, frac, origin)"
                    " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22)";
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "logging a run");
  if (!r->started[0]) now_utc(r->started, sizeof r->started);
  rc |= bind_key(st, &r->key, 1);
  rc |= sqlite3_bind_text(st, 11, r->started, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_double(st, 12, r->seconds);
  rc |= sqlite3_bind_text(st, 13, r->status, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_int(st, 14, r->configs);
  rc |= sqlite3_bind_int(st, 15, r->verified);
  rc |= sqlite3_bind_int(st, 16, r->pruned);
  rc |= sqlite3_bind_int(st, 17, r->failed);
  rc |= r->winner[0] ? sqlite3_bind_text(st, 18, r->winner, -1, SQLITE_STATIC) : sqlite3_bind_null(st, 18);
  rc |= sqlite3_bind_double(st, 19, r->winner_us);
  rc |= sqlite3_bind_double(st, 20, r->copy_us);
  rc |= sqlite3_bind_double(st, 21, r->frac);
  rc |= sqlite3_bind_text(st, 22, r->origin, -1, SQLITE_STATIC);
  rc = rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE ? sql_fail(c, "logging a run") : 0;
  sqlite3_finalize(st);
  if (rc == 0) r->id = sqlite3_last_insert_rowid(c->db);
  return rc;
}

static int insert_trials(cache_Db *c, int64_t run, const cache_Trial *t, int n)
{
  sqlite3_stmt *st;
  int rc = 0;
  const char *sql = "INSERT INTO trials(run, idx, config, status, reason, regs, local_bytes, smem, blocks_sm, occupancy,"
                    " compile_ms, us, gbps, frac, max_err, finalist) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)";
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "logging trials");
  for (int i = 0; i < n && rc == 0; i++) {
    rc |= sqlite3_bind_int64(st, 1, run);
    rc |= sqlite3_bind_int(st, 2, i);
    rc |= sqlite3_bind_text(st, 3, t[i].config, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_text(st, 4, t[i].status, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_text(st, 5, t[i].reason, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_int(st, 6, t[i].regs);
    rc |= sqlite3_bind_int(st, 7, t[i].local_bytes);
    rc |= sqlite3_bind_int(st, 8, t[i].smem);
    rc |= sqlite3_bind_int(st, 9, t[i].blocks_sm);
    rc |= sqlite3_bind_double(st, 10, t[i].occupancy);
    rc |= sqlite3_bind_double(st, 11, t[i].compile_ms);
    rc |= sqlite3_bind_double(st, 12, t[i].us);
    rc |= sqlite3_bind_double(st, 13, t[i].gbps);
    rc |= sqlite3_bind_double(st, 14, t[i].frac);
    rc |= sqlite3_bind_double(st, 15, t[i].max_err);
    rc |= sqlite3_bind_int(st, 16, t[i].finalist);
    if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) rc = sql_fail(c, "logging a trial");
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return rc;
}

static int insert_entry(cache_Db *c, const cache_Entry *e, int64_t run)
{
  sqlite3_stmt *st;
  int rc = 0;
  char created[32], sum[65];
  const char *sql = "INSERT OR REPLACE INTO entries(" ENTRY_COLS ", cubin)"
                    " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29)";
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "storing the winner");
  now_utc(created, sizeof created);
  cache_sha256(e->cubin, e->size, sum);
  rc |= bind_key(st, &e->key, 1);
  rc |= sqlite3_bind_text(st, 11, e->config, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_text(st, 12, e->kernel, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_int(st, 13, e->launch.threads);
  rc |= sqlite3_bind_int(st, 14, e->launch.rows_per_block);
  rc |= sqlite3_bind_int(st, 15, e->launch.blocks_per_row);
  rc |= sqlite3_bind_int(st, 16, e->launch.cluster);
  rc |= sqlite3_bind_int(st, 17, e->launch.smem);
  rc |= sqlite3_bind_int(st, 18, e->launch.coop);
  rc |= sqlite3_bind_int(st, 19, e->launch.workspace);
  rc |= sqlite3_bind_int(st, 20, e->launch.ws_groups);
  rc |= sqlite3_bind_text(st, 21, sum, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_double(st, 22, e->us);
  rc |= sqlite3_bind_double(st, 23, e->gbps);
  rc |= sqlite3_bind_double(st, 24, e->frac);
  rc |= sqlite3_bind_double(st, 25, e->copy_us);
  rc |= sqlite3_bind_int64(st, 26, run);
  rc |= sqlite3_bind_text(st, 27, created, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_text(st, 28, e->origin, -1, SQLITE_STATIC);
  rc |= sqlite3_bind_blob(st, 29, e->cubin, (int)e->size, SQLITE_STATIC);
  rc = rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE ? sql_fail(c, "storing the winner") : 0;
  sqlite3_finalize(st);
  return rc;
}

/* Log a run and its trials, then (after, when set) change the entries, in one transaction. */
static int log_run(cache_Db *c, cache_Run *run, const cache_Trial *trials, int ntrials,
                   int (*after)(cache_Db *, int64_t, const void *), const void *arg)
{
  if (exec(c, "BEGIN IMMEDIATE")) return CACHE_ERROR;
  if (insert_run(c, run) || insert_trials(c, run->id, trials, ntrials) || (after && after(c, run->id, arg)) ||
      exec(c, "COMMIT")) {
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return CACHE_ERROR;
  }
  return 0;
}

static int store_winner(cache_Db *c, int64_t run, const void *e)
{
  return insert_entry(c, e, run);
}

int cache_store(cache_Db *c, cache_Run *run, const cache_Trial *trials, int ntrials, const cache_Entry *e)
{
  return log_run(c, run, trials, ntrials, e ? store_winner : NULL, e);
}

typedef struct Verdict {
  const cache_Key *k;
  const cache_Entry *e;
  int passed;
} Verdict;

/* The entry verified (unless another cubin replaced it meanwhile): now recorded under k's
** driver and NVRTC, or removed. */
static int apply_verdict(cache_Db *c, int64_t run, const void *arg)
{
  const Verdict *v = arg;
  sqlite3_stmt *st;
  const char *sql = v->passed ? "UPDATE entries SET driver = ?4, nvrtc = ?5 WHERE " KEY_MATCH " AND rows = ?9 AND cols = ?10 AND sha256 = ?11"
                              : "DELETE FROM entries WHERE " KEY_MATCH " AND rows = ?9 AND cols = ?10 AND sha256 = ?11";
  (void)run;
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "recording a verification");
  int rc = bind_key(st, v->k, 1) | sqlite3_bind_text(st, 11, v->e->sha256, -1, SQLITE_STATIC);
  rc = rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE ? sql_fail(c, "recording a verification") : 0;
  sqlite3_finalize(st);
  return rc;
}

int cache_reverified(cache_Db *c, const cache_Key *k, const cache_Entry *e, const cache_Trial *t, int passed, int64_t *run)
{
  cache_Run r;
  Verdict v = { k, e, passed };
  memset(&r, 0, sizeof r);
  r.key = *k;
  snprintf(r.status, sizeof r.status, "%s", passed ? "reverified" : "reverify failed");
  snprintf(r.winner, sizeof r.winner, "%s", passed ? e->config : "");
  r.configs = 1, r.verified = passed, r.failed = !passed;
  r.winner_us = passed ? e->us : 0, r.copy_us = e->copy_us, r.frac = passed ? e->frac : 0;
  if (log_run(c, &r, t, 1, apply_verdict, &v)) return CACHE_ERROR;
  *run = r.id;
  return 0;
}

/* Run `sql` with the filter bound, calling row() for each row into a growing array. */
static int collect(cache_Db *c, sqlite3_stmt *st, void **items, int *n, size_t size,
                   int (*row)(cache_Db *, sqlite3_stmt *, void *))
{
  int rc, cap = 0;
  char *a = NULL;
  *n = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (*n == cap) {
      char *b = realloc(a, (size_t)(cap = cap ? 2 * cap : 16) * size);
      if (!b) {
        free(a);
        return fail(c, CACHE_ERROR, "out of memory reading the cache");
      }
      a = b;
    }
    if ((rc = row(c, st, a + (size_t)*n * size))) {
      free(a);
      return rc;
    }
    (*n)++;
  }
  if (rc != SQLITE_DONE) {
    free(a);
    return sql_fail(c, "reading");
  }
  *items = a;
  return 0;
}

static int run_row(cache_Db *c, sqlite3_stmt *st, void *item)
{
  cache_Run *r = item;
  memset(r, 0, sizeof *r);
  read_key(st, &r->key);
  r->id = sqlite3_column_int64(st, 10);
  text_col(st, 11, r->started, sizeof r->started);
  r->seconds = sqlite3_column_double(st, 12);
  text_col(st, 13, r->status, sizeof r->status);
  r->configs = sqlite3_column_int(st, 14);
  r->verified = sqlite3_column_int(st, 15);
  r->pruned = sqlite3_column_int(st, 16);
  r->failed = sqlite3_column_int(st, 17);
  text_col(st, 18, r->winner, sizeof r->winner);
  r->winner_us = sqlite3_column_double(st, 19);
  r->copy_us = sqlite3_column_double(st, 20);
  r->frac = sqlite3_column_double(st, 21);
  text_col(st, 22, r->origin, sizeof r->origin);
  return 0;
}

int cache_runs(cache_Db *c, const cache_Key *f, int64_t id, int limit, cache_Run **runs, int *n)
{
  sqlite3_stmt *st;
  const char *sql = "SELECT " KEYED_COLS ", id, started, seconds, status, configs, verified, pruned, failed, winner,"
                    " winner_us, copy_us, frac, origin FROM runs WHERE " FILTER " AND (?6 IS NULL OR id = ?6)"
                    " ORDER BY id DESC LIMIT ?7";
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "reading the log");
  int rc = cache_bind_filter(st, f);
  rc |= id > 0 ? sqlite3_bind_int64(st, 6, id) : sqlite3_bind_null(st, 6);
  rc |= sqlite3_bind_int(st, 7, limit);
  rc = rc != SQLITE_OK ? sql_fail(c, "reading the log") : collect(c, st, (void **)runs, n, sizeof **runs, run_row);
  sqlite3_finalize(st);
  return rc;
}

static int trial_row(cache_Db *c, sqlite3_stmt *st, void *item)
{
  cache_Trial *t = item;
  memset(t, 0, sizeof *t);
  text_col(st, 0, t->config, sizeof t->config);
  text_col(st, 1, t->status, sizeof t->status);
  text_col(st, 2, t->reason, sizeof t->reason);
  t->regs = sqlite3_column_int(st, 3);
  t->local_bytes = sqlite3_column_int(st, 4);
  t->smem = sqlite3_column_int(st, 5);
  t->blocks_sm = sqlite3_column_int(st, 6);
  t->occupancy = sqlite3_column_double(st, 7);
  t->compile_ms = sqlite3_column_double(st, 8);
  t->us = sqlite3_column_double(st, 9);
  t->gbps = sqlite3_column_double(st, 10);
  t->frac = sqlite3_column_double(st, 11);
  t->max_err = sqlite3_column_double(st, 12);
  t->finalist = sqlite3_column_int(st, 13);
  return 0;
}

int cache_trials(cache_Db *c, int64_t run, cache_Trial **trials, int *n)
{
  sqlite3_stmt *st;
  const char *sql = "SELECT config, status, reason, regs, local_bytes, smem, blocks_sm, occupancy, compile_ms, us,"
                    " gbps, frac, max_err, finalist FROM trials WHERE run = ?1 ORDER BY idx";
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "reading trials");
  int rc = sqlite3_bind_int64(st, 1, run) != SQLITE_OK ? sql_fail(c, "reading trials")
                                                        : collect(c, st, (void **)trials, n, sizeof **trials, trial_row);
  sqlite3_finalize(st);
  return rc;
}

static int entry_row(cache_Db *c, sqlite3_stmt *st, void *item)
{
  return read_entry(c, st, item, 0);
}

int cache_entries(cache_Db *c, const cache_Key *f, cache_Entry **e, int *n)
{
  sqlite3_stmt *st;
  const char *sql = "SELECT " ENTRY_COLS " FROM entries WHERE " FILTER " ORDER BY created DESC";
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "listing");
  int rc = cache_bind_filter(st, f) != SQLITE_OK ? sql_fail(c, "listing") : collect(c, st, (void **)e, n, sizeof **e, entry_row);
  sqlite3_finalize(st);
  return rc;
}

int cache_clear(cache_Db *c, const cache_Key *f, int *n)
{
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(c->db, "DELETE FROM entries WHERE " FILTER, -1, &st, NULL) != SQLITE_OK) return sql_fail(c, "clearing");
  int rc = cache_bind_filter(st, f) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE ? sql_fail(c, "clearing") : 0;
  sqlite3_finalize(st);
  *n = rc ? 0 : sqlite3_changes(c->db);
  return rc;
}
