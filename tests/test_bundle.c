/*
** test_bundle.c — cache bundles (cache/bundle.c, cache/merge.c) on caches filled by the fake
** backend: an export imported into a new cache gives byte-identical cubins, the same configs and
** the runs with their trials; filters pick entries and a filter matching nothing writes no file;
** a merge keeps the faster entry of a key, adds the others, and puts every run of the bundle in
** the log under new ids that its entries point to; a bundle truncated, with a byte flipped or
** appended, with a wrong key, of a foreign schema, or not a bundle at all, is refused with one
** line and nothing is written.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"
#include "check.h"
#include "fake_backend.h"

static char root[] = "/tmp/st_bundleXXXXXX";
static gen_State *G;

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

static void test_round_trip(void)
{
  char a[4096], out[4096], none[4096], err[1024];
  cache_Db *src = open_cache("a.db"), *dst;
  cache_Bundle b;
  cache_Key f;
  for (int64_t rows = 1024; rows <= 4096; rows *= 2) tune_into(src, rows, 1.0);
  cache_close(src);
  path_in("a.db", a);
  cache_filter_all(&f);
  CHECK(cache_export(a, &f, path_in("all.bundle", out), &b, err, sizeof err) == 0, "export: %s", err);
  CHECK(b.entries == 3 && b.runs == 3 && b.trials > 3, "exported %d entries %d runs %d trials", b.entries, b.runs, b.trials);
  f.rows = 2048;
  CHECK(cache_export(a, &f, path_in("one.bundle", out), &b, err, sizeof err) == 0 && b.entries == 1 && b.runs == 1,
        "export 2048: %d entries (%s)", b.entries, err);
  cache_filter_all(&f);
  snprintf(f.gpu, sizeof f.gpu, "NVIDIA A100-SXM4-80GB");
  CHECK(cache_export(a, &f, path_in("none.bundle", none), &b, err, sizeof err) == CACHE_MISS && access(none, F_OK) != 0,
        "a filter matching nothing: '%s'", err);
  CHECK(cache_export(path_in("missing.db", none), &f, out, &b, err, sizeof err) == CACHE_MISS, "no cache: '%s'", err);

  CHECK(cache_import(path_in("b.db", none), path_in("all.bundle", out), &b, err, sizeof err) == 0, "import: %s", err);
  CHECK(b.added == 3 && b.kept == 0 && b.replaced == 0 && b.first_run == 1 && b.last_run == 3, "added %d, runs %lld-%lld",
        b.added, (long long)b.first_run, (long long)b.last_run);
  src = open_cache("a.db"), dst = open_cache("b.db");
  for (int64_t rows = 1024; rows <= 4096; rows *= 2) {
    cache_Entry x = get(src, rows), y = get(dst, rows);
    CHECK(x.size == y.size && x.cubin && y.cubin && memcmp(x.cubin, y.cubin, x.size) == 0, "cubin of %lld rows", (long long)rows);
    CHECK(strcmp(x.config, y.config) == 0 && strcmp(x.sha256, y.sha256) == 0 && x.us == y.us, "entry of %lld rows", (long long)rows);
    expect_own_run(dst, &y);
    cache_entry_free(&x);
    cache_entry_free(&y);
  }
  cache_close(src);
  cache_close(dst);
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
  CHECK(cache_import(path_in("c.db", c), path_in("all.bundle", bundle), &b, err, sizeof err) == 0, "merge: %s", err);
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

/* The good bundle's image with sql applied, sealed with a good header into name. */
static void reseal(const char *name, const char *sql)
{
  char good[4096], out[4096], err[1024];
  void *image = NULL;
  size_t n = 0;
  sqlite3 *db = NULL;
  sqlite3_int64 size = 0;
  CHECK(cache_bundle_read(path_in("one.bundle", good), &image, &n, err, sizeof err) == 0, "read: %s", err);
  CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK &&
        sqlite3_deserialize(db, "main", image, (sqlite3_int64)n, (sqlite3_int64)n,
                            SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) == SQLITE_OK &&
        sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
  unsigned char *img = sqlite3_serialize(db, "main", &size, 0);
  CHECK(img && cache_bundle_write(path_in(name, out), img, (size_t)size, err, sizeof err) == 0, "seal: %s", err);
  sqlite3_free(img);
  sqlite3_close(db);
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
  rc = cache_import(path_in("d.db", d), path_in(name, bundle), &b, err, sizeof err);
  CHECK(rc == CACHE_REFUSED && strstr(err, needle) && !strchr(err, '\n'), "%s: rc %d '%s', want '%s'", name, rc, err, needle);
  rc = cache_import(path_in("fresh.db", fresh), bundle, &b, err, sizeof err);
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
  reseal("dtype.bundle", "UPDATE entries SET dtype = 'f64'");
  expect_refused("dtype.bundle", "unknown dtype");
  reseal("tpl.bundle", "UPDATE entries SET templates = 'xyz'");
  expect_refused("tpl.bundle", "template hash");
  reseal("cubin.bundle", "UPDATE entries SET cubin = X'00112233'");
  expect_refused("cubin.bundle", "checksum");
  reseal("trials.bundle", "UPDATE trials SET run = 99");
  expect_refused("trials.bundle", "run 99");
  reseal("v2.bundle", "UPDATE meta SET v = '2' WHERE k = 'schema'");
  expect_refused("v2.bundle", "foreign schema: version 2");
  reseal("meta.bundle", "DELETE FROM meta WHERE k = 'bundle'");
  expect_refused("meta.bundle", "not a bundle");
  reseal("cols.bundle", "ALTER TABLE entries ADD COLUMN extra INTEGER");
  expect_refused("cols.bundle", "foreign schema: its entries table");
  reseal("ok.bundle", "SELECT 1");   /* the resealing itself is sound */
  char err[1024];
  cache_Bundle b;
  CHECK(cache_import(path_in("d.db", a), path_in("ok.bundle", bad), &b, err, sizeof err) == 0 && b.added == 1,
        "a resealed good bundle: %s", err);
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
  CHECK(cache_bundle_read(path_in("one.bundle", good), &image, &n, err, sizeof err) == 0, "read: %s", err);
  unsigned char *copy = malloc(n);
  cache_Db *db = open_cache("mutants.db");
  for (int i = 0; i < 200 && copy && db; i++) {
    cache_Bundle b;
    int before = fake_count_runs(db);
    memcpy(copy, image, n);
    for (unsigned k = fake_rand(&seed) % 4; k < 4; k++) copy[fake_rand(&seed) % n] ^= (unsigned char)(1 + fake_rand(&seed) % 255);
    cache_bundle_write(path_in("mutant.bundle", bad), copy, n, err, sizeof err);
    int rc = cache_import(path_in("mutants.db", good), bad, &b, err, sizeof err);
    CHECK(rc == 0 || (rc == CACHE_REFUSED && !strchr(err, '\n') && fake_count_runs(db) == before), "mutant %d: rc %d '%s'",
          i, rc, err);
    refused += rc != 0;
    if (rc == 0) {
      cache_Entry e = get(db, 2048);
      cache_entry_free(&e);
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
    test_merge();
    test_refused();
    test_mutated();
  }
  gen_close(G);
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  CHECK(system(cmd) == 0, "removing %s", root);
  return check_done("test_bundle");
}
