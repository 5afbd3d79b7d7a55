/*
** report_cache.c — fills a cache for the report tests (tests/report.sh) by sweeping with the
** fake backend (fake_backend.h), wrapped so that some configs fail to compile, are pruned at
** load or fail verification, with reasons that hold HTML's special characters: runs of five
** problems (dtypes, ops, the cross-entropy ones too, one on a second GPU whose name needs escaping), one problem tuned
** twice, and one run where every config fails. With --schema1 the file is then rewritten as
** a cache of schema version 1 (release 0.1's): the same log tables, entries without the
** launch columns that version 2 added.
** usage: report_cache DB [--schema1]; exit 0 when filled.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fake_backend.h"

typedef struct Mixed {
  fake_Backend f;
  int fail_all;   /* every config fails verification: a run with no winner */
} Mixed;

static int mixed_compile(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  Mixed *m = ud;
  if (fake_index(&m->f, k->config) % 17 == 5)
    return snprintf(err, errlen, "ptxas error: entry uses too much shared data (<0x%x> & \"more\" 'than' allowed)", 0x12000), 1;
  return fake_compile(&m->f, k, c, err, errlen);
}

static int mixed_load(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t)
{
  Mixed *m = ud;
  if (slot % 9 == 4) return snprintf(t->reason, sizeof t->reason, "spills: %d bytes of local memory per thread", 32 * (slot % 4 + 1)), TUNE_ECONFIG;
  if (slot % 13 == 7) return snprintf(t->reason, sizeof t->reason, "%d registers allow %d threads per block, not 1024", 64 + slot % 3, 896), TUNE_ECONFIG;
  return fake_load(&m->f, slot, k, c, t);
}

static int mixed_verify(void *ud, int slot, tune_Trial *t)
{
  Mixed *m = ud;
  if (m->fail_all || slot % 11 == 3)
    return snprintf(t->reason, sizeof t->reason, "wrong: %d elements out of tolerance; <script>alert(%d)</script>", slot + 1, slot), TUNE_ECONFIG;
  return fake_verify(&m->f, slot, t);
}

/* Fractions of copy from 0.3 to 1.0, bunched near the top as real sweeps are; the copy 80 us. */
static int mixed_time(void *ud, int slot, int n, double *us, char *err, size_t errlen)
{
  Mixed *m = ud;
  double rank = (double)((slot * 37) % m->f.n) / m->f.n;
  for (int j = 0; j < n; j++) us[j] = slot < 0 ? 80. : 80. / (1.0 - 0.7 * pow(rank, 1.5) + 0.02 * (slot % 3 == 0));
  (void)err, (void)errlen;
  return TUNE_EOK;
}

static int tune_one(gen_State *g, cache_Db *db, gen_Problem p, const char *gpu, int fail_all)
{
  Mixed m = { .fail_all = fail_all };
  tune_Backend b = { &m, mixed_compile, mixed_load, mixed_verify, mixed_time, fake_unload };
  tune_Result r;
  cache_Key k;
  char err[1024];
  int64_t run;
  int rc;
  if (fake_init(&m.f, g, &p, 0, 1)) return fprintf(stderr, "report_cache: no space: %s\n", gen_error(g)), 1;
  fake_key(&p, &k);
  if (gpu) snprintf(k.gpu, sizeof k.gpu, "%s", gpu);
  rc = fake_tune_on(g, &p, &b, &r, err, sizeof err);
  if (rc == 0) rc = tune_store(db, &k, &r, &run, err, sizeof err);
  if (rc) fprintf(stderr, "report_cache: %lldx%lld: %s\n", (long long)p.rows, (long long)p.cols, err);
  else printf("run %lld: %lldx%lld %s %s, %d trials\n", (long long)run, (long long)p.rows, (long long)p.cols,
              gen_dtype_name(p.dtype), gen_op_name(p.op), r.ntrials);
  tune_result_free(&r);
  fake_free(&m.f);
  return rc;
}

/* Release 0.1's schema (version 1), the log of path copied in. */
static const char *const SCHEMA1 =
  "CREATE TABLE old.meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
  "INSERT INTO old.meta VALUES('schema', '1');"
  "CREATE TABLE old.entries("
  "  gpu TEXT NOT NULL, arch INTEGER NOT NULL, sms INTEGER NOT NULL, driver INTEGER NOT NULL,"
  "  nvrtc INTEGER NOT NULL, templates TEXT NOT NULL, dtype TEXT NOT NULL, op TEXT NOT NULL,"
  "  rows INTEGER NOT NULL, cols INTEGER NOT NULL,"
  "  config TEXT NOT NULL, kernel TEXT NOT NULL, threads INTEGER NOT NULL, rows_per_block INTEGER NOT NULL,"
  "  blocks_per_row INTEGER NOT NULL, cluster INTEGER NOT NULL, smem INTEGER NOT NULL,"
  "  cubin BLOB NOT NULL, sha256 TEXT NOT NULL, us REAL, gbps REAL, frac REAL, copy_us REAL,"
  "  run INTEGER, created TEXT NOT NULL,"
  "  PRIMARY KEY(gpu, arch, sms, driver, nvrtc, templates, dtype, op, rows, cols));"
  "CREATE TABLE old.runs("
  "  id INTEGER PRIMARY KEY, started TEXT NOT NULL, seconds REAL, status TEXT NOT NULL,"
  "  gpu TEXT NOT NULL, arch INTEGER, sms INTEGER, driver INTEGER, nvrtc INTEGER, templates TEXT,"
  "  dtype TEXT NOT NULL, op TEXT NOT NULL, rows INTEGER NOT NULL, cols INTEGER NOT NULL,"
  "  configs INTEGER, verified INTEGER, pruned INTEGER, failed INTEGER,"
  "  winner TEXT, winner_us REAL, copy_us REAL, frac REAL);"
  "CREATE TABLE old.trials("
  "  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL,"
  "  config TEXT NOT NULL, status TEXT NOT NULL, reason TEXT,"
  "  regs INTEGER, local_bytes INTEGER, smem INTEGER, blocks_sm INTEGER, occupancy REAL,"
  "  compile_ms REAL, us REAL, gbps REAL, frac REAL, max_err REAL, finalist INTEGER,"
  "  PRIMARY KEY(run, idx));"
  "INSERT INTO old.runs SELECT id, started, seconds, status, gpu, arch, sms, driver, nvrtc, templates, dtype, op, rows,"
  "  cols, configs, verified, pruned, failed, winner, winner_us, copy_us, frac FROM main.runs;"
  "INSERT INTO old.trials SELECT * FROM main.trials;"
  "INSERT INTO old.entries SELECT gpu, arch, sms, driver, nvrtc, templates, dtype, op, rows, cols, config, kernel,"
  "  threads, rows_per_block, blocks_per_row, cluster, smem, cubin, sha256, us, gbps, frac, copy_us, run, created"
  "  FROM main.entries;";

/* path's log and entries into a new schema-1 file at path, replacing it. */
static int to_schema1(const char *path)
{
  char old[4200], *msg = NULL;
  sqlite3 *db;
  snprintf(old, sizeof old, "%s.v1", path);
  unlink(old);
  int rc = sqlite3_open(path, &db) != SQLITE_OK;
  char *attach = sqlite3_mprintf("ATTACH %Q AS old", old);
  if (!rc && (sqlite3_exec(db, attach, NULL, NULL, &msg) || sqlite3_exec(db, SCHEMA1, NULL, NULL, &msg))) rc = 1;
  if (rc) fprintf(stderr, "report_cache: schema 1: %s\n", msg ? msg : sqlite3_errmsg(db));
  sqlite3_free(attach);
  sqlite3_free(msg);
  sqlite3_close(db);
  if (!rc && rename(old, path)) rc = 1, perror("report_cache: rename");
  unlink(old);
  return rc;
}

int main(int argc, char **argv)
{
  static const struct { int64_t rows, cols; int dtype, op, twice, fail_all; const char *gpu; } PROBLEMS[] = {
    { 4096, 4096, GEN_F32, GEN_SOFTMAX, 1, 0, NULL },    { 32, 16384, GEN_BF16, GEN_LOG_SOFTMAX, 0, 0, NULL },
    { 8, 262144, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },     { 1024, 256, GEN_F16, GEN_SOFTMAX, 0, 0, "Fake <GPU> & \"B\"" },
    { 64, 1000, GEN_F32, GEN_SOFTMAX, 0, 1, NULL },
    /* the cross-entropy ops: their names, bytes (labels, loss, lse a row) and floors in log and report */
    { 256, 32000, GEN_BF16, GEN_CE, 0, 0, NULL },        { 256, 32000, GEN_BF16, GEN_CE_LOSS, 0, 0, NULL },
    /* enough f32 softmax problems that report --dtype f32 draws narrow bars, the longest label first */
    { 1048576, 128, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },  { 32768, 256, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },
    { 2048, 512, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },     { 16384, 768, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },
    { 4096, 1024, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },    { 1024, 1536, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },
    { 512, 2048, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },     { 256, 3072, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },
    { 2000, 6000, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },    { 128, 8192, GEN_F32, GEN_SOFTMAX, 0, 0, NULL },
  };
  char err[1024];
  gen_State *g;
  cache_Db *db;
  int rc = 0;
  if (argc < 2 || (argc == 3 && strcmp(argv[2], "--schema1")) || argc > 3)
    return fprintf(stderr, "usage: report_cache DB [--schema1]\n"), 2;
  unlink(argv[1]);
  if (gen_open(&g, NULL, err, sizeof err) || cache_open(&db, argv[1], 1, err, sizeof err))
    return fprintf(stderr, "report_cache: %s\n", err), 1;
  for (size_t i = 0; i < sizeof PROBLEMS / sizeof PROBLEMS[0] && !rc; i++) {
    gen_Problem p = { .rows = PROBLEMS[i].rows, .cols = PROBLEMS[i].cols, .dtype = PROBLEMS[i].dtype,
                      .op = PROBLEMS[i].op, .arch = 90 };
    for (int k = 0; k <= PROBLEMS[i].twice && !rc; k++) rc = tune_one(g, db, p, PROBLEMS[i].gpu, PROBLEMS[i].fail_all);
  }
  cache_close(db);
  gen_close(g);
  if (!rc && argc == 3) rc = to_schema1(argv[1]);
  return rc;
}
