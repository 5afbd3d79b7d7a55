/*
** test_kill.c — the cache survives SIGKILL at any moment. A child process tunes, in a loop,
** with the fake backend of fake_backend.h (random sleeps in every backend call) and stores each
** result with tune_store() into one cache file, over a few keys, some runs with a cubin of a few
** MB so that the write takes a while. The parent SIGKILLs it 20 times, each time a fresh child on
** the same file: half the kills at a random moment, half at a random moment after the child
** entered tune_store, within how long a store takes (shared memory says which phase the child
** is in, and how long its stores took). After each
** kill the cache must: open (cache_open, create=0); pass PRAGMA integrity_check and
** foreign_key_check; give every entry's cubin through cache_get with its checksum good and the
** bytes the fake made; have every entry's run, and every run with all its trials (count ==
** configs) and its counts adding up; hold no orphan trials; and have exactly the runs the
** children finished storing, plus at most the one a kill interrupted inside tune_store.
** ST_SEED=N repeats a sequence of kills.
*/
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"
#include "fake_backend.h"
#include "gen.h"
#include "tune.h"

#define KILLS 20
#define KEYS 3

enum { PH_START, PH_OPEN, PH_SWEEP, PH_STORE, PH_CLOSE, NPHASES };
static const char *const PHASE[] = { "start", "cache_open", "sweep", "tune_store", "cache_close" };

/* What the child tells the parent, in shared memory. */
typedef struct Shared {
  volatile int phase;       /* PH_* */
  volatile int stores;      /* tune_store calls that returned 0 */
  volatile int big;         /* the store in progress writes a big cubin */
  volatile double store_s[2];   /* how long the last store took, small and big cubin */
  volatile int failed;      /* the child hit an error: it exits 3 with a message */
} Shared;

static Shared *sh;

static int64_t rows_of(int key)
{
  return 1024 << key;
}

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void sleep_us(long us)
{
  struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
  nanosleep(&ts, NULL);
}

/* ---- the child: tune and store until killed ---- */

static void child_fail(const char *what, const char *err)
{
  fprintf(stderr, "test_kill child: %s: %s\n", what, err);
  sh->failed = 1;
  _exit(3);
}

static void child(const char *path, unsigned seed)
{
  gen_State *g;
  char err[1024];
  if (gen_open(&g, NULL, err, sizeof err)) child_fail("gen_open", err);
  for (unsigned it = 0;; it++) {
    cache_Db *db;
    cache_Key k;
    fake_Backend f;
    tune_Result r;
    int64_t run;
    unsigned s = seed + it * 7919u;
    gen_Problem p = fake_problem(rows_of((int)(fake_rand(&s) % KEYS)));
    sh->phase = PH_OPEN;
    if (cache_open(&db, path, 1, err, sizeof err)) child_fail("cache_open", err);
    sh->phase = PH_SWEEP;
    if (fake_init(&f, g, &p, 400, fake_rand(&s))) child_fail("fake_init", gen_error(g));
    sh->big = fake_rand(&s) % 3 == 0;
    f.big_bytes = sh->big ? (size_t)(2 + fake_rand(&s) % 5) << 20 : 0;   /* 2..6 MB */
    if (fake_tune(g, &p, &f, &r, err, sizeof err)) child_fail("sweep", err);
    if (r.winner != f.best) child_fail("sweep", "the fake's fastest config did not win");
    fake_key(&p, &k);
    double t0 = now_s();
    sh->phase = PH_STORE;
    if (tune_store(db, &k, &r, &run, err, sizeof err)) child_fail("tune_store", err);
    sh->stores++;
    sh->phase = PH_CLOSE;
    sh->store_s[sh->big] = now_s() - t0;
    tune_result_free(&r);
    fake_free(&f);
    cache_close(db);
  }
}

/* ---- the parent's checks ---- */

/* One integer from a query, -1 on error. */

/* PRAGMA integrity_check says "ok", foreign_key_check says nothing, no orphans. */
static void check_sqlite(const char *path)
{
  sqlite3 *db;
  sqlite3_stmt *st;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
  CHECK(rc == SQLITE_OK, "sqlite3_open %s: %s", path, sqlite3_errmsg(db));
  if (rc != SQLITE_OK) {
    sqlite3_close(db);
    return;
  }
  sqlite3_busy_timeout(db, 10000);
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK) {
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      const char *t = (const char *)sqlite3_column_text(st, 0);
      rows++;
      CHECK(t && strcmp(t, "ok") == 0, "integrity_check: %s", t ? t : "(null)");
    }
    CHECK(rows == 1, "integrity_check gave %d rows", rows);
    sqlite3_finalize(st);
  } else {
    CHECK(0, "integrity_check: %s", sqlite3_errmsg(db));
  }
  long long fk = query_int(db, "SELECT count(*) FROM pragma_foreign_key_check");
  CHECK(fk == 0, "foreign_key_check: %lld rows", fk);
  long long orphans = query_int(db, "SELECT count(*) FROM trials WHERE run NOT IN (SELECT id FROM runs)");
  CHECK(orphans == 0, "%lld trials of no run", orphans);
  long long lost = query_int(db, "SELECT count(*) FROM entries WHERE run NOT IN (SELECT id FROM runs)");
  CHECK(lost == 0, "%lld entries whose run is missing", lost);
  sqlite3_close(db);
}

/* The cubin the fake makes for config i of a problem, big_bytes long or not: as fake_compile. */
static int cubin_is_fakes(const cache_Entry *e, gen_State *g)
{
  fake_Backend f;
  gen_Problem p = fake_problem(e->key.rows);
  gen_Kernel k;
  gen_Cubin c;
  char err[256];
  int ok = 0;
  if (fake_init(&f, g, &p, 0, 1)) return 0;
  f.big_bytes = e->size;
  memset(&c, 0, sizeof c);
  snprintf(k.config, sizeof k.config, "%s", e->config);
  if (fake_index(&f, e->config) == f.best && fake_compile(&f, &k, &c, err, sizeof err) == 0)
    ok = c.size == e->size && memcmp(c.data, e->cubin, c.size) == 0;
  free(c.data);
  fake_free(&f);
  return ok;
}

/* Every entry through cache_get; every run whole. Returns the number of runs (-1: no cache). */
static int check_cache(const char *path, gen_State *g, int may_be_missing)
{
  cache_Db *db;
  cache_Key all;
  cache_Entry *es = NULL;
  cache_Run *runs = NULL;
  char err[1024];
  int ne = 0, nr = 0;
  int rc = cache_open(&db, path, 0, err, sizeof err);
  if (rc == CACHE_MISS && may_be_missing) return 0;
  CHECK(rc == CACHE_OK, "cache_open after a kill: %s", err);
  if (rc != CACHE_OK) return -1;
  check_sqlite(path);
  cache_filter_all(&all);
  CHECK(cache_entries(db, &all, &es, &ne) == 0, "cache_entries: %s", cache_error(db));
  CHECK(cache_runs(db, &all, 0, 1 << 30, &runs, &nr) == 0, "cache_runs: %s", cache_error(db));
  CHECK(ne <= KEYS, "%d entries for %d keys", ne, KEYS);
  for (int i = 0; i < ne; i++) {
    cache_Entry e;
    rc = cache_get(db, &es[i].key, &e);
    CHECK(rc == CACHE_OK, "entry %lldx%lld: cache_get %d: %s", (long long)es[i].key.rows, (long long)es[i].key.cols, rc,
          cache_error(db));
    if (rc != CACHE_OK) continue;
    CHECK(cubin_is_fakes(&e, g), "entry %lldx%lld: the cubin (%zu bytes) is not the one stored", (long long)e.key.rows,
          (long long)e.key.cols, e.size);
    int found = 0;
    for (int j = 0; j < nr; j++)
      if (runs[j].id == e.run) {
        found = 1;
        CHECK(strcmp(runs[j].winner, e.config) == 0 && runs[j].key.rows == e.key.rows,
              "entry %lldx%lld (%s) and its run %lld (%lldx%lld, %s) disagree", (long long)e.key.rows,
              (long long)e.key.cols, e.config, (long long)e.run, (long long)runs[j].key.rows,
              (long long)runs[j].key.cols, runs[j].winner);
      }
    CHECK(found, "entry %lldx%lld names run %lld, which is not there", (long long)e.key.rows, (long long)e.key.cols,
          (long long)e.run);
    cache_entry_free(&e);
  }
  int keys_run = 0;
  for (int key = 0; key < KEYS; key++) {
    int has = 0;
    for (int j = 0; j < nr; j++) has |= runs[j].key.rows == rows_of(key);
    keys_run += has;
  }
  CHECK(ne == keys_run, "%d entries, but %d keys have runs", ne, keys_run);
  for (int j = 0; j < nr; j++) {
    const cache_Run *x = &runs[j];
    cache_Trial *t = NULL;
    int nt = -1, ok = 0;
    CHECK(cache_trials(db, x->id, &t, &nt) == 0, "run %lld: cache_trials: %s", (long long)x->id, cache_error(db));
    CHECK(x->configs > 0 && nt == x->configs, "run %lld: %d trials of %d configs", (long long)x->id, nt, x->configs);
    for (int i = 0; i < nt; i++) ok += strcmp(t[i].status, "ok") == 0 && t[i].config[0];
    CHECK(ok == nt && x->verified == x->configs && x->pruned + x->failed == 0,
          "run %lld: %d of %d trials whole, %d verified", (long long)x->id, ok, nt, x->verified);
    CHECK(strcmp(x->status, "ok") == 0 && x->winner[0] && x->started[0] && x->copy_us == 80.,
          "run %lld half-written: status '%s', winner '%s', started '%s', copy %g us", (long long)x->id, x->status,
          x->winner, x->started, x->copy_us);
    free(t);
  }
  free(es);
  free(runs);
  cache_close(db);
  return nr;
}

int main(void)
{
  char dir[] = "/tmp/st_kill_XXXXXX", path[4096], err[1024];
  const char *env = getenv("ST_SEED");
  unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
  int landed[NPHASES] = { 0 }, committed_in_store = 0, runs = 0, stores = 0;
  double store_s[2] = { 0.005, 0.05 };   /* how long a store takes, small and big: the children say */
  gen_State *g;
  double t0 = now_s();
  if (!mkdtemp(dir) || gen_open(&g, NULL, err, sizeof err)) {
    fprintf(stderr, "test_kill: setup: %s\n", err);
    return 1;
  }
  snprintf(path, sizeof path, "%s/cache.db", dir);
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return perror("mmap"), 1;
  printf("test_kill: seed %u (ST_SEED=%u repeats it), cache %s\n", seed, seed, path);
  srand(seed);
  for (int kill_no = 0; kill_no < KILLS; kill_no++) {
    int status, targeted = kill_no % 2;
    memset((void *)sh, 0, sizeof *sh);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return perror("fork"), 1;
    if (pid == 0) child(path, (unsigned)rand());
    long delay_us;
    if (targeted) {   /* a moment inside the 1st or 2nd store */
      int want = rand() % 2;
      double limit = now_s() + 10;
      while (!sh->failed && (sh->stores < want || sh->phase != PH_STORE) && now_s() < limit) sleep_us(50);
      delay_us = rand() % (long)(1 + 1e6 * store_s[sh->big]);
    } else {
      delay_us = rand() % 1500000;
    }
    sleep_us(delay_us);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    int phase = sh->phase, done = sh->stores;
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "kill %d: the child exited by itself (status %d)", kill_no,
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    landed[phase]++;
    int now = check_cache(path, g, runs == 0 && phase <= PH_OPEN);
    int extra = now - runs - done;   /* 1 when the interrupted store had committed */
    CHECK(extra == 0 || (extra == 1 && phase == PH_STORE),
          "kill %d in %s: %d runs before, %d stores finished, %d runs after", kill_no, PHASE[phase], runs, done, now);
    committed_in_store += phase == PH_STORE && extra == 1;
    printf("kill %2d: %s after %.3f s in %s%s; %d stores finished, %d runs in the cache\n", kill_no + 1,
           targeted ? "in a store" : "at random", delay_us / 1e6, PHASE[phase],
           phase == PH_STORE ? (extra ? " (its commit made it)" : " (rolled back)") : "", done, now);
    if (now >= 0) runs = now;
    stores += done;
    for (int b = 0; b < 2; b++) store_s[b] = sh->store_s[b] > 0 ? sh->store_s[b] : store_s[b];
  }
  printf("test_kill: the last stores took %.1f ms (%.1f ms with a cubin of a few MB)\n", 1e3 * store_s[0], 1e3 * store_s[1]);
  printf("test_kill: %d kills in %.1f s: %d in cache_open, %d in the sweep, %d inside tune_store (%d of those had "
         "committed), %d in cache_close; %d stores finished, %d runs in the cache\n",
         KILLS, now_s() - t0, landed[PH_OPEN] + landed[PH_START], landed[PH_SWEEP], landed[PH_STORE],
         committed_in_store, landed[PH_CLOSE], stores, runs);
  CHECK(landed[PH_STORE] > 0, "no kill landed inside tune_store");
  gen_close(g);
  munmap((void *)sh, sizeof *sh);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (check_failures == 0 && system(cmd) != 0) fprintf(stderr, "test_kill: could not remove %s\n", dir);
  return check_done("test_kill");
}
