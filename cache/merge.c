/*
** merge.c — importing a bundle (bundle.h): every check on the bundle before anything is
** written; every entry rebuilt from its config with this host's templates and NVRTC (and,
** when asked, verified and timed on this GPU), in the bundle's scratch copy; then one
** transaction that adds its runs and trials under new run ids and, for each of its entries,
** keeps whichever of it and the cache's entry of that key is faster.
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle.h"
#include "cache_sql.h"

/* An entry of the bundle (b) and one of the cache (d) under the same key. */
#define SAME_KEY "d.gpu = b.gpu AND d.arch = b.arch AND d.sms = b.sms AND d.templates = b.templates " \
                 "AND d.dtype = b.dtype AND d.op = b.op AND d.rows = b.rows AND d.cols = b.cols"

/* What makes a bundle's entry wrong, as a condition on it (alias b), and how to say it. */
static const struct { const char *bad, *what; } ENTRY_CHECKS[] = {
  { "b.dtype NOT IN ('f32', 'f16', 'bf16')", "an unknown dtype" },
  { "typeof(b.rows) != 'integer' OR typeof(b.cols) != 'integer' OR b.rows < 1 OR b.cols < 1", "a bad shape" },
  { "typeof(b.arch) != 'integer' OR typeof(b.sms) != 'integer' OR b.arch < 1 OR b.sms < 1 OR b.gpu = ''",
    "a bad GPU, arch or SM count" },
  { "length(b.templates) != 64 OR b.templates GLOB '*[^0-9a-f]*'", "a bad template hash" },
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

/* A format-1 image (schema 3) brought to this schema, as an old cache is. */
static int migrate_image(sqlite3 *db, const char *path, char *err, size_t errlen)
{
  char why[512];
  if (cache_exec(db, "BEGIN", why, sizeof why) || cache_migrate(db, 3, why, sizeof why) ||
      cache_exec(db, "COMMIT", why, sizeof why)) {
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return refuse(err, errlen, path, "its format-1 database cannot be read: %s", why);
  }
  return 0;
}

/* The whole bundle, before anything is written: a sound database of the schema of its format
** (format 1: schema 3, then migrated), a bundle, every entry's key right. */
static int check_bundle(sqlite3 *db, const char *path, int format, char *err, size_t errlen)
{
  char ok[256], kind[32], want[8];
  int v = 0, schema = format == 1 ? 3 : CACHE_SCHEMA_VERSION, rc;
  if (text_of(db, "PRAGMA integrity_check", NULL, ok, sizeof ok) || strcmp(ok, "ok") != 0)
    return refuse(err, errlen, path, "its database is damaged: %s", ok[0] ? ok : sqlite3_errmsg(db));
  if (cache_read_version(db, &v) != SQLITE_OK || v != schema)
    return refuse(err, errlen, path, "a foreign schema: version %d, a format-%d bundle has %d", v, format, schema);
  snprintf(want, sizeof want, "%d", format);
  if (text_of(db, "SELECT v FROM meta WHERE k = 'bundle'", NULL, kind, sizeof kind) || strcmp(kind, want) != 0)
    return refuse(err, errlen, path, "its database is not a format-%d bundle (meta bundle = '%s')", format, kind);
  if (format == 1 && (rc = migrate_image(db, path, err, errlen))) return rc;
  if ((rc = check_tables(db, path, err, errlen))) return rc;
  return check_entries(db, path, err, errlen);
}

/* The bundle's image as the main database of a scratch connection; *format its format. */
static int load_image(sqlite3 **db, const char *path, int *format, char *err, size_t errlen)
{
  void *image;
  size_t n;
  int rc = cache_bundle_read(path, format, &image, &n, err, errlen);
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

/* ---- rebuilding each entry on this host ---- */

/* "f32 softmax 1024x4096 on GPU" for messages. */
static const char *entry_name(const cache_Entry *e, char *out, size_t n)
{
  snprintf(out, n, "%s %s %lldx%lld on %s", gen_dtype_name(e->key.dtype), gen_op_name(e->key.op), (long long)e->key.rows,
           (long long)e->key.cols, e->key.gpu);
  return out;
}

/* Statement sql stepped once, its parameters bound from e, its row id and t (a retiming's
** trial, or NULL): ?1 row id, ?2 cubin, ?3-?7 text, ?8-?19 integers, ?20-?24 figures. */
static int step_entry(sqlite3 *db, const char *sql, const cache_Entry *e, int64_t rowid, const cache_Trial *t)
{
  static const cache_Trial none;
  sqlite3_stmt *st;
  if (!t) t = &none;
  const char *texts[] = { e->sha256, e->kernel, e->origin, t->status, t->reason };
  const int ints[] = { e->launch.threads, e->launch.rows_per_block, e->launch.blocks_per_row, e->launch.cluster,
                       e->launch.smem, e->launch.coop, e->launch.workspace, e->launch.ws_groups, e->key.driver,
                       e->key.nvrtc, t->regs, t->blocks_sm };
  const double figs[] = { t->max_err, e->us, e->gbps, e->frac, e->copy_us };
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 1;
  int np = sqlite3_bind_parameter_count(st), rc = sqlite3_bind_int64(st, 1, rowid);
  if (np >= 2) rc |= sqlite3_bind_blob(st, 2, e->cubin ? e->cubin : "", (int)e->size, SQLITE_STATIC);
  for (int i = 3; i <= np && i <= 7; i++) rc |= sqlite3_bind_text(st, i, texts[i - 3], -1, SQLITE_STATIC);
  for (int i = 8; i <= np && i <= 19; i++) rc |= sqlite3_bind_int(st, i, ints[i - 8]);
  for (int i = 20; i <= np && i <= 24; i++) rc |= sqlite3_bind_double(st, i, figs[i - 20]);
  rc = rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE;
  sqlite3_finalize(st);
  return rc;
}

/* The entry at rowid, rebuilt: our cubin, launch, versions and origin (and figures, retimed). */
static const char *const UPDATE_ENTRY =
  "UPDATE main.entries SET cubin = ?2, sha256 = ?3, kernel = ?4, origin = ?5, threads = ?8, rows_per_block = ?9,"
  " blocks_per_row = ?10, cluster = ?11, smem = ?12, coop = ?13, workspace = ?14, ws_groups = ?15, driver = ?16,"
  " nvrtc = ?17, us = ?21, gbps = ?22, frac = ?23, copy_us = ?24 WHERE rowid = ?1";

/* A run of this host for the retiming of the entry at rowid, with its one trial; its id the
** bundle's last + 1 (renumbered with the others). */
static const char *const LOG_RETIME =
  "INSERT INTO main.runs(id, started, seconds, status, gpu, arch, sms, driver, nvrtc, templates, dtype, op, rows, cols,"
  " configs, verified, pruned, failed, winner, winner_us, copy_us, frac, origin)"
  " SELECT (SELECT coalesce(max(id), 0) + 1 FROM main.runs), strftime('%Y-%m-%d %H:%M:%SZ', 'now'), 0,"
  " CASE ?6 WHEN 'ok' THEN 'retimed' ELSE 'retime failed' END, gpu, arch, sms, ?16, ?17, templates, dtype, op, rows, cols,"
  " 1, ?6 = 'ok', 0, ?6 != 'ok', CASE ?6 WHEN 'ok' THEN config END, CASE ?6 WHEN 'ok' THEN ?21 ELSE 0 END, ?24,"
  " CASE ?6 WHEN 'ok' THEN ?23 ELSE 0 END, '' FROM main.entries WHERE rowid = ?1;"
  "INSERT INTO main.trials(run, idx, config, status, reason, regs, local_bytes, smem, blocks_sm, occupancy, compile_ms,"
  " us, gbps, frac, max_err, finalist) SELECT (SELECT max(id) FROM main.runs), 0, config, ?6, ?7, ?18, 0, ?12, ?19,"
  " 0, 0, ?21, ?22, ?23, ?20, 0 FROM main.entries WHERE rowid = ?1";

/* Each statement of sql (';' separated, as LOG_RETIME) through step_entry. */
static int step_all(sqlite3 *db, const char *sql, const cache_Entry *e, int64_t rowid, const cache_Trial *t)
{
  const char *semi = strchr(sql, ';');
  char *first = semi ? sqlite3_mprintf("%.*s", (int)(semi - sql), sql) : NULL;
  int rc = semi ? !first || step_entry(db, first, e, rowid, t) || step_all(db, semi + 1, e, rowid, t)
                : step_entry(db, sql, e, rowid, t);
  sqlite3_free(first);
  return rc;
}

/* Verify and time e here when it is of this host's GPU: 0 kept (retimed or not), CACHE_MISS
** failed here (logged, left out), CACHE_ERROR the device or the log failed. */
static int retime(sqlite3 *db, const cache_Rebuild *r, cache_Entry *e, int64_t rowid, cache_Bundle *b, char *err,
                  size_t errlen)
{
  cache_Trial t;
  char name[512], why[768] = "";
  if (!r->retime || strcmp(e->key.gpu, r->gpu) != 0 || e->key.arch != r->arch || e->key.sms != r->sms) return 0;
  memset(&t, 0, sizeof t);
  int rc = r->retime(r->ud, e, &t, why, sizeof why);
  if (rc == CACHE_ERROR) return snprintf(err, errlen, "retiming %s: %s", entry_name(e, name, sizeof name), why), CACHE_ERROR;
  e->key.driver = r->driver;
  snprintf(t.status, sizeof t.status, "%s", rc ? "failed" : "ok");
  if (step_all(db, LOG_RETIME, e, rowid, &t))
    return snprintf(err, errlen, "logging a retiming: %s", sqlite3_errmsg(db)), CACHE_ERROR;
  if (rc) return b->dropped++, CACHE_MISS;
  snprintf(e->origin, sizeof e->origin, CACHE_RETIMED);
  return b->retimed++, 0;
}

/* One entry's kernel: rendered here (Lua: one thread), compiled by any of the build threads. */
typedef struct Build {
  gen_Problem p;
  gen_Kernel k;             /* k.source NULL: nothing to compile (other templates) */
  gen_Cubin c;
  int rc;
  char err[768];
} Build;

typedef struct Builds {
  const cache_Rebuild *r;
  Build *b;
  int n, next;              /* next: the next to take (atomic) */
} Builds;

/* e's config rendered with this host's templates for e's problem (the arch's limits, e's SM
** count): its kernel and launch now ours. */
static int render(const cache_Rebuild *r, const char *path, cache_Entry *e, Build *b, char *err, size_t errlen)
{
  char name[512];
  b->p.rows = e->key.rows, b->p.cols = e->key.cols, b->p.dtype = e->key.dtype, b->p.op = e->key.op;
  b->p.mask = e->key.mask, b->p.bias = e->key.bias;
  b->p.arch = e->key.arch, b->p.sms = e->key.sms;
  b->p.capped = gen_capped_name(e->kernel);   /* a cross-entropy entry tuned with a softcap: that kernel */
  if (gen_render(r->gen, &b->p, e->config, &b->k))
    return refuse(err, errlen, path, "entry %s: these templates do not make its config %s: %s", entry_name(e, name, sizeof name),
                  e->config, gen_error(r->gen));
  snprintf(e->kernel, sizeof e->kernel, "%s", b->k.name);
  e->launch = b->k.launch;
  return 0;
}

static void *build_thread(void *arg)
{
  Builds *s = arg;
  const cache_Rebuild *r = s->r;
  for (int i; (i = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED)) < s->n;) {
    Build *b = &s->b[i];
    if (!b->k.source) continue;
    b->rc = r->compile ? r->compile(r->ud, &b->p, &b->k, &b->c, b->err, sizeof b->err)
                       : cache_compile(r->cubins, b->k.source, "softmax.cu", b->p.arch, &b->c, b->err, sizeof b->err);
  }
  return NULL;
}

/* Every rendered kernel compiled, on r->threads threads (0: one per core, at most one per kernel). */
static void build_all(const cache_Rebuild *r, Build *b, int n)
{
  Builds s = { r, b, n, 0 };
  int nt = r->threads > 0 ? r->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  nt = nt < 1 ? 1 : nt > n ? n : nt;
  pthread_t th[nt > 1 ? nt : 1];
  int started = 0;
  while (nt > 1 && started < nt && pthread_create(&th[started], NULL, build_thread, &s) == 0) started++;
  build_thread(&s);   /* this thread too, and alone where no thread could start */
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}

/* The entry at rowid, its kernel built (b): left out for the log only (other templates), or
** stored rebuilt, retimed when asked. */
static int finish(sqlite3 *db, const cache_Rebuild *r, cache_Entry *e, Build *b, int64_t rowid, cache_Bundle *bn,
                  char *err, size_t errlen)
{
  char sum[65], name[512];
  if (!b->k.source) {
    bn->foreign++;
    return step_entry(db, "DELETE FROM main.entries WHERE rowid = ?1", e, rowid, NULL)
             ? (snprintf(err, errlen, "%s", sqlite3_errmsg(db)), CACHE_ERROR) : 0;
  }
  if (b->rc)
    return snprintf(err, errlen, "compiling %s (%s): %s", entry_name(e, name, sizeof name), e->config, b->err), CACHE_ERROR;
  cache_sha256(b->c.data, b->c.size, sum);
  bn->same += strcmp(sum, e->sha256) == 0;
  memcpy(e->sha256, sum, sizeof sum);
  e->cubin = b->c.data, e->size = b->c.size;
  e->key.driver = 0, e->key.nvrtc = r->nvrtc;   /* driver 0: verified before its first use */
  snprintf(e->origin, sizeof e->origin, CACHE_BUNDLE);
  int rc = retime(db, r, e, rowid, bn, err, errlen);
  if (rc != CACHE_ERROR && step_entry(db, rc ? "DELETE FROM main.entries WHERE rowid = ?1" : UPDATE_ENTRY, e, rowid, NULL))
    rc = (snprintf(err, errlen, "%s", sqlite3_errmsg(db)), CACHE_ERROR);
  e->cubin = NULL;
  return rc == CACHE_MISS ? 0 : rc;
}

/* The bundle's entries and their row ids, read whole before any is changed. */
static int read_entries(sqlite3 *db, cache_Entry **out, int64_t **rowids, int *n)
{
  sqlite3_stmt *st;
  int cap = 0, rc;
  *out = NULL, *rowids = NULL, *n = 0;
  if (sqlite3_prepare_v2(db, "SELECT " ENTRY_COLS ", rowid FROM main.entries ORDER BY rowid", -1, &st, NULL) != SQLITE_OK)
    return 1;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      cache_Entry *e = realloc(*out, (size_t)cap * sizeof *e);
      int64_t *r = realloc(*rowids, (size_t)cap * sizeof *r);
      if (e) *out = e;
      if (r) *rowids = r;
      if (!e || !r) break;
    }
    cache_entry_row(st, &(*out)[*n]);
    (*rowids)[(*n)++] = sqlite3_column_int64(st, 28);
  }
  sqlite3_finalize(st);
  return rc != SQLITE_DONE;
}

/* Refuse the bundle: the entry at rowid has an op this generator does not know, named as it is. */
static int unknown_op(sqlite3 *db, const char *path, const cache_Entry *e, int64_t rowid, char *err, size_t errlen)
{
  char id[32], op[128];
  snprintf(id, sizeof id, "%lld", (long long)rowid);
  text_of(db, "SELECT quote(op) FROM main.entries WHERE rowid = CAST(?1 AS INTEGER)", id, op, sizeof op);
  return refuse(err, errlen, path, "entry %s %lldx%lld on %s has an unknown op %s", gen_dtype_name(e->key.dtype),
                (long long)e->key.rows, (long long)e->key.cols, e->key.gpu, op);
}

/* Every entry rebuilt (or left to the log), in the scratch copy: rendered, compiled on threads,
** then retimed and stored in turn; its runs marked as a bundle's. */
static int rebuild(sqlite3 *db, const cache_Rebuild *r, const char *path, cache_Bundle *bn, char *err, size_t errlen)
{
  cache_Entry *e;
  int64_t *rowids;
  int n, rc = 0;
  if (cache_exec(db, "UPDATE main.runs SET origin = '" CACHE_BUNDLE "'", err, errlen)) return CACHE_ERROR;
  if (read_entries(db, &e, &rowids, &n)) rc = (snprintf(err, errlen, "reading its entries: %s", sqlite3_errmsg(db)), CACHE_ERROR);
  Build *b = rc ? NULL : calloc((size_t)(n > 0 ? n : 1), sizeof *b);
  if (!rc && !b) rc = (snprintf(err, errlen, "out of memory rebuilding %d entries", n), CACHE_ERROR);
  for (int i = 0; !rc && i < n; i++)   /* any op this generator knows (gen_parse_op), not a list kept here */
    if (e[i].key.op < 0) rc = unknown_op(db, path, &e[i], rowids[i], err, errlen);
    else if (strcmp(e[i].key.templates, r->templates) == 0) rc = render(r, path, &e[i], &b[i], err, errlen);
  if (!rc) build_all(r, b, n);
  for (int i = 0; !rc && i < n; i++) rc = finish(db, r, &e[i], &b[i], rowids[i], bn, err, errlen);
  for (int i = 0; b && i < n; i++) {
    gen_kernel_free(&b[i].k);
    gen_cubin_free(&b[i].c);
  }
  free(b);
  free(e);
  free(rowids);
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
  b->added = b->entries - b->foreign - b->dropped - b->kept - b->replaced;
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

int cache_import(const char *cache_path, const char *path, const cache_Rebuild *r, cache_Bundle *b, char *err,
                 size_t errlen)
{
  sqlite3 *db = NULL;
  int64_t n[3] = { 0, 0, 0 };
  memset(b, 0, sizeof *b);
  int rc = load_image(&db, path, &b->format, err, errlen);
  if (!rc) rc = check_bundle(db, path, b->format, err, errlen);
  if (!rc && ints_of(db, "SELECT (SELECT count(*) FROM entries), (SELECT count(*) FROM runs), (SELECT count(*) FROM trials)",
                     n, 3))
    rc = refuse(err, errlen, path, "counting its rows: %s", sqlite3_errmsg(db));
  b->entries = (int)n[0], b->runs = (int)n[1], b->trials = (int)n[2];
  if (!rc) rc = rebuild(db, r, path, b, err, errlen);
  if (!rc) rc = merge(db, cache_path, b, err, errlen);
  sqlite3_close(db);
  return rc;
}
