/*
** test_cache.c — the SQLite cache and tuning log (cache/cache.c), on files in a temporary folder:
** an entry reads back intact under its full key and misses under any other (the driver and NVRTC
** it was made under are recorded, not matched); a re-verification updates or removes it and logs; a spoiled cubin fails
** its checksum and is never handed out; the log filters runs, newest first, and keeps trials; a
** run without a winner makes no entry; entries list and clear by filter; similar entries match by
** nearest rows; the database path falls back through its defaults; bad files give an error, never
** a crash or a wrong entry; a second store replaces the entry; SHA-256 meets published vectors.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cache.h"
#include "check.h"

static char root[] = "/tmp/st_cacheXXXXXX";

/* root/name into out[4096]; returns out. */
static char *path_in(const char *name, char *out)
{
  snprintf(out, 4096, "%s/%s", root, name);
  return out;
}

static int is_dir(const char *path)
{
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* ---- things to store ---- */

static cache_Key key(int64_t rows, int64_t cols, int dtype, int op)
{
  cache_Key k;
  memset(&k, 0, sizeof k);
  snprintf(k.gpu, sizeof k.gpu, "NVIDIA H100 80GB HBM3");
  k.arch = 90, k.sms = 132, k.driver = 12040, k.nvrtc = 12060;
  cache_sha256("templates", 9, k.templates);
  k.dtype = dtype, k.op = op, k.rows = rows, k.cols = cols;
  return k;
}

/* A filter matching everything except the fields given (0 or -1 to leave one open). */
static cache_Key filter(int64_t rows, int64_t cols, int dtype, int op)
{
  cache_Key f;
  cache_filter_all(&f);
  f.rows = rows, f.cols = cols, f.dtype = dtype, f.op = op;
  return f;
}

/* An entry for k with a malloc'ed cubin of size bytes, its bytes and figures set by seed. */
static cache_Entry entry(const cache_Key *k, size_t size, int seed)
{
  cache_Entry e;
  memset(&e, 0, sizeof e);
  e.key = *k;
  snprintf(e.config, sizeof e.config, "threads=%d,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1",
           64 << (seed % 4));
  snprintf(e.kernel, sizeof e.kernel, "softmax_row_%d", seed);
  e.launch = (gen_Launch){ .threads = 64 << (seed % 4), .rows_per_block = 1 + seed % 3, .blocks_per_row = 1 + seed % 2,
                           .cluster = seed % 2 ? 2 : 0, .smem = 1024 * seed, .op = k->op };
  e.cubin = malloc(size);
  e.size = size;
  for (size_t i = 0; i < size; i++) ((unsigned char *)e.cubin)[i] = (unsigned char)(i * 31 + (i >> 8) + 7 * (size_t)seed);
  e.us = 100.1 + seed, e.gbps = 1234.7 - seed, e.frac = 0.83, e.copy_us = 87.3;
  return e;
}

/* Three trials, one per status; the configs are out of alphabetical order so order means idx. */
static void fill_trials(cache_Trial t[3], int seed)
{
  static const char *const status[] = { "ok", "pruned", "failed" };
  for (int i = 0; i < 3; i++) {
    memset(&t[i], 0, sizeof t[i]);
    snprintf(t[i].config, sizeof t[i].config, "cfg-%c-%d", 'c' - i, seed);
    snprintf(t[i].status, sizeof t[i].status, "%s", status[i]);
    snprintf(t[i].reason, sizeof t[i].reason, "%s", i ? "zero occupancy" : "");
    t[i].regs = 32 + i, t[i].local_bytes = 8 * i, t[i].smem = 1024 * i, t[i].blocks_sm = 4 - i;
    /* values no float holds exactly, so any narrowing on the way shows */
    t[i].occupancy = 0.1 * (i + 1), t[i].compile_ms = 10.3 + i, t[i].us = 100.7 + i + seed, t[i].gbps = 1000.9 - i;
    t[i].frac = 0.3 + 0.1 * i, t[i].max_err = 1.1e-7 * (i + 1), t[i].finalist = i == 0;
  }
}

static cache_Run run_of(const cache_Key *k, const cache_Entry *e)
{
  cache_Run r;
  memset(&r, 0, sizeof r);
  r.key = *k;
  snprintf(r.status, sizeof r.status, "%s", e ? "ok" : "no winner");
  snprintf(r.winner, sizeof r.winner, "%s", e ? e->config : "");
  r.seconds = 12.3, r.winner_us = e ? e->us : 0, r.copy_us = 87.3, r.frac = e ? e->frac : 0;
  r.configs = 3, r.verified = 1, r.pruned = 1, r.failed = 1;
  return r;
}

/* Log a run of k with three trials (seeded by rows) and, when e is set, its entry; the run id. */
static int64_t store(cache_Db *db, const cache_Key *k, const cache_Entry *e)
{
  cache_Trial t[3];
  cache_Run r = run_of(k, e);
  fill_trials(t, (int)k->rows);
  CHECK(cache_store(db, &r, t, 3, e) == 0, "cache_store: %s", cache_error(db));
  CHECK(r.id > 0 && r.started[0], "run id %lld, started '%s'", (long long)r.id, r.started);
  return r.id;
}

/* Store an entry for k made from (size, seed); the run id. */
static int64_t store_entry(cache_Db *db, const cache_Key *k, size_t size, int seed)
{
  cache_Entry e = entry(k, size, seed);
  int64_t id = store(db, k, &e);
  cache_entry_free(&e);
  return id;
}

static cache_Db *open_db(const char *name, int create)
{
  char path[4096], err[1024] = "";
  cache_Db *db = NULL;
  CHECK(cache_open(&db, path_in(name, path), create, err, sizeof err) == 0 && db, "open %s: %s", path, err);
  return db;
}

/* ---- comparisons ---- */

static int same_key(const cache_Key *a, const cache_Key *b)
{
  return strcmp(a->gpu, b->gpu) == 0 && strcmp(a->templates, b->templates) == 0 && a->arch == b->arch &&
         a->sms == b->sms && a->driver == b->driver && a->nvrtc == b->nvrtc && a->dtype == b->dtype && a->op == b->op &&
         a->rows == b->rows && a->cols == b->cols;
}

static void same_entry(const cache_Entry *got, const cache_Entry *want)
{
  char sum[65];
  cache_sha256(want->cubin, want->size, sum);
  CHECK(same_key(&got->key, &want->key), "key of %s", want->config);
  CHECK(strcmp(got->config, want->config) == 0 && strcmp(got->kernel, want->kernel) == 0, "config '%s' kernel '%s'",
        got->config, got->kernel);
  CHECK(memcmp(&got->launch, &want->launch, sizeof got->launch) == 0, "launch of %s", want->config);
  CHECK(got->size == want->size && got->cubin && memcmp(got->cubin, want->cubin, want->size) == 0,
        "cubin of %zu bytes, want %zu", got->size, want->size);
  CHECK(strcmp(got->sha256, sum) == 0, "sha256 %s, want %s", got->sha256, sum);
  CHECK(got->us == want->us && got->gbps == want->gbps && got->frac == want->frac && got->copy_us == want->copy_us,
        "figures %g %g %g %g", got->us, got->gbps, got->frac, got->copy_us);
  CHECK(got->created[0] != '\0', "no creation time");
}

static void same_trial(const cache_Trial *a, const cache_Trial *b)
{
  CHECK(strcmp(a->config, b->config) == 0 && strcmp(a->status, b->status) == 0 && strcmp(a->reason, b->reason) == 0,
        "trial '%s' '%s' '%s', want '%s'", a->config, a->status, a->reason, b->config);
  CHECK(a->regs == b->regs && a->local_bytes == b->local_bytes && a->smem == b->smem && a->blocks_sm == b->blocks_sm &&
        a->finalist == b->finalist, "integer fields of %s", b->config);
  CHECK(a->occupancy == b->occupancy && a->compile_ms == b->compile_ms && a->us == b->us && a->gbps == b->gbps &&
        a->frac == b->frac && a->max_err == b->max_err, "real fields of %s", b->config);
}

static void same_run(const cache_Run *a, const cache_Run *b)
{
  CHECK(same_key(&a->key, &b->key) && strcmp(a->status, b->status) == 0 && strcmp(a->winner, b->winner) == 0,
        "run %lld: '%s' '%s'", (long long)a->id, a->status, a->winner);
  CHECK(a->seconds == b->seconds && a->winner_us == b->winner_us && a->copy_us == b->copy_us && a->frac == b->frac,
        "run %lld figures", (long long)a->id);
  CHECK(a->configs == b->configs && a->verified == b->verified && a->pruned == b->pruned && a->failed == b->failed &&
        a->started[0], "run %lld counts", (long long)a->id);
}

/* ---- round trip and keys ---- */

/* Change field f (0..9, in cache_Key order) of k. */
static void change(cache_Key *k, int f)
{
  switch (f) {
  case 0: k->gpu[strlen(k->gpu) - 1]++; break;
  case 1: k->arch++; break;
  case 2: k->sms++; break;
  case 3: k->driver++; break;
  case 4: k->nvrtc++; break;
  case 5: k->templates[0] = k->templates[0] == '0' ? '1' : '0'; break;
  case 6: k->dtype = (k->dtype + 1) % GEN_NDTYPE; break;
  case 7: k->op = !k->op; break;
  case 8: k->rows++; break;
  default: k->cols++; break;
  }
}

static void test_round_trip(void)
{
  static const char *const fields[] = { "gpu", "arch", "sms", "driver", "nvrtc", "templates", "dtype", "op", "rows", "cols" };
  cache_Db *db = open_db("round.db", 1);
  if (!db) return;
  cache_Key k = key(32000, 16384, GEN_BF16, GEN_LOG_SOFTMAX);
  cache_Entry want = entry(&k, 70000, 1), got;   /* big enough to need overflow pages */
  int64_t run = store(db, &k, &want);
  int rc = cache_get(db, &k, &got);
  CHECK(rc == CACHE_OK, "get: %d %s", rc, cache_error(db));
  if (rc == CACHE_OK) {
    same_entry(&got, &want);
    CHECK(got.run == run, "entry of run %lld, want %lld", (long long)got.run, (long long)run);
    cache_entry_free(&got);
  }
  for (int f = 0; f < 10; f++) {   /* driver and NVRTC are recorded, not matched */
    cache_Key other = k;
    int attribute = f == 3 || f == 4;
    change(&other, f);
    rc = cache_get(db, &other, &got);
    CHECK(rc == (attribute ? CACHE_OK : CACHE_MISS), "another %s: rc %d", fields[f], rc);
    if (rc == CACHE_OK) {
      CHECK(got.key.driver == k.driver && got.key.nvrtc == k.nvrtc, "another %s: driver %d nvrtc %d", fields[f],
            got.key.driver, got.key.nvrtc);
      cache_entry_free(&got);
    }
  }
  cache_entry_free(&want);
  cache_close(db);
}

/* ---- a spoiled cubin ---- */

/* Set the cubin of every entry behind the cache's back, with plain SQLite. */
static void set_cubin(const char *path, const void *bytes, int n)
{
  sqlite3 *s = NULL;
  sqlite3_stmt *st = NULL;
  int ok = sqlite3_open(path, &s) == SQLITE_OK &&
           sqlite3_prepare_v2(s, "UPDATE entries SET cubin = ?1", -1, &st, NULL) == SQLITE_OK &&
           sqlite3_bind_blob(st, 1, bytes, n, SQLITE_TRANSIENT) == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE;
  CHECK(ok && sqlite3_changes(s) == 1, "updating the cubin: %s", sqlite3_errmsg(s));
  sqlite3_finalize(st);
  sqlite3_close(s);
}

/* Both lookups of k give CACHE_CORRUPT, no cubin, and a message with needle. */
static void expect_corrupt(cache_Db *db, const cache_Key *k, const char *needle)
{
  for (int similar = 0; similar < 2; similar++) {
    cache_Entry e;
    memset(&e, 0, sizeof e);
    int rc = similar ? cache_similar(db, k, k->cols, k->cols, &e) : cache_get(db, k, &e);
    CHECK(rc == CACHE_CORRUPT, "%s: rc %d", similar ? "similar" : "get", rc);
    CHECK(e.cubin == NULL, "a spoiled cubin was handed out");
    CHECK(strstr(cache_error(db), needle), "message '%s' lacks '%s'", cache_error(db), needle);
    cache_entry_free(&e);
  }
}

static void test_corrupt(void)
{
  char path[4096];
  cache_Db *db = open_db("corrupt.db", 1);
  if (!db) return;
  cache_Key k = key(4096, 4096, GEN_F32, GEN_SOFTMAX);
  cache_Entry want = entry(&k, 6000, 2), got;
  unsigned char *spoiled = malloc(want.size);
  store(db, &k, &want);
  memcpy(spoiled, want.cubin, want.size);
  spoiled[4321] ^= 0x10;
  path_in("corrupt.db", path);
  set_cubin(path, spoiled, (int)want.size);
  expect_corrupt(db, &k, "checksum");
  set_cubin(path, want.cubin, (int)want.size - 1);   /* one byte short */
  expect_corrupt(db, &k, "checksum");
  set_cubin(path, want.cubin, 0);
  expect_corrupt(db, &k, "no cubin");
  set_cubin(path, want.cubin, (int)want.size);        /* mended: reads are checked afresh each time */
  CHECK(cache_get(db, &k, &got) == CACHE_OK, "mended entry: %s", cache_error(db));
  if (got.cubin) same_entry(&got, &want);
  cache_entry_free(&got);
  free(spoiled);
  cache_entry_free(&want);
  cache_close(db);
}

/* ---- the log ---- */

/* cache_runs gives exactly the runs want[nwant], in that order. */
static void expect_runs(cache_Db *db, cache_Key f, int64_t id, int limit, const int64_t *want, int nwant, const char *what)
{
  cache_Run *r = NULL;
  int n = -1;
  CHECK(cache_runs(db, &f, id, limit, &r, &n) == 0, "%s: %s", what, cache_error(db));
  CHECK(n == nwant, "%s: %d runs, want %d", what, n, nwant);
  for (int i = 0; i < n && i < nwant; i++)
    CHECK(r[i].id == want[i], "%s: run %d is %lld, want %lld", what, i, (long long)r[i].id, (long long)want[i]);
  free(r);
}

/* Run id reads back as logged for k and e, with its trials in order. */
static void expect_logged(cache_Db *db, int64_t id, const cache_Key *k, const cache_Entry *e)
{
  cache_Key all = filter(0, 0, -1, -1);
  cache_Run *r = NULL, want = run_of(k, e);
  cache_Trial *t = NULL, wt[3];
  int n = 0, nt = 0;
  CHECK(cache_runs(db, &all, id, 10, &r, &n) == 0 && n == 1, "run %lld: %d found", (long long)id, n);
  if (n == 1) same_run(&r[0], &want);
  fill_trials(wt, (int)k->rows);
  CHECK(cache_trials(db, id, &t, &nt) == 0 && nt == 3, "run %lld: %d trials (%s)", (long long)id, nt, cache_error(db));
  for (int i = 0; i < nt && i < 3; i++) same_trial(&t[i], &wt[i]);
  free(r);
  free(t);
}

static int count_entries(cache_Db *db, cache_Key f)
{
  cache_Entry *e = NULL;
  int n = -1;
  CHECK(cache_entries(db, &f, &e, &n) == 0, "entries: %s", cache_error(db));
  for (int i = 0; i < n; i++) {
    CHECK(e[i].cubin == NULL && e[i].sha256[0], "listed entry %s", e[i].config);
    CHECK((f.rows <= 0 || e[i].key.rows == f.rows) && (f.cols <= 0 || e[i].key.cols == f.cols) &&
          (f.dtype < 0 || e[i].key.dtype == f.dtype) && (f.op < 0 || e[i].key.op == f.op), "%s does not match",
          e[i].config);
  }
  free(e);
  return n;
}

/* The cross-entropy ops keyed by their names: one shape and dtype under softmax, cross_entropy
** and cross_entropy_loss is three entries, each read back as stored (launch op included), the
** op column holding the name, a filter by op finding its own. */
static void test_ce_keys(void)
{
  static const int OPS[] = { GEN_SOFTMAX, GEN_CE, GEN_CE_LOSS };
  char path[4096];
  cache_Db *db = open_db("ce.db", 1);
  if (!db) return;
  for (int i = 0; i < 3; i++) {
    cache_Key k = key(4096, 128256, GEN_BF16, OPS[i]);
    store_entry(db, &k, 3000, 10 + i);
  }
  for (int i = 0; i < 3; i++) {
    cache_Key k = key(4096, 128256, GEN_BF16, OPS[i]);
    cache_Entry want = entry(&k, 3000, 10 + i), got;
    int rc = cache_get(db, &k, &got);
    CHECK(rc == CACHE_OK, "%s: get: %d %s", gen_op_name(OPS[i]), rc, cache_error(db));
    if (rc == CACHE_OK) {
      same_entry(&got, &want);
      CHECK(got.key.op == OPS[i] && got.launch.op == OPS[i], "%s read back as op %d, launch op %d", gen_op_name(OPS[i]),
            got.key.op, got.launch.op);
      cache_entry_free(&got);
    }
    cache_entry_free(&want);
    CHECK(count_entries(db, filter(0, 0, -1, OPS[i])) == 1, "filter by op %s", gen_op_name(OPS[i]));
  }
  cache_close(db);
  sqlite3 *s = NULL;
  sqlite3_stmt *st = NULL;
  int n = 0;
  if (sqlite3_open(path_in("ce.db", path), &s) == SQLITE_OK &&
      sqlite3_prepare_v2(s, "SELECT op FROM entries ORDER BY op", -1, &st, NULL) == SQLITE_OK) {
    static const char *const want[] = { "cross_entropy", "cross_entropy_loss", "softmax" };
    for (; sqlite3_step(st) == SQLITE_ROW && n < 3; n++)
      CHECK(strcmp((const char *)sqlite3_column_text(st, 0), want[n]) == 0, "op column '%s', want '%s'",
            (const char *)sqlite3_column_text(st, 0), want[n]);
  }
  CHECK(n == 3, "%d entries in the op column", n);
  sqlite3_finalize(st);
  sqlite3_close(s);
}

static void test_log(void)
{
  cache_Db *db = open_db("log.db", 1);
  if (!db) return;
  cache_Key ka = key(1024, 4096, GEN_F32, GEN_SOFTMAX), kb = key(2048, 4096, GEN_F16, GEN_SOFTMAX),
            kc = key(1024, 8192, GEN_F32, GEN_LOG_SOFTMAX);
  cache_Entry ea = entry(&ka, 300, 3), eb = entry(&kb, 500, 4), e;
  int64_t a = store(db, &ka, &ea), b = store(db, &kb, &eb), c = store(db, &kc, NULL);
  expect_runs(db, filter(0, 0, -1, -1), 0, 10, (const int64_t[]){ c, b, a }, 3, "all");
  expect_runs(db, filter(0, 0, -1, -1), 0, 2, (const int64_t[]){ c, b }, 2, "limit 2");
  expect_runs(db, filter(1024, 0, -1, -1), 0, 10, (const int64_t[]){ c, a }, 2, "rows 1024");
  expect_runs(db, filter(0, 4096, -1, -1), 0, 10, (const int64_t[]){ b, a }, 2, "cols 4096");
  expect_runs(db, filter(1024, 4096, -1, -1), 0, 10, (const int64_t[]){ a }, 1, "1024x4096");
  expect_runs(db, filter(0, 0, GEN_F16, -1), 0, 10, (const int64_t[]){ b }, 1, "f16");
  expect_runs(db, filter(0, 0, -1, GEN_LOG_SOFTMAX), 0, 10, (const int64_t[]){ c }, 1, "log_softmax");
  expect_runs(db, filter(0, 0, -1, -1), b, 10, (const int64_t[]){ b }, 1, "id");
  expect_runs(db, filter(0, 0, GEN_F32, -1), b, 10, NULL, 0, "id of another dtype");
  expect_logged(db, a, &ka, &ea);
  expect_logged(db, b, &kb, &eb);
  expect_logged(db, c, &kc, NULL);
  int rc = cache_get(db, &kc, &e);
  CHECK(rc == CACHE_MISS, "a run without a winner made an entry: rc %d", rc);
  if (rc == CACHE_OK) cache_entry_free(&e);
  CHECK(count_entries(db, filter(0, 0, -1, -1)) == 2, "entries besides a and b");
  cache_Trial *t = NULL;
  int nt = -1;
  CHECK(cache_trials(db, c + 100, &t, &nt) == 0 && nt == 0, "trials of no run: %d", nt);
  free(t);
  cache_entry_free(&ea);
  cache_entry_free(&eb);
  cache_close(db);
}

/* ---- listing and clearing entries ---- */

static void expect_clear(cache_Db *db, cache_Key f, int want, const char *what)
{
  int n = -1;
  CHECK(cache_clear(db, &f, &n) == 0 && n == want, "clear %s: %d removed, want %d (%s)", what, n, want, cache_error(db));
}

/* cache_get of k finds an entry (want) or misses. */
static void expect_get(cache_Db *db, const cache_Key *k, int want)
{
  cache_Entry e;
  int rc = cache_get(db, k, &e);
  CHECK(rc == (want ? CACHE_OK : CACHE_MISS), "%lldx%lld %s %s: rc %d", (long long)k->rows, (long long)k->cols,
        gen_dtype_name(k->dtype), gen_op_name(k->op), rc);
  if (rc == CACHE_OK) cache_entry_free(&e);
}

static void test_clear(void)
{
  cache_Db *db = open_db("clear.db", 1);
  if (!db) return;
  cache_Key k[4] = { key(1024, 4096, GEN_F32, GEN_SOFTMAX), key(2048, 4096, GEN_F32, GEN_SOFTMAX),
                     key(1024, 4096, GEN_F16, GEN_SOFTMAX), key(1024, 8192, GEN_F32, GEN_LOG_SOFTMAX) };
  int64_t id[4];
  for (int i = 0; i < 4; i++) id[i] = store_entry(db, &k[i], 100 + i, i);
  CHECK(count_entries(db, filter(0, 4096, -1, -1)) == 3, "cols 4096");
  CHECK(count_entries(db, filter(0, 0, GEN_F16, -1)) == 1, "f16");
  cache_Key elsewhere = filter(0, 0, -1, -1);
  snprintf(elsewhere.gpu, sizeof elsewhere.gpu, "NVIDIA A100-SXM4-80GB");
  CHECK(count_entries(db, elsewhere) == 0, "another GPU");
  expect_clear(db, elsewhere, 0, "another GPU");
  expect_clear(db, filter(1024, 0, GEN_F32, -1), 2, "rows 1024 f32");
  expect_get(db, &k[0], 0);
  expect_get(db, &k[1], 1);
  expect_get(db, &k[2], 1);
  expect_get(db, &k[3], 0);
  expect_clear(db, filter(1024, 0, GEN_F32, -1), 0, "rows 1024 f32 again");
  expect_runs(db, filter(0, 0, -1, -1), 0, 10, (const int64_t[]){ id[3], id[2], id[1], id[0] }, 4, "runs outlive entries");
  expect_clear(db, filter(0, 0, -1, -1), 2, "all");
  CHECK(count_entries(db, filter(0, 0, -1, -1)) == 0, "after clearing all");
  cache_close(db);
}

/* ---- similar entries ---- */

/* cache_similar for (rows, cols, dtype, op) over cols' width class finds the entry of want_rows
** and want_cols (0: misses). */
static void expect_similar_in(cache_Db *db, cache_Key k, int64_t want_rows, int64_t want_cols)
{
  cache_Entry e;
  int64_t lo, hi;
  gen_width_class(k.cols, &lo, &hi);
  int rc = cache_similar(db, &k, lo, hi, &e);
  CHECK(rc == (want_rows ? CACHE_OK : CACHE_MISS), "similar to %lldx%lld: rc %d (%s)", (long long)k.rows,
        (long long)k.cols, rc, cache_error(db));
  if (rc != CACHE_OK) return;
  CHECK(e.key.rows == want_rows && e.key.cols == want_cols && e.cubin && e.size == (size_t)want_rows / 10,
        "similar to %lld rows: %lld rows, %zu bytes", (long long)k.rows, (long long)e.key.rows, e.size);
  cache_entry_free(&e);
}

static void expect_similar(cache_Db *db, cache_Key k, int64_t want_rows) { expect_similar_in(db, k, want_rows, k.cols); }

static void test_similar(void)
{
  static const int64_t rows[] = { 1000, 4000, 16000 };
  cache_Db *db = open_db("similar.db", 1);
  if (!db) return;
  for (int i = 0; i < 3; i++) {
    cache_Key k = key(rows[i], 4096, GEN_F32, GEN_SOFTMAX);
    store_entry(db, &k, (size_t)rows[i] / 10, i);
  }
  /* nearer rows that differ in something else never match */
  cache_Key others[] = { key(5000, 8192, GEN_F32, GEN_SOFTMAX), key(5000, 4096, GEN_F16, GEN_SOFTMAX),
                         key(5000, 4096, GEN_F32, GEN_LOG_SOFTMAX), key(5000, 4096, GEN_F32, GEN_SOFTMAX) };
  others[3].sms = 114;
  for (int i = 0; i < 4; i++) store_entry(db, &others[i], 3, 9);
  expect_similar(db, key(5200, 4096, GEN_F32, GEN_SOFTMAX), 4000);
  expect_similar(db, key(12000, 4096, GEN_F32, GEN_SOFTMAX), 16000);
  expect_similar(db, key(1, 4096, GEN_F32, GEN_SOFTMAX), 1000);
  expect_similar(db, key(4000, 4096, GEN_F32, GEN_SOFTMAX), 4000);
  expect_similar(db, key(5000, 2048, GEN_F32, GEN_SOFTMAX), 0);
  expect_clear(db, filter(4000, 4096, GEN_F32, GEN_SOFTMAX), 1, "rows 4000");
  expect_similar(db, key(5200, 4096, GEN_F32, GEN_SOFTMAX), 1000);   /* the next nearest */
  /* another width of 4096's class (3841..4096) finds it; the width nearest first */
  expect_similar_in(db, key(5200, 3900, GEN_F32, GEN_SOFTMAX), 1000, 4096);
  expect_similar_in(db, key(5200, 4097, GEN_F32, GEN_SOFTMAX), 0, 0);
  expect_similar_in(db, key(5200, 3840, GEN_F32, GEN_SOFTMAX), 0, 0);
  cache_Key own = key(20000, 3900, GEN_F32, GEN_SOFTMAX);
  store_entry(db, &own, 2000, 10);
  expect_similar_in(db, key(1000, 3900, GEN_F32, GEN_SOFTMAX), 20000, 3900);
  expect_similar_in(db, key(1000, 3899, GEN_F32, GEN_SOFTMAX), 20000, 3900);
  cache_close(db);
}

/* ---- re-verification under another driver ---- */

/* The entry of k, made under driver 12040, found under driver 13000: passed, it records the new
** versions and keeps its run; failed, it is gone. Each is a run of one trial in the log. */
static void test_reverified(void)
{
  cache_Db *db = open_db("reverified.db", 1);
  if (!db) return;
  cache_Key k = key(512, 1024, GEN_F16, GEN_SOFTMAX), now = k;
  cache_Entry e = entry(&k, 900, 7), got;
  cache_Trial t[3];
  int64_t tuned = store(db, &k, &e), run = 0;
  now.driver = 13000, now.nvrtc = 13010;
  fill_trials(t, 0);
  CHECK(cache_get(db, &now, &got) == CACHE_OK && got.key.driver == 12040, "stale entry: driver %d", got.key.driver);
  CHECK(cache_reverified(db, &now, &got, &t[0], 1, &run) == 0 && run > tuned, "reverified: %s", cache_error(db));
  cache_entry_free(&got);
  CHECK(cache_get(db, &now, &got) == CACHE_OK && got.key.driver == 13000 && got.key.nvrtc == 13010 && got.run == tuned,
        "after: driver %d nvrtc %d run %lld", got.key.driver, got.key.nvrtc, (long long)got.run);
  expect_runs(db, filter(0, 0, -1, -1), 0, 10, (const int64_t[]){ run, tuned }, 2, "the verification is logged");
  cache_Run *r = NULL;
  int n = 0;
  CHECK(cache_runs(db, &now, run, 1, &r, &n) == 0 && n == 1 && strcmp(r[0].status, "reverified") == 0 &&
        r[0].key.driver == 13000 && strcmp(r[0].winner, e.config) == 0, "run %lld: '%s'", (long long)run, n ? r[0].status : "");
  free(r);
  now.driver = 13020;
  CHECK(cache_reverified(db, &now, &got, &t[2], 0, &run) == 0, "failed: %s", cache_error(db));
  cache_entry_free(&got);
  expect_get(db, &k, 0);
  CHECK(cache_runs(db, &now, run, 1, &r, &n) == 0 && n == 1 && strcmp(r[0].status, "reverify failed") == 0,
        "run %lld: '%s'", (long long)run, n ? r[0].status : "");
  free(r);
  cache_entry_free(&e);
  cache_close(db);
}

/* ---- the path ---- */

static void expect_path(const char *opt, int create, const char *want)
{
  char out[4096] = "", err[512] = "";
  CHECK(cache_path(opt, create, out, sizeof out, err, sizeof err) == 0 && strcmp(out, want) == 0,
        "path '%s' (%s), want '%s'", out, err, want);
}

static void expect_path_error(const char *opt, const char *needle)
{
  char out[64], err[512] = "";
  CHECK(cache_path(opt, 0, out, sizeof out, err, sizeof err) != 0 && strstr(err, needle), "'%s' lacks '%s'", err,
        needle);
}

static void test_path(void)
{
  char opt[4096], env[4096], home[4096], xdg[4096], want[4200], made[4200], err[1024];
  char *saved = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", path_in("home", home), 1);
  setenv("XDG_CACHE_HOME", path_in("xdg", xdg), 1);
  setenv("SOFTMAX_TUNE_CACHE", path_in("env.db", env), 1);
  expect_path(path_in("opt.db", opt), 1, opt);
  expect_path(NULL, 1, env);
  expect_path("", 1, env);
  setenv("SOFTMAX_TUNE_CACHE", "", 1);   /* empty counts as unset */
  snprintf(want, sizeof want, "%s/softmax-tune/cache.db", xdg);
  snprintf(made, sizeof made, "%s/softmax-tune", xdg);
  expect_path(NULL, 0, want);
  CHECK(!is_dir(made), "create=0 made %s", made);
  expect_path(NULL, 1, want);
  CHECK(is_dir(made), "create=1 did not make %s", made);
  cache_Db *db = NULL;
  CHECK(cache_open(&db, want, 1, err, sizeof err) == 0, "opening the default cache: %s", err);
  cache_close(db);
  snprintf(want, sizeof want, "%s/.cache/softmax-tune/cache.db", home);
  snprintf(made, sizeof made, "%s/.cache/softmax-tune", home);
  setenv("XDG_CACHE_HOME", "relative/cache", 1);   /* XDG: a relative path is ignored */
  expect_path(NULL, 0, want);
  unsetenv("XDG_CACHE_HOME");
  expect_path(NULL, 0, want);
  CHECK(!is_dir(made), "create=0 made %s", made);
  expect_path(NULL, 1, want);
  CHECK(is_dir(made), "create=1 did not make %s", made);
  unsetenv("HOME");
  expect_path_error(NULL, "HOME");
  expect_path_error("/a/path/longer/than/the/sixty-four/bytes/given/for/the/answer.db", "too long");
  unsetenv("SOFTMAX_TUNE_CACHE");
  if (saved) setenv("HOME", saved, 1);
  free(saved);
}

/* ---- bad files ---- */

static void expect_open_error(const char *path, int create, int want_rc, const char *needle)
{
  char err[1024] = "";
  cache_Db *db = NULL;
  int rc = cache_open(&db, path, create, err, sizeof err);
  CHECK(rc == want_rc && db == NULL, "open %s (create %d): rc %d, want %d (%s)", path, create, rc, want_rc, err);
  CHECK(strstr(err, needle), "message '%s' lacks '%s'", err, needle);
  cache_close(db);
}

static void write_file(const char *path, const void *data, size_t n)
{
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(data, 1, n, f) == n && fclose(f) == 0, "writing %s", path);
}

/* A damaged file holds DAMAGED_N entries of DAMAGED_SIZE bytes of cubin each. */
enum { DAMAGED_N = 8, DAMAGED_SIZE = 20000 };

/* The key of damaged-file entry i. */
static cache_Key damaged_key(int i)
{
  return key(1000 * (i + 1), 4096, GEN_F32, GEN_SOFTMAX);
}

/* Open a damaged copy and read every entry: each read fails with a message or is exactly right,
** never a crash or a wrong entry. Returns how many failed (all of them when the open did). */
static int read_damaged(const char *path)
{
  char err[1024] = "";
  cache_Db *db = NULL;
  int bad = 0, rc = cache_open(&db, path, 0, err, sizeof err);
  CHECK(rc == 0 || (db == NULL && err[0]), "open of a damaged file: rc %d, no message", rc);
  if (rc) return DAMAGED_N;
  for (int i = 0; i < DAMAGED_N; i++) {
    cache_Key k = damaged_key(i);
    cache_Entry want = entry(&k, DAMAGED_SIZE, i), got;
    int get = cache_get(db, &k, &got);
    if (get == CACHE_OK) same_entry(&got, &want);
    else CHECK((get == CACHE_ERROR || get == CACHE_CORRUPT) && cache_error(db)[0], "entry %d: rc %d", i, get);
    if (get == CACHE_OK) cache_entry_free(&got);
    bad += get != CACHE_OK;
    cache_entry_free(&want);
  }
  cache_close(db);
  return bad;
}

/* A database of DAMAGED_N entries in path, read back into *bytes (malloc'ed); its size. */
static size_t make_damaged(const char *path, char **bytes)
{
  cache_Db *db = open_db("damaged.db", 1);
  struct stat sb;
  FILE *f;
  *bytes = NULL;
  if (!db) return 0;
  for (int i = 0; i < DAMAGED_N; i++) {
    cache_Key k = damaged_key(i);
    store_entry(db, &k, DAMAGED_SIZE, i);
  }
  cache_close(db);   /* the last connection: the WAL is checkpointed into the file and removed */
  CHECK(stat(path, &sb) == 0 && sb.st_size >= DAMAGED_N * DAMAGED_SIZE && (*bytes = malloc((size_t)sb.st_size)) &&
        (f = fopen(path, "rb")) && fread(*bytes, 1, (size_t)sb.st_size, f) == (size_t)sb.st_size && fclose(f) == 0,
        "reading %s", path);
  return *bytes ? (size_t)sb.st_size : 0;
}

/* Cut to half its size; then, page by page (SQLite's default 4 KiB), one page zeroed. */
static void test_damaged(void)
{
  char path[4096], *bytes, *copy;
  size_t size = make_damaged(path_in("damaged.db", path), &bytes);
  int bad = 0;
  if (!size) return;
  CHECK(truncate(path, (off_t)size / 2) == 0, "truncating %s", path);
  CHECK(read_damaged(path) > 0, "every entry of a half-cut file read back");
  copy = malloc(size);
  for (size_t page = 0; page < size / 4096; page++) {
    memcpy(copy, bytes, size);
    memset(copy + page * 4096, 0, 4096);
    write_file(path, copy, size);
    bad += read_damaged(path);
  }
  CHECK(bad > 0, "no zeroed page was noticed");
  free(copy);
  free(bytes);
}

static void test_bad_files(void)
{
  char path[4096], noise[8192];
  struct stat sb;
  unsigned x = 12345;
  mkdir(path_in("folder", path), 0755);
  expect_open_error(path, 1, CACHE_ERROR, path);
  expect_open_error(path, 0, CACHE_ERROR, path);
  for (size_t i = 0; i < sizeof noise; i++) noise[i] = (char)((x = x * 1103515245u + 12345u) >> 16);
  write_file(path_in("noise.db", path), noise, sizeof noise);
  expect_open_error(path, 0, CACHE_ERROR, "not a database");
  expect_open_error(path, 1, CACHE_ERROR, "not a database");
  CHECK(stat(path, &sb) == 0 && sb.st_size == (off_t)sizeof noise, "a file that is not a database was changed");
  expect_open_error(path_in("missing.db", path), 0, CACHE_MISS, path);
  CHECK(stat(path, &sb) != 0, "create=0 made %s", path);
  write_file(path_in("empty.db", path), "", 0);
  expect_open_error(path, 0, CACHE_MISS, path);
  test_damaged();
}

/* ---- replacing an entry ---- */

static void test_replace(void)
{
  cache_Db *db = open_db("replace.db", 1);
  if (!db) return;
  cache_Key k = key(8192, 2048, GEN_F16, GEN_SOFTMAX);
  cache_Entry first = entry(&k, 3000, 5), second = entry(&k, 5000, 6), got;
  int64_t r1 = store(db, &k, &first), r2 = store(db, &k, &second);
  CHECK(count_entries(db, filter(0, 0, -1, -1)) == 1, "two stores of one key");
  expect_runs(db, filter(0, 0, -1, -1), 0, 10, (const int64_t[]){ r2, r1 }, 2, "both runs");
  CHECK(cache_get(db, &k, &got) == CACHE_OK, "get: %s", cache_error(db));
  if (got.cubin) {
    same_entry(&got, &second);
    CHECK(got.run == r2, "entry of run %lld, want %lld", (long long)got.run, (long long)r2);
  }
  cache_entry_free(&got);
  cache_entry_free(&first);
  cache_entry_free(&second);
  cache_close(db);
}

/* ---- SHA-256 ---- */

static void expect_sha(const void *data, size_t n, const char *want)
{
  char hex[65];
  cache_sha256(data, n, hex);
  CHECK(strcmp(hex, want) == 0, "sha256 of %zu bytes: %s, want %s", n, hex, want);
}

static void test_sha256(void)
{
  /* n times 'a', for n at the padding's edges (digests from sha256sum) */
  static const struct { size_t n; const char *hex; } as[] = {
    { 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
    { 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
    { 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
    { 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
    { 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c" },
    { 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
  };
  const char *abc56 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  expect_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  expect_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  expect_sha(abc56, strlen(abc56), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  char *a = malloc(1000000);
  memset(a, 'a', 1000000);
  for (size_t i = 0; i < sizeof as / sizeof as[0]; i++) expect_sha(a, as[i].n, as[i].hex);
  free(a);
}

int main(void)
{
  char cmd[64];
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  test_sha256();
  test_round_trip();
  test_ce_keys();
  test_reverified();
  test_corrupt();
  test_log();
  test_clear();
  test_similar();
  test_replace();
  test_bad_files();
  test_path();
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  CHECK(system(cmd) == 0, "removing %s", root);
  return check_done("test_cache");
}
