/*
** test_reverify.c — an entry tuned under another driver or NVRTC is verified again, not tuned
** again (tuner/reverify.c), on the fake backend: a winner stored under driver 13.0 is found
** under 13.1, passes and then records 13.1 with its tuning run kept, and the log holds a
** "reverified" run of one trial; under yet another NVRTC a failing verification removes it and
** logs why; a lost device changes nothing and logs nothing.
*/
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"
#include "fake_backend.h"
#include "reverify.h"

static char root[] = "/tmp/st_reverifyXXXXXX";
static int verify_fails, device_lost;

/* The fake's load, for any slot: the cubin must be the winner's (it starts with its index). */
static int any_slot_load(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t)
{
  fake_Backend *f = ud;
  if (device_lost) return snprintf(t->reason, sizeof t->reason, "device lost"), TUNE_EFATAL;
  if (c->size < sizeof f->best || memcmp(c->data, &f->best, sizeof f->best) != 0 || strcmp(k->config, f->configs[f->best]))
    return snprintf(t->reason, sizeof t->reason, "not the winner's cubin"), TUNE_EFATAL;
  return fake_load(ud, *(const int *)c->data, k, c, t);
}

static int maybe_failing_verify(void *ud, int slot, tune_Trial *t)
{
  if (!verify_fails) return fake_verify(ud, slot, t);
  t->max_err = 3e-2;
  return snprintf(t->reason, sizeof t->reason, "max error 3e-2 at row 7"), TUNE_ECONFIG;
}

/* The last run in the log: its status, and its one trial's status and reason. */
static void expect_last_run(cache_Db *db, const char *status, const char *trial, const char *reason)
{
  cache_Key all;
  cache_Run *r = NULL;
  cache_Trial *t = NULL;
  int n = 0, nt = 0;
  cache_filter_all(&all);
  CHECK(cache_runs(db, &all, 0, 1, &r, &n) == 0 && n == 1, "runs: %s", cache_error(db));
  if (n == 1) {
    CHECK(strcmp(r[0].status, status) == 0 && r[0].configs == 1, "last run '%s', want '%s'", r[0].status, status);
    CHECK(cache_trials(db, r[0].id, &t, &nt) == 0 && nt == 1, "%d trials", nt);
    if (nt == 1)
      CHECK(strcmp(t[0].status, trial) == 0 && strstr(t[0].reason, reason), "trial '%s' '%s'", t[0].status, t[0].reason);
  }
  free(r);
  free(t);
}

/* Look k up: found, made under driver/nvrtc, from run. */
static void expect_entry(cache_Db *db, const cache_Key *k, int driver, int nvrtc, int64_t run, cache_Entry *e)
{
  int rc = cache_get(db, k, e);
  CHECK(rc == CACHE_OK && e->key.driver == driver && e->key.nvrtc == nvrtc && e->run == run,
        "rc %d driver %d nvrtc %d run %lld, want %d %d %lld", rc, e->key.driver, e->key.nvrtc, (long long)e->run, driver,
        nvrtc, (long long)run);
}

static void test_reverify(gen_State *g, cache_Db *db)
{
  char err[1024];
  gen_Problem p = fake_problem(2048);
  fake_Backend f;
  cache_Key k, now;
  cache_Entry e;
  int64_t run = 0;
  CHECK(fake_tune_store(g, db, &p, 1.0, &run, err, sizeof err) == 0, "tune: %s", err);
  if (fake_init(&f, g, &p, 0, 1)) {
    CHECK(0, "fake_init: %s", gen_error(g));
    return;
  }
  fake_key(&p, &k);
  tune_Backend b = fake_backend(&f);
  b.load = any_slot_load, b.verify = maybe_failing_verify;

  now = k, now.driver = 13010;
  expect_entry(db, &now, 13000, 13000, run, &e);
  CHECK(tune_stale(&now, &e) && !tune_stale(&k, &e), "stale");
  device_lost = 1;   /* the device fails: nothing changes, nothing is logged */
  CHECK(tune_reverify(db, &now, &e, &b, err, sizeof err) == CACHE_ERROR && strstr(err, "device lost"), "lost: %s", err);
  CHECK(fake_count_runs(db) == 1, "a lost device logged a run");
  device_lost = 0;
  CHECK(tune_reverify(db, &now, &e, &b, err, sizeof err) == 0 && !err[0], "passes: '%s'", err);
  cache_entry_free(&e);
  expect_entry(db, &now, 13010, 13000, run, &e);
  CHECK(!tune_stale(&now, &e), "still stale after passing");
  expect_last_run(db, "reverified", "ok", "");

  now.nvrtc = 13020, verify_fails = 1;
  CHECK(tune_reverify(db, &now, &e, &b, err, sizeof err) == CACHE_MISS && strstr(err, "row 7"), "fails: '%s'", err);
  cache_entry_free(&e);
  CHECK(cache_get(db, &now, &e) == CACHE_MISS && cache_get(db, &k, &e) == CACHE_MISS, "a failed entry stayed");
  expect_last_run(db, "reverify failed", "failed", "row 7");
  CHECK(fake_count_runs(db) == 3, "%d runs: the tuning and two verifications", fake_count_runs(db));
  fake_free(&f);
}

int main(void)
{
  char path[4096], err[1024], cmd[64];
  gen_State *g = NULL;
  cache_Db *db = NULL;
  if (!mkdtemp(root)) return perror("mkdtemp"), 1;
  snprintf(path, sizeof path, "%s/cache.db", root);
  CHECK(gen_open(&g, NULL, err, sizeof err) == 0, "gen_open: %s", err);
  CHECK(cache_open(&db, path, 1, err, sizeof err) == 0, "cache_open: %s", err);
  if (g && db) test_reverify(g, db);
  cache_close(db);
  gen_close(g);
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  CHECK(system(cmd) == 0, "removing %s", root);
  return check_done("test_reverify");
}
