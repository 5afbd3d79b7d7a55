/*
** merge.c — importing a bundle (bundle.h): every check on the bundle before anything is
** written, then one transaction that adds its runs and trials under new run ids and, for each
** of its entries, keeps whichever of it and the cache's entry of that key is faster.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bundle.h"
#include "cache_sql.h"

/* An entry of the bundle (b) and one of the cache (d) under the same key. */
#define SAME_KEY "d.gpu = b.gpu AND d.arch = b.arch AND d.sms = b.sms AND d.templates = b.templates " \
                 "AND d.dtype = b.dtype AND d.op = b.op AND d.rows = b.rows AND d.cols = b.cols"

/* What makes a bundle's entry wrong, as a condition on it (alias b), and how to say it. */
static const struct { const char *bad, *what; } ENTRY_CHECKS[] = {
  { "b.dtype NOT IN ('f32', 'f16', 'bf16')", "an unknown dtype" },
  { "b.op NOT IN ('softmax', 'log_softmax')", "an unknown op" },
  { "typeof(b.rows) != 'integer' OR typeof(b.cols) != 'integer' OR b.rows < 1 OR b.cols < 1", "a bad shape" },
  { "typeof(b.arch) != 'integer' OR typeof(b.sms) != 'integer' OR b.arch < 1 OR b.sms < 1 OR b.gpu = ''",
    "a bad GPU, arch or SM count" },
  { "length(b.templates) != 64 OR b.templates GLOB '*[^0-9a-f]*'", "a bad template hash" },
  { "length(b.cubin) < 1 OR b.sha256 IS NOT st_sha256(b.cubin)", "a cubin that fails its checksum" },
  { "NOT EXISTS (SELECT 1 FROM main.runs d WHERE d.id = b.run AND d.winner = b.config AND " SAME_KEY ")",
    "a key or config that its run in the bundle does not have" },
};

static const char *const TABLES[] = { "meta", "entries", "runs", "trials" };

static int refuse(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
  char why[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  snprintf(err, errlen, "bundle '%s' refused, nothing imported: %s", path, why);
  for (char *p = err; *p; p++)   /* one line, whatever the bundle held */
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
  return CACHE_REFUSED;
}

/* The first column of the first row of sql as text into out ("" for none or NULL). */
static int text_of(sqlite3 *db, const char *sql, const char *arg, char *out, size_t n)
{
  sqlite3_stmt *st;
  out[0] = '\0';
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 1;
  if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW && sqlite3_column_text(st, 0)) snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return rc != SQLITE_ROW && rc != SQLITE_DONE;
}

/* A table's columns, "name type,..." in order. */
static int columns(sqlite3 *db, const char *table, char *out, size_t n)
{
  return text_of(db, "SELECT group_concat(name || ' ' || type, ',') FROM (SELECT name, type FROM pragma_table_info(?1)"
                     " ORDER BY cid)", table, out, n);
}

/* Every table has the columns of softmax-tune's schema (made afresh in another scratch db). */
static int check_tables(sqlite3 *db, const char *path, char *err, size_t errlen)
{
  char want[2048], have[2048];
  sqlite3 *ref = NULL;
  int rc = cache_scratch(&ref, err, errlen);
  if (!rc && cache_exec(ref, cache_schema_sql, err, errlen)) rc = CACHE_ERROR;
  for (size_t i = 0; !rc && i < sizeof TABLES / sizeof TABLES[0]; i++) {
    if (columns(ref, TABLES[i], want, sizeof want) || columns(db, TABLES[i], have, sizeof have))
      rc = refuse(err, errlen, path, "reading its %s table: %s", TABLES[i], sqlite3_errmsg(db));
    else if (strcmp(want, have) != 0)
      rc = refuse(err, errlen, path, "a foreign schema: its %s table has columns (%.300s)", TABLES[i], have[0] ? have : "none");
  }
  sqlite3_close(ref);
  return rc;
}

/* The first entry failing one of ENTRY_CHECKS, named. */
static int check_entries(sqlite3 *db, const char *path, char *err, size_t errlen)
{
  char sql[1024], bad[512];
  for (size_t i = 0; i < sizeof ENTRY_CHECKS / sizeof ENTRY_CHECKS[0]; i++) {
    snprintf(sql, sizeof sql, "SELECT quote(b.dtype) || ' ' || quote(b.op) || ' ' || quote(b.rows) || 'x' || quote(b.cols)"
             " || ' on ' || quote(b.gpu) || ', run ' || quote(b.run) FROM main.entries b WHERE %s LIMIT 1", ENTRY_CHECKS[i].bad);
    if (text_of(db, sql, NULL, bad, sizeof bad)) return refuse(err, errlen, path, "reading its entries: %s", sqlite3_errmsg(db));
    if (bad[0]) return refuse(err, errlen, path, "entry %s has %s", bad, ENTRY_CHECKS[i].what);
  }
  if (text_of(db, "SELECT quote(run) FROM main.trials WHERE run NOT IN (SELECT id FROM main.runs) LIMIT 1", NULL, bad, sizeof bad))
    return refuse(err, errlen, path, "reading its trials: %s", sqlite3_errmsg(db));
  return bad[0] ? refuse(err, errlen, path, "trials of a run it does not hold (run %s)", bad) : 0;
}

/* The whole bundle, before anything is written: a sound database of our schema, a bundle,
** every entry's key and cubin right. */
static int check_bundle(sqlite3 *db, const char *path, char *err, size_t errlen)
{
  char ok[256], kind[32];
  int v = 0, rc;
  if (text_of(db, "PRAGMA integrity_check", NULL, ok, sizeof ok) || strcmp(ok, "ok") != 0)
    return refuse(err, errlen, path, "its database is damaged: %s", ok[0] ? ok : sqlite3_errmsg(db));
  if (cache_read_version(db, &v) != SQLITE_OK || v != CACHE_SCHEMA_VERSION)
    return refuse(err, errlen, path, "a foreign schema: version %d, this softmax-tune writes %d", v, CACHE_SCHEMA_VERSION);
  if (text_of(db, "SELECT v FROM meta WHERE k = 'bundle'", NULL, kind, sizeof kind) || strcmp(kind, "1") != 0)
    return refuse(err, errlen, path, "its database is not a bundle (meta bundle = '%s')", kind);
  if ((rc = check_tables(db, path, err, errlen))) return rc;
  return check_entries(db, path, err, errlen);
}

/* The bundle's image as the main database of a scratch connection. */
static int load_image(sqlite3 **db, const char *path, char *err, size_t errlen)
{
  void *image;
  size_t n;
  int rc = cache_bundle_read(path, &image, &n, err, errlen);
  if (rc) return rc;
  if ((rc = cache_scratch(db, err, errlen))) {
    sqlite3_free(image);
    return rc;
  }
  /* frees the image on failure too */
  if (sqlite3_deserialize(*db, "main", image, (sqlite3_int64)n, (sqlite3_int64)n,
                          SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) != SQLITE_OK)
    return refuse(err, errlen, path, "its database cannot be read: %s", sqlite3_errmsg(*db));
  return 0;
}

/* Integers from one row of sql into v[0..n). */
static int ints_of(sqlite3 *db, const char *sql, int64_t *v, int n)
{
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 1;
  int rc = sqlite3_step(st) != SQLITE_ROW;
  for (int i = 0; !rc && i < n; i++) v[i] = sqlite3_column_int64(st, i);
  sqlite3_finalize(st);
  return rc;
}

/* Run ids of the bundle moved past the cache's last: id -> off + id, through negatives so
** that no moved id meets one not yet moved. */
static int renumber(sqlite3 *db, int64_t off, char *err, size_t errlen)
{
  char *sql = sqlite3_mprintf("UPDATE main.runs SET id = -id; UPDATE main.runs SET id = %lld - id;"
                              "UPDATE main.trials SET run = -run; UPDATE main.trials SET run = %lld - run;"
                              "UPDATE main.entries SET run = %lld + run;", (long long)off, (long long)off, (long long)off);
  int rc = !sql || cache_exec(db, sql, err, errlen);
  sqlite3_free(sql);
  return rc;
}

/* Inside the write transaction: runs and trials appended, the faster entry of each key kept. */
static int merge_rows(sqlite3 *db, cache_Bundle *b, char *err, size_t errlen)
{
  int64_t last = 0, span[2] = { 0, 0 }, vs[2] = { 0, 0 };
  if (ints_of(db, "SELECT coalesce(max(id), 0) FROM dst.runs", &last, 1) || renumber(db, last, err, errlen) ||
      ints_of(db, "SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM main.runs", span, 2) ||
      ints_of(db, "SELECT coalesce(sum(d.us <= b.us), 0), coalesce(sum(d.us > b.us), 0) FROM main.entries b"
                  " JOIN dst.entries d ON " SAME_KEY, vs, 2) ||
      cache_exec(db, "INSERT INTO dst.runs SELECT * FROM main.runs; INSERT INTO dst.trials SELECT * FROM main.trials;"
                     "INSERT OR REPLACE INTO dst.entries SELECT * FROM main.entries b WHERE NOT EXISTS"
                     " (SELECT 1 FROM dst.entries d WHERE " SAME_KEY " AND d.us <= b.us);", err, errlen))
    return err[0] ? 1 : (snprintf(err, errlen, "%s", sqlite3_errmsg(db)), 1);
  b->first_run = span[0], b->last_run = span[1];
  b->kept = (int)vs[0], b->replaced = (int)vs[1];
  b->added = b->entries - b->kept - b->replaced;
  return 0;
}

static int merge(sqlite3 *db, const char *cache_path, cache_Bundle *b, char *err, size_t errlen)
{
  char why[768] = "";
  int rc;
  if ((rc = cache_ready(cache_path, 1, err, errlen)) || (rc = cache_attach(db, cache_path, "dst", err, errlen))) return rc;
  if (cache_exec(db, "BEGIN IMMEDIATE", why, sizeof why) || merge_rows(db, b, why, sizeof why) ||
      cache_exec(db, "COMMIT", why, sizeof why)) {
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    snprintf(err, errlen, "cache '%s': importing: %s (nothing imported)", cache_path, why);
    return CACHE_ERROR;
  }
  return 0;
}

int cache_import(const char *cache_path, const char *path, cache_Bundle *b, char *err, size_t errlen)
{
  sqlite3 *db = NULL;
  int64_t n[3] = { 0, 0, 0 };
  memset(b, 0, sizeof *b);
  int rc = load_image(&db, path, err, errlen);
  if (!rc) rc = check_bundle(db, path, err, errlen);
  if (!rc && ints_of(db, "SELECT (SELECT count(*) FROM entries), (SELECT count(*) FROM runs), (SELECT count(*) FROM trials)",
                     n, 3))
    rc = refuse(err, errlen, path, "counting its rows: %s", sqlite3_errmsg(db));
  b->entries = (int)n[0], b->runs = (int)n[1], b->trials = (int)n[2];
  if (!rc) rc = merge(db, cache_path, b, err, errlen);
  sqlite3_close(db);
  return rc;
}
