/*
** test_bundle.c — cache bundles (cache/bundle.c, cache/merge.c) on caches filled by the fake
** backend, whose compiler stands for this host's NVRTC: an export holds no cubin and nothing of
** the exporting host (a byte search for its name, the working and home folders, the user);
** imported into a new cache, every kernel is built again (the same bytes as the fake tuned
** with), marked as a bundle's and to be verified before its first use; filters pick entries
** and a filter matching nothing writes no file; a merge keeps the faster entry of a key, adds
** the others, and puts every run of the bundle in the log under new ids that its entries point
** to; a format-1 bundle whose cubin was forged (checksum recomputed) imports with our own bytes
** and the forged ones appear nowhere in the cache file; an entry of other templates joins the
** log only; --retime (a fake GPU) keeps or drops a bundle's entry by its measured time, not by
** the time the bundle claims, and drops one failing verification; a bundle truncated, with a
** byte flipped or appended, with a wrong key, a config the templates do not make, of a foreign
** schema, or not a bundle at all, is refused with one line and nothing is written.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"
#include "check.h"
#include "fake_backend.h"
#include "reverify.h"

static char root[] = "/tmp/st_bundleXXXXXX";
static gen_State *G;
static cache_Rebuild R;       /* this host, as the tests fake it */
static double gpu_speed = 1;  /* the fake GPU of --retime: the fake's times scaled by this */
static int verify_fails;      /* ... and its verification failing */

/* This host's compiler: the fake's (a config's cubin starts with its index in the problem's
** space, as the fake tuned it: without device limits), so a rebuilt cubin is the tuned one. */
static int rebuild_compile(void *ud, const gen_Problem *p, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  fake_Backend f;
  gen_Problem q = fake_problem(p->rows);
  (void)ud;
  q.cols = p->cols, q.dtype = p->dtype, q.op = p->op;
  if (fake_init(&f, G, &q, 0, 1)) return snprintf(err, errlen, "fake_init: %s", gen_error(G)), 1;
  int rc = fake_compile(&f, k, c, err, errlen);
  fake_free(&f);
  return rc;
}

/* The fake GPU's load: the cubin must be the config's rebuilt one. */
static int retime_load(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t)
{
  fake_Backend *f = ud;
  int i = fake_index(f, k->config);
  if (i < 0 || c->size < sizeof i || memcmp(c->data, &i, sizeof i) != 0)
    return snprintf(t->reason, sizeof t->reason, "not the rebuilt cubin of %s", k->config), TUNE_EFATAL;
  f->loaded[slot] = i;
  return fake_load_figures(t);
}

static int retime_verify(void *ud, int slot, tune_Trial *t)
{
  if (!verify_fails) return fake_verify(ud, slot, t);
  t->max_err = 3e-2;
  return snprintf(t->reason, sizeof t->reason, "max error 3e-2 at row 7"), TUNE_ECONFIG;
}

static int retime_time(void *ud, int slot, int n, double *us, char *err, size_t errlen)
{
  int rc = fake_time(ud, slot, n, us, err, errlen);
  for (int j = 0; j < n && slot >= 0; j++) us[j] *= gpu_speed;
  return rc;
}

/* cache_Rebuild.retime on the fake GPU. */
static int retime(void *ud, cache_Entry *e, cache_Trial *t, char *err, size_t errlen)
{
  fake_Backend f;
  gen_Problem p = fake_problem(e->key.rows);
  (void)ud;
  if (fake_init(&f, G, &p, 0, 1)) return snprintf(err, errlen, "fake_init: %s", gen_error(G)), CACHE_ERROR;
  tune_Backend b = { &f, fake_compile, retime_load, retime_verify, retime_time, fake_unload };
  int rc = tune_retime(&b, e, t, err, errlen);
  fake_free(&f);
  return rc;
}

/* This host: the fake's templates hash and GPU, NVRTC 13.1, driver 13.2; retiming when asked. */
static const cache_Rebuild *here(int retimed)
{
  gen_Problem p = fake_problem(1);
  cache_Key k;
  fake_key(&p, &k);
  memset(&R, 0, sizeof R);
  R.gen = G, R.nvrtc = 13010, R.compile = rebuild_compile;
  R.threads = 1;   /* rebuild_compile reads the space through G, which is one thread's */
  memcpy(R.templates, k.templates, sizeof R.templates);
  snprintf(R.gpu, sizeof R.gpu, "%s", k.gpu);
  R.arch = k.arch, R.sms = k.sms, R.driver = 13020;
  R.retime = retimed ? retime : NULL;
  return &R;
}

static char *path_in(const char *name, char *out)
{
  snprintf(out, 4096, "%s/%s", root, name);
  return out;
}

static cache_Db *open_cache(const char *name)
{
  char path[4096], err[1024];
  cache_Db *db = NULL;
  CHECK(cache_open(&db, path_in(name, path), 1, err, sizeof err) == 0, "open %s: %s", path, err);
  return db;
}

/* Tune rows x 4096 with the fake and store it, every time scaled by speed; the run id. */
static int64_t tune_into(cache_Db *db, int64_t rows, double speed)
{
  char err[1024];
  gen_Problem p = fake_problem(rows);
  int64_t run = 0;
  CHECK(fake_tune_store(G, db, &p, speed, &run, err, sizeof err) == 0, "tune %lld: %s", (long long)rows, err);
  return run;
}

static cache_Key key_of(int64_t rows)
{
  gen_Problem p = fake_problem(rows);
  cache_Key k;
  fake_key(&p, &k);
  return k;
}

/* The entry of rows in db (CACHE_OK expected); free with cache_entry_free. */
static cache_Entry get(cache_Db *db, int64_t rows)
{
  cache_Key k = key_of(rows);
  cache_Entry e;
  memset(&e, 0, sizeof e);
  CHECK(cache_get(db, &k, &e) == CACHE_OK, "get %lld: %s", (long long)rows, cache_error(db));
  return e;
}

/* e's run in db is a run of e's key that chose e's config, with all its trials. */
static void expect_own_run(cache_Db *db, const cache_Entry *e)
{
  cache_Key all;
  cache_Run *r = NULL;
  cache_Trial *t = NULL;
  int n = 0, nt = 0;
  cache_filter_all(&all);
  CHECK(cache_runs(db, &all, e->run, 1, &r, &n) == 0 && n == 1, "run %lld of %s", (long long)e->run, e->config);
  if (n == 1) {
    CHECK(r[0].key.rows == e->key.rows && strcmp(r[0].winner, e->config) == 0, "run %lld chose '%s' for %lld rows",
          (long long)e->run, r[0].winner, (long long)r[0].key.rows);
    CHECK(cache_trials(db, e->run, &t, &nt) == 0 && nt == r[0].configs && nt > 0, "run %lld: %d trials of %d",
          (long long)e->run, nt, r[0].configs);
  }
  free(r);
  free(t);
}

/* The image of bundle name: its format, and one integer from sql on it. */
static long long bundle_query(const char *name, const char *sql, int *format)
{
  char path[4096], err[1024];
  void *image = NULL;
  size_t n = 0;
  sqlite3 *db = NULL;
  long long v = -1;
  CHECK(cache_bundle_read(path_in(name, path), format, &image, &n, err, sizeof err) == 0, "read %s: %s", name, err);
  if (image && sqlite3_open(":memory:", &db) == SQLITE_OK &&
      sqlite3_deserialize(db, "main", image, (sqlite3_int64)n, (sqlite3_int64)n,
                          SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) == SQLITE_OK)
    v = query_int(db, sql);
  sqlite3_close(db);
  return v;
}

static void test_round_trip(void)
{
  char a[4096], out[4096], none[4096], err[1024];
  cache_Db *src = open_cache("a.db"), *dst;
  cache_Bundle b;
  cache_Key f;
  int format = 0;
  for (int64_t rows = 1024; rows <= 4096; rows *= 2) tune_into(src, rows, 1.0);
  cache_close(src);
  path_in("a.db", a);
  cache_filter_all(&f);
  CHECK(cache_export(a, &f, 0, path_in("all.bundle", out), &b, err, sizeof err) == 0, "export: %s", err);
  CHECK(b.entries == 3 && b.runs == 3 && b.trials > 3, "exported %d entries %d runs %d trials", b.entries, b.runs, b.trials);
  CHECK(bundle_query("all.bundle", "SELECT sum(length(cubin)) FROM entries", &format) == 0 && format == 2,
        "format %d, or cubins in the bundle", format);
  f.rows = 2048;
  CHECK(cache_export(a, &f, 0, path_in("one.bundle", out), &b, err, sizeof err) == 0 && b.entries == 1 && b.runs == 1,
        "export 2048: %d entries (%s)", b.entries, err);
  cache_filter_all(&f);
  snprintf(f.gpu, sizeof f.gpu, "NVIDIA A100-SXM4-80GB");
  CHECK(cache_export(a, &f, 0, path_in("none.bundle", none), &b, err, sizeof err) == CACHE_MISS && access(none, F_OK) != 0,
        "a filter matching nothing: '%s'", err);
  CHECK(cache_export(path_in("missing.db", none), &f, 0, out, &b, err, sizeof err) == CACHE_MISS, "no cache: '%s'", err);

  CHECK(cache_import(path_in("b.db", none), path_in("all.bundle", out), here(0), &b, err, sizeof err) == 0, "import: %s", err);
  CHECK(b.added == 3 && b.kept == 0 && b.replaced == 0 && b.same == 3 && b.first_run == 1 && b.last_run == 3,
        "added %d, %d the same bytes, runs %lld-%lld", b.added, b.same, (long long)b.first_run, (long long)b.last_run);
  src = open_cache("a.db"), dst = open_cache("b.db");
  for (int64_t rows = 1024; rows <= 4096; rows *= 2) {
    cache_Entry x = get(src, rows), y = get(dst, rows);
    cache_Key now = key_of(rows);
    CHECK(x.size == y.size && x.cubin && y.cubin && memcmp(x.cubin, y.cubin, x.size) == 0, "cubin of %lld rows", (long long)rows);
    CHECK(strcmp(x.config, y.config) == 0 && strcmp(x.sha256, y.sha256) == 0 && x.us == y.us, "entry of %lld rows", (long long)rows);
    CHECK(strcmp(y.origin, CACHE_BUNDLE) == 0 && y.key.driver == 0 && y.key.nvrtc == R.nvrtc && tune_stale(&now, &y),
          "imported %lld rows: origin '%s', driver %d, nvrtc %d: not to be verified first", (long long)rows, y.origin,
          y.key.driver, y.key.nvrtc);
    expect_own_run(dst, &y);
    cache_entry_free(&x);
    cache_entry_free(&y);
  }
  cache_close(src);
  cache_close(dst);
}

/* The bytes of needle (when it is at least 4 long) are nowhere in the file at path. */
static void expect_absent(const char *path, const char *what, const char *needle)
{
  FILE *f = fopen(path, "rb");
  static char buf[1 << 22];
  size_t n = f ? fread(buf, 1, sizeof buf, f) : 0, len = needle ? strlen(needle) : 0;
  if (f) fclose(f);
  CHECK(n > 0 && n < sizeof buf, "reading %s", path);
  if (len < 4) return;   /* a name this short would be found by chance */
  CHECK(!memmem(buf, n, needle, len), "%s holds %s '%s'", path, what, needle);
}

/* Nothing of this host in a bundle: not its name, the working or home folder, the user, the
** cache's folder; --with-host names the host. */
static void test_no_host(void)
{
  char a[4096], out[4096], host[256] = "", cwd[4096] = "", err[1024];
  cache_Bundle b;
  cache_Key f;
  int format;
  cache_filter_all(&f);
  gethostname(host, sizeof host - 1);
  CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
  CHECK(cache_export(path_in("a.db", a), &f, 0, path_in("all.bundle", out), &b, err, sizeof err) == 0, "export: %s", err);
  expect_absent(out, "the host name", host);
  expect_absent(out, "the working folder", cwd);
  expect_absent(out, "the home folder", getenv("HOME"));
  expect_absent(out, "the user", getenv("USER"));
  expect_absent(out, "the cache's folder", root);
  CHECK(bundle_query("all.bundle", "SELECT count(*) FROM meta WHERE k = 'host'", &format) == 0, "a host row in the bundle");
  CHECK(cache_export(a, &f, 1, path_in("host.bundle", out), &b, err, sizeof err) == 0, "export --with-host: %s", err);
  CHECK(bundle_query("host.bundle", "SELECT count(*) FROM meta WHERE k = 'host'", &format) == 1, "no host row --with-host");
}

/* c holds 1024 rows faster than the bundle's and 2048 slower, and two runs of its own. */
static void test_merge(void)
{
  char c[4096], bundle[4096], err[1024];
  cache_Db *db = open_cache("c.db");
  cache_Bundle b;
  int64_t fast = tune_into(db, 1024, 0.5);
  tune_into(db, 2048, 2.0);
  cache_close(db);
  CHECK(cache_import(path_in("c.db", c), path_in("all.bundle", bundle), here(0), &b, err, sizeof err) == 0, "merge: %s", err);
  CHECK(b.added == 1 && b.kept == 1 && b.replaced == 1, "added %d kept %d replaced %d", b.added, b.kept, b.replaced);
  CHECK(b.first_run == 3 && b.last_run == 5, "runs %lld-%lld, want 3-5", (long long)b.first_run, (long long)b.last_run);
  db = open_cache("c.db");
  CHECK(fake_count_runs(db) == 5, "%d runs: both sides' runs stay in the log", fake_count_runs(db));
  cache_Entry e1 = get(db, 1024), e2 = get(db, 2048), e4 = get(db, 4096);
  CHECK(e1.run == fast, "1024 rows: the faster entry here (run %lld) gave way to run %lld", (long long)fast, (long long)e1.run);
  CHECK(e2.run >= 3 && e4.run >= 3, "bundle entries point to runs %lld, %lld", (long long)e2.run, (long long)e4.run);
  expect_own_run(db, &e1);
  expect_own_run(db, &e2);
  expect_own_run(db, &e4);
  cache_entry_free(&e1);
  cache_entry_free(&e2);
  cache_entry_free(&e4);
  cache_close(db);
}

/* ---- refused bundles ---- */

static size_t file_size(const char *path)
{
  struct stat sb;
  return stat(path, &sb) == 0 ? (size_t)sb.st_size : 0;
}

static void copy_bytes(const char *from, const char *to, size_t n, long flip, int append)
{
  FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
  char *buf = malloc(n + 1);
  CHECK(f && g && buf && fread(buf, 1, n, f) == n, "copying %s", from);
  if (flip >= 0) buf[flip] ^= 0x04;
  if (buf && g) fwrite(buf, 1, n + (append != 0), g);
  if (f) fclose(f);
  if (g) fclose(g);
  free(buf);
}

/* The good bundle's image with sql applied, sealed with a good header of format into name. */
static void reseal_as(const char *name, int format, const char *sql)
{
  char good[4096], out[4096], err[1024];
  void *image = NULL;
  size_t n = 0;
  sqlite3 *db = NULL;
  sqlite3_int64 size = 0;
  int was = 0;
  CHECK(cache_bundle_read(path_in("one.bundle", good), &was, &image, &n, err, sizeof err) == 0, "read: %s", err);
  CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK &&
        sqlite3_deserialize(db, "main", image, (sqlite3_int64)n, (sqlite3_int64)n,
                            SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) == SQLITE_OK &&
        sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
  unsigned char *img = sqlite3_serialize(db, "main", &size, 0);
  CHECK(img && cache_bundle_write(path_in(name, out), format, img, (size_t)size, err, sizeof err) == 0, "seal: %s", err);
  sqlite3_free(img);
  sqlite3_close(db);
}

static void reseal(const char *name, const char *sql)
{
  reseal_as(name, CACHE_BUNDLE_VERSION, sql);
}

/* Importing name into d.db (and into a cache not there yet) is refused with needle in one
** line; d.db keeps its runs and entries, the other is not made. */
static void expect_refused(const char *name, const char *needle)
{
  char d[4096], bundle[4096], fresh[4096], err[1024] = "";
  cache_Bundle b;
  cache_Db *db = open_cache("d.db");
  cache_Key all;
  cache_Entry *es = NULL;
  int before = fake_count_runs(db), n = -1, rc;
  cache_close(db);
  rc = cache_import(path_in("d.db", d), path_in(name, bundle), here(0), &b, err, sizeof err);
  CHECK(rc == CACHE_REFUSED && strstr(err, needle) && !strchr(err, '\n'), "%s: rc %d '%s', want '%s'", name, rc, err, needle);
  rc = cache_import(path_in("fresh.db", fresh), bundle, here(0), &b, err, sizeof err);
  CHECK(rc == CACHE_REFUSED && access(fresh, F_OK) != 0, "%s: rc %d, or made a cache", name, rc);
  db = open_cache("d.db");
  cache_filter_all(&all);
  CHECK(fake_count_runs(db) == before && cache_entries(db, &all, &es, &n) == 0 && n == 1, "%s: wrote %d runs, %d entries",
        name, fake_count_runs(db) - before, n);
  free(es);
  cache_close(db);
}

static void test_refused(void)
{
  char good[4096], bad[4096], a[4096];
  size_t n = file_size(path_in("one.bundle", good));
  cache_Db *db = open_cache("d.db");
  tune_into(db, 8192, 1.0);
  cache_close(db);
  CHECK(n > 1000, "bundle of %zu bytes", n);
  copy_bytes(good, path_in("cut.bundle", bad), n - 1, -1, 0);
  expect_refused("cut.bundle", "truncated");
  copy_bytes(good, bad, n / 2, -1, 0);
  expect_refused("cut.bundle", "truncated");
  copy_bytes(good, bad, 30, -1, 0);
  expect_refused("cut.bundle", "not a softmax-tune bundle");
  copy_bytes(good, bad, n, -1, 1);
  expect_refused("cut.bundle", "appended");
  const long flips[] = { 3, 25, 60, 200, (long)n / 2, (long)n - 1 };
  for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    copy_bytes(good, path_in("flip.bundle", bad), n, flips[i], 0);
    expect_refused("flip.bundle", "bundle");
  }
  copy_bytes(good, path_in("flip.bundle", bad), n, (long)n / 2, 0);
  expect_refused("flip.bundle", "SHA-256");
  expect_refused("missing.bundle", "cannot read");
  path_in("a.db", a);
  copy_bytes(a, path_in("cache.bundle", bad), file_size(a), -1, 0);
  expect_refused("cache.bundle", "starts with 'SQLite format 3");
  reseal("rows.bundle", "UPDATE entries SET rows = rows + 1");
  expect_refused("rows.bundle", "its run in the bundle does not have");
  reseal("op.bundle", "UPDATE entries SET op = 'softmax2'; UPDATE runs SET op = 'softmax2'");
  expect_refused("op.bundle", "unknown op 'softmax2'");
  reseal("dtype.bundle", "UPDATE entries SET dtype = 'f64'");
  expect_refused("dtype.bundle", "unknown dtype");
  reseal("tpl.bundle", "UPDATE entries SET templates = 'xyz'");
  expect_refused("tpl.bundle", "template hash");
  reseal("config.bundle", "UPDATE entries SET config = 'threads=7'; UPDATE runs SET winner = 'threads=7'");
  expect_refused("config.bundle", "templates do not make its config threads=7");
  reseal("trials.bundle", "UPDATE trials SET run = 99");
  expect_refused("trials.bundle", "run 99");
  reseal("v2.bundle", "UPDATE meta SET v = '2' WHERE k = 'schema'");
  expect_refused("v2.bundle", "foreign schema: version 2");
  reseal("meta.bundle", "DELETE FROM meta WHERE k = 'bundle'");
  expect_refused("meta.bundle", "not a format-2 bundle");
  reseal_as("v1.bundle", 1, "SELECT 1");
  expect_refused("v1.bundle", "foreign schema: version 4, a format-1 bundle has 3");
  reseal("cols.bundle", "ALTER TABLE entries ADD COLUMN extra INTEGER");
  expect_refused("cols.bundle", "foreign schema: its entries table");
  reseal("ok.bundle", "SELECT 1");   /* the resealing itself is sound */
  char err[1024];
  cache_Bundle b;
  CHECK(cache_import(path_in("d.db", a), path_in("ok.bundle", bad), here(0), &b, err, sizeof err) == 0 && b.added == 1,
        "a resealed good bundle: %s", err);
}

/* ---- what an import trusts ---- */

/* A format-1 bundle (schema 3, cubins inside) whose cubin was replaced and its checksum
** recomputed: imported with the cubin built here; the forged bytes are nowhere in the cache. */
static void test_forged(void)
{
  static const char forged[] = "FORGED-CUBIN: any GPU code at all";
  char sql[1024], sum[65], path[4096], bundle[4096], err[1024];
  cache_Bundle b;
  cache_sha256(forged, strlen(forged), sum);
  snprintf(sql, sizeof sql, "ALTER TABLE entries DROP COLUMN origin; ALTER TABLE runs DROP COLUMN origin;"
           "UPDATE meta SET v = '3' WHERE k = 'schema'; UPDATE meta SET v = '1' WHERE k = 'bundle';"
           "UPDATE entries SET cubin = CAST('%s' AS BLOB), sha256 = '%s', us = 0.001; VACUUM", forged, sum);
  reseal_as("forged.bundle", 1, sql);
  CHECK(cache_import(path_in("forged.db", path), path_in("forged.bundle", bundle), here(0), &b, err, sizeof err) == 0 &&
        b.format == 1 && b.added == 1 && b.same == 0, "a format-1 bundle: format %d, %d added (%s)", b.format, b.added, err);
  cache_Db *db = open_cache("forged.db"), *src = open_cache("a.db");
  cache_Entry e = get(db, 2048), x = get(src, 2048);
  CHECK(e.size == x.size && e.cubin && x.cubin && memcmp(e.cubin, x.cubin, e.size) == 0, "not the cubin built here");
  cache_entry_free(&e);
  cache_entry_free(&x);
  cache_close(db);
  cache_close(src);
  expect_absent(path, "the forged cubin", forged);
}

/* An entry of other templates is not imported; its run joins the log. */
static void test_other_templates(void)
{
  char path[4096], bundle[4096], err[1024];
  cache_Bundle b;
  reseal("tpl2.bundle", "UPDATE entries SET templates = printf('%.64c', 'e'); UPDATE runs SET templates = printf('%.64c', 'e')");
  CHECK(cache_import(path_in("tpl2.db", path), path_in("tpl2.bundle", bundle), here(0), &b, err, sizeof err) == 0 &&
        b.foreign == 1 && b.added == 0 && b.runs == 1, "other templates: %d foreign, %d added (%s)", b.foreign, b.added, err);
  cache_Db *db = open_cache("tpl2.db");
  cache_Key all;
  cache_Entry *es = NULL;
  int n = -1;
  cache_filter_all(&all);
  CHECK(cache_entries(db, &all, &es, &n) == 0 && n == 0 && fake_count_runs(db) == 1, "%d entries, %d runs", n, fake_count_runs(db));
  free(es);
  cache_close(db);
}

/* A cache holding 2048 rows tuned at the fake's own speed takes bundle name (one.bundle with
** its claimed time set to claim), retimed on a GPU whose times are speed times the fake's:
** want_replaced, or not; 0 when verification fails; the entry and the log after. */
static void retime_case(const char *name, double claim, double speed, int want_replaced)
{
  char path[4096], bundle[4096], sql[128], err[1024];
  cache_Bundle b;
  cache_Db *db = open_cache(name);
  int64_t own = tune_into(db, 2048, 1.0);
  cache_Entry before = get(db, 2048);
  cache_close(db);
  snprintf(sql, sizeof sql, "UPDATE entries SET us = %g", claim);
  reseal("claim.bundle", sql);
  gpu_speed = speed;
  int rc = cache_import(path_in(name, path), path_in("claim.bundle", bundle), here(1), &b, err, sizeof err);
  CHECK(rc == 0 && b.replaced == want_replaced && b.retimed == !verify_fails && b.dropped == verify_fails,
        "%s: rc %d, %d replaced, %d retimed, %d dropped (%s)", name, rc, b.replaced, b.retimed, b.dropped, err);
  db = open_cache(name);
  cache_Entry e = get(db, 2048);
  if (want_replaced) {
    CHECK(strcmp(e.origin, CACHE_RETIMED) == 0 && e.key.driver == R.driver && fabs(e.us - before.us * speed) < 1e-6 * e.us,
          "%s: origin '%s', driver %d, %.3f us, want the measured %.3f", name, e.origin, e.key.driver, e.us, before.us * speed);
  } else {
    CHECK(e.run == own && !e.origin[0] && e.us == before.us, "%s: the entry here (run %lld) gave way to run %lld", name,
          (long long)own, (long long)e.run);
  }
  cache_Run *r = NULL;
  cache_Key all;
  int n = 0;
  cache_filter_all(&all);
  CHECK(cache_runs(db, &all, 0, 1, &r, &n) == 0 && n == 1 &&
        strcmp(r[0].status, verify_fails ? "retime failed" : "retimed") == 0 && !r[0].origin[0],
        "%s: last run '%s'", name, n ? r[0].status : "");
  free(r);
  r = NULL;
  CHECK(cache_runs(db, &all, b.first_run, 1, &r, &n) == 0 && n == 1 && strcmp(r[0].origin, CACHE_BUNDLE) == 0,
        "%s: the bundle's run is not marked as a bundle's", name);
  free(r);
  cache_entry_free(&e);
  cache_entry_free(&before);
  cache_close(db);
}

static void test_retime(void)
{
  char path[4096], bundle[4096], err[1024];
  cache_Bundle b;
  cache_Db *db = open_cache("claims.db");
  tune_into(db, 2048, 1.0);
  cache_close(db);
  reseal("claim.bundle", "UPDATE entries SET us = 0.001");
  CHECK(cache_import(path_in("claims.db", path), path_in("claim.bundle", bundle), here(0), &b, err, sizeof err) == 0 &&
        b.replaced == 1, "without --retime the claim decides: %d replaced (%s)", b.replaced, err);
  retime_case("impossible.db", 0.001, 2.0, 0);    /* claims 0.001 us, measures twice the time here: dropped */
  retime_case("modest.db", 1e9, 0.5, 1);          /* claims 1e9 us, measures half the time here: taken */
  verify_fails = 1;
  retime_case("wrong.db", 0.001, 0.5, 0);         /* faster, but wrong: dropped */
  verify_fails = 0;
  gpu_speed = 1;
}

/* A sound header over a damaged image: 200 images of the good bundle with 1 to 4 bytes changed,
** each imported into one cache: refused with one line and nothing written, or imported with
** its entry whole (changed bytes in the log's rows are no error). */
static void test_mutated(void)
{
  char good[4096], bad[4096], err[1024];
  void *image = NULL;
  size_t n = 0;
  unsigned seed = 2463534242u;
  int refused = 0;
  int format = 0;
  CHECK(cache_bundle_read(path_in("one.bundle", good), &format, &image, &n, err, sizeof err) == 0, "read: %s", err);
  unsigned char *copy = malloc(n);
  cache_Db *db = open_cache("mutants.db");
  for (int i = 0; i < 200 && copy && db; i++) {
    cache_Bundle b;
    int before = fake_count_runs(db);
    memcpy(copy, image, n);
    for (unsigned k = fake_rand(&seed) % 4; k < 4; k++) copy[fake_rand(&seed) % n] ^= (unsigned char)(1 + fake_rand(&seed) % 255);
    cache_bundle_write(path_in("mutant.bundle", bad), format, copy, n, err, sizeof err);
    int rc = cache_import(path_in("mutants.db", good), bad, here(0), &b, err, sizeof err);
    CHECK(rc == 0 || ((rc == CACHE_REFUSED || rc == CACHE_ERROR) && !strchr(err, '\n') && fake_count_runs(db) == before),
          "mutant %d: rc %d '%s'", i, rc, err);
    refused += rc != 0;
    if (rc == 0) {   /* its entry rebuilt whole, or (other templates) in the log only */
      cache_Key k = key_of(2048);
      cache_Entry e;
      int got = cache_get(db, &k, &e);
      CHECK(got == CACHE_OK || got == CACHE_MISS, "mutant %d: %s", i, cache_error(db));
      if (got == CACHE_OK) cache_entry_free(&e);
    }
  }
  CHECK(refused > 20, "only %d of 200 damaged images refused", refused);
  cache_close(db);
  free(copy);
  sqlite3_free(image);
}

int main(void)
{
  char err[1024], cmd[64];
  if (!mkdtemp(root)) return perror("mkdtemp"), 1;
  CHECK(gen_open(&G, NULL, err, sizeof err) == 0, "gen_open: %s", err);
  if (G) {
    test_round_trip();
    test_no_host();
    test_merge();
    test_refused();
    test_forged();
    test_other_templates();
    test_retime();
    test_mutated();
  }
  gen_close(G);
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  CHECK(system(cmd) == 0, "removing %s", root);
  return check_done("test_bundle");
}
