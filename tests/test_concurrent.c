/*
** test_concurrent.c — several tuners share one cache. 4 processes (fork), released at once,
** each tune (the fake backend of fake_backend.h) and store, ROUNDS times, one key they all
** share and one key of their own, opening the cache each round and reading the shared entry
** back; some winners have a cubin of a MB so that transactions overlap. The cache file does not
** exist at the start, so the processes also race to create it. Done SCENARIOS times, each on a
** fresh file. Every process must exit 0 (the busy timeout makes them wait, not fail); at the end
** each key has exactly one entry, whose cubin passes its checksum and whose run is one of that
** key's; there are as many runs as stores, each with all its trials; PRAGMA integrity_check ok.
** Then, deterministically, the moment of that race that loses a tuner (check_open_waits).
**
** test_concurrent --make-cache PATH: store one fake run and its entry in PATH and exit (a cache
** with content, for bad_input.sh).
*/
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"
#include "fake_backend.h"
#include "gen.h"
#include "tune.h"

#define NPROC 4
#define ROUNDS 3
#define SCENARIOS 3
#define SHARED_ROWS 1024
#define OWN_ROWS(p) (2048 + 8 * (p))

/* Tune rows x 4096 on the fake and store it; 0 or a message in err. */
static int tune_and_store(gen_State *g, cache_Db *db, int64_t rows, unsigned seed, size_t big, char *err, size_t errlen)
{
  fake_Backend f;
  tune_Result r;
  cache_Key k;
  int64_t run;
  gen_Problem p = fake_problem(rows);
  if (fake_init(&f, g, &p, 200, seed)) return snprintf(err, errlen, "fake_init: %s", gen_error(g)), 1;
  f.big_bytes = big;
  int rc = fake_tune(g, &p, &f, &r, err, errlen);
  if (rc == 0 && r.winner != f.best) rc = 1, snprintf(err, errlen, "the fake's fastest config did not win");
  fake_key(&p, &k);
  if (rc == 0) rc = tune_store(db, &k, &r, &run, err, errlen);
  tune_result_free(&r);
  fake_free(&f);
  return rc;
}

static int make_cache(const char *path);

/* One tuner: wait for the start (the pipe closing), then ROUNDS of open, store two keys, read. */
static int tuner(int id, const char *path, int start_fd)
{
  gen_State *g;
  char err[1024], c;
  if (gen_open(&g, NULL, err, sizeof err)) return fprintf(stderr, "tuner %d: gen_open: %s\n", id, err), 1;
  if (read(start_fd, &c, 1) != 0) return fprintf(stderr, "tuner %d: bad start\n", id), 1;
  for (int round = 0; round < ROUNDS; round++) {
    cache_Db *db;
    cache_Entry e;
    cache_Key k;
    unsigned seed = (unsigned)(id * 131 + round * 17 + 1);
    gen_Problem p = fake_problem(SHARED_ROWS);
    if (cache_open(&db, path, 1, err, sizeof err)) return fprintf(stderr, "tuner %d: cache_open: %s\n", id, err), 1;
    if (tune_and_store(g, db, SHARED_ROWS, seed, (id + round) % 2 ? 1 << 20 : 0, err, sizeof err) ||
        tune_and_store(g, db, OWN_ROWS(id), seed + 1, 0, err, sizeof err)) {
      fprintf(stderr, "tuner %d, round %d: %s\n", id, round, err);
      return 1;
    }
    fake_key(&p, &k);
    int rc = cache_get(db, &k, &e);
    if (rc) return fprintf(stderr, "tuner %d: cache_get of the shared key: %d: %s\n", id, rc, cache_error(db)), 1;
    cache_entry_free(&e);
    cache_close(db);
  }
  gen_close(g);
  return 0;
}


/* What the cache holds after every tuner is done. */
static void check_cache(const char *path)
{
  cache_Db *db;
  cache_Key all;
  cache_Entry *es = NULL;
  cache_Run *runs = NULL;
  sqlite3 *s;
  char err[1024];
  int ne = 0, nr = 0;
  if (cache_open(&db, path, 0, err, sizeof err)) {
    CHECK(0, "cache_open: %s", err);
    return;
  }
  cache_filter_all(&all);
  CHECK(cache_entries(db, &all, &es, &ne) == 0, "cache_entries: %s", cache_error(db));
  CHECK(cache_runs(db, &all, 0, 1 << 30, &runs, &nr) == 0, "cache_runs: %s", cache_error(db));
  CHECK(nr == NPROC * ROUNDS * 2, "%d runs for %d stores", nr, NPROC * ROUNDS * 2);
  CHECK(ne == NPROC + 1, "%d entries for %d keys", ne, NPROC + 1);
  for (int key = -1; key < NPROC; key++) {
    int64_t rows = key < 0 ? SHARED_ROWS : OWN_ROWS(key);
    int n = 0, nruns = 0, its_run = 0;
    for (int i = 0; i < ne; i++) {
      if (es[i].key.rows != rows) continue;
      n++;
      cache_Entry e;
      int rc = cache_get(db, &es[i].key, &e);
      CHECK(rc == CACHE_OK, "%lld rows: cache_get %d: %s", (long long)rows, rc, cache_error(db));
      if (rc == CACHE_OK) cache_entry_free(&e);
      for (int j = 0; j < nr; j++) its_run |= runs[j].id == es[i].run && runs[j].key.rows == rows;
    }
    for (int j = 0; j < nr; j++) nruns += runs[j].key.rows == rows;
    CHECK(n == 1, "%lld rows: %d entries", (long long)rows, n);
    CHECK(its_run, "%lld rows: the entry's run is not one of its key's", (long long)rows);
    CHECK(nruns == (key < 0 ? NPROC : 1) * ROUNDS, "%lld rows: %d runs", (long long)rows, nruns);
  }
  for (int j = 0; j < nr; j++) {
    cache_Trial *t = NULL;
    int nt = -1;
    CHECK(cache_trials(db, runs[j].id, &t, &nt) == 0 && nt == runs[j].configs && nt > 0, "run %lld: %d trials of %d",
          (long long)runs[j].id, nt, runs[j].configs);
    free(t);
  }
  free(es);
  free(runs);
  cache_close(db);
  if (sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_stmt *st;
    const char *res = NULL;
    if (sqlite3_prepare_v2(s, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      res = (const char *)sqlite3_column_text(st, 0);
    CHECK(res && strcmp(res, "ok") == 0, "integrity_check: %s", res ? res : sqlite3_errmsg(s));
    sqlite3_finalize(st);
    long long dup = query_int(s, "SELECT count(*) FROM (SELECT 1 FROM entries GROUP BY gpu, arch, sms, driver, nvrtc,"
                                 " templates, dtype, op, rows, cols HAVING count(*) > 1)");
    CHECK(dup == 0, "%lld keys with more than one entry", dup);
  } else {
    CHECK(0, "sqlite3_open %s: %s", path, sqlite3_errmsg(s));
  }
  sqlite3_close(s);
}

/* A new cache is in rollback-journal mode from its schema transaction until its opener switches it
** to WAL, and a second tuner may hold a write transaction then (its own schema transaction, or its
** own switch). Put a cache in that state, hold BEGIN IMMEDIATE on it for 300 ms in a child, and
** open it (create as given): cache_open must wait for the lock (busy timeout), not fail. */
static void check_open_waits(const char *dir, int create)
{
  char path[4096], err[1024], c;
  cache_Db *db;
  sqlite3 *s;
  int fds[2], status;
  struct timespec t0, t1;
  snprintf(path, sizeof path, "%s/window%d.db", dir, create);
  if (make_cache(path)) {
    CHECK(0, "make_cache %s", path);
    return;
  }
  CHECK(sqlite3_open(path, &s) == SQLITE_OK && sqlite3_exec(s, "PRAGMA journal_mode = DELETE", 0, 0, 0) == SQLITE_OK,
        "back to rollback mode: %s", sqlite3_errmsg(s));
  sqlite3_close(s);
  if (pipe(fds)) {
    CHECK(0, "pipe");
    return;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    /* a busy timeout, as a tuner's own handle has: its COMMIT waits out the shared lock the
    ** opener takes for a moment between its tries (without one it fails at once, now and then) */
    int ok = sqlite3_open(path, &s) == SQLITE_OK && sqlite3_busy_timeout(s, 5000) == SQLITE_OK &&
             sqlite3_exec(s, "BEGIN IMMEDIATE", 0, 0, 0) == SQLITE_OK;
    if (write(fds[1], ok ? "y" : "n", 1) != 1) ok = 0;
    usleep(300000);
    ok = ok && sqlite3_exec(s, "COMMIT", 0, 0, 0) == SQLITE_OK;
    sqlite3_close(s);
    _exit(ok ? 0 : 1);
  }
  CHECK(read(fds[0], &c, 1) == 1 && c == 'y', "the child could not take the write lock");
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = cache_open(&db, path, create, err, sizeof err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s_waited = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  CHECK(rc == 0, "cache_open(create=%d) while another process holds a write transaction on a cache in rollback mode: "
        "failed after %.3f s, not waiting for the lock: %s", create, s_waited, err);
  if (rc == 0) cache_close(db);
  printf("cache_open(create=%d) beside a write transaction: %s after %.3f s\n", create, rc ? "failed" : "opened", s_waited);
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the lock holder failed");
  close(fds[0]);
  close(fds[1]);
}

static int make_cache(const char *path)
{
  gen_State *g;
  cache_Db *db;
  char err[1024];
  if (gen_open(&g, NULL, err, sizeof err) || cache_open(&db, path, 1, err, sizeof err) ||
      tune_and_store(g, db, SHARED_ROWS, 1, 0, err, sizeof err))
    return fprintf(stderr, "test_concurrent --make-cache %s: %s\n", path, err), 1;
  cache_close(db);
  gen_close(g);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--make-cache") == 0) return make_cache(argv[2]);
  char dir[] = "/tmp/st_concurrent_XXXXXX", path[4096];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  for (int sc = 0; sc < SCENARIOS; sc++) {
    int fds[2], status, ok = 0;
    pid_t pids[NPROC];
    snprintf(path, sizeof path, "%s/cache%d.db", dir, sc);
    if (pipe(fds)) return perror("pipe"), 1;
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < NPROC; i++) {
      if ((pids[i] = fork()) < 0) return perror("fork"), 1;
      if (pids[i] == 0) {
        close(fds[1]);
        _exit(tuner(i, path, fds[0]));
      }
    }
    close(fds[0]);
    usleep(200000);   /* every tuner has its generator open and waits on the pipe */
    close(fds[1]);
    for (int i = 0; i < NPROC; i++) {
      CHECK(waitpid(pids[i], &status, 0) == pids[i], "waitpid");
      CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "scenario %d: tuner %d: %s %d", sc, i,
            WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    check_cache(path);
    printf("scenario %d: %d of %d tuners exited 0, %d stores each\n", sc, ok, NPROC, 2 * ROUNDS);
  }
  check_open_waits(dir, 1);
  check_open_waits(dir, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("test_concurrent: %d scenarios of %d processes in %.1f s\n", SCENARIOS, NPROC,
         (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "test_concurrent: could not remove %s\n", dir);
  return check_done("test_concurrent");
}
