/*
** test_sweep.c — tune_sweep (tuner/tune.c) against a scripted fake backend, without a GPU or
** NVRTC: the statuses and reasons of configs that fail to compile, are pruned at load, compute
** wrong answers or fail to launch; the first round and the interleaved rounds of the finalists
** and the copy floor, as the backend sees them; the winner after re-timing (a config that only
** looked fast in the first round loses), ties to the earlier config, tune_top, a lost device,
** cancelling, the compile pool, and out-of-range options.
*/
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "gen.h"
#include "tune.h"

/* What the fake does with a config. */
enum { OK, NO_COMPILE, ZERO_OCC, SPILLS, WRONG, NO_LAUNCH, LOST };

#define COMPILE_ERR "ptxas: too many registers"
#define OCC_REASON "zero occupancy: 0 blocks fit on an SM"
#define SPILL_REASON "spills: 96 bytes of local memory"
#define WRONG_REASON "max error 3.2e-02 at row 7"
#define LAUNCH_ERR "launch: too many resources requested"
#define LOST_REASON "device lost: an illegal memory access"
#define MAXCALLS 4096

typedef struct Config {
  int does;
  double us, early_us;      /* true time; what the first round reads, when nonzero */
  int compiled, loads, unloads;
} Config;

typedef struct Call {
  int slot, n;
  double first;             /* the first reading returned */
} Call;

typedef struct Fake {
  char **configs;           /* the space, in the sweep's order */
  int n;
  Config *cfg;
  double copy_us;
  int noise;                /* jitter() on each reading */
  long readings;
  int copy_timed;           /* the sweep has moved on to the copy floor */
  Call *calls;
  int ncalls;
  pthread_mutex_t mu;       /* compile runs on the pool's threads */
  int inflight, max_inflight;
  int mixups;               /* load got another config's kernel or cubin */
  int progress, bad_progress, cancel_after;
  volatile sig_atomic_t cancel;
} Fake;

static gen_State *gen;
static const gen_Problem problem = { .rows = 4096, .cols = 4096, .dtype = GEN_F32, .op = GEN_SOFTMAX, .arch = 90 };


static int near(double a, double b)
{
  return fabs(a - b) <= 1e-9 * fabs(b);
}

static int member(const int *set, int n, int x)
{
  for (int i = 0; i < n; i++)
    if (set[i] == x) return 1;
  return 0;
}

/* ---- the fake backend ---- */

static int index_of(const Fake *f, const char *config)
{
  for (int i = 0; i < f->n; i++)
    if (strcmp(f->configs[i], config) == 0) return i;
  return -1;
}

/* Hold the first compile until a second one runs beside it (at most 2 s). */
static void wait_for_company(Fake *f)
{
  for (int t = 0; t < 2000; t++) {
    pthread_mutex_lock(&f->mu);
    int two = f->max_inflight >= 2;
    pthread_mutex_unlock(&f->mu);
    if (two) return;
    usleep(1000);
  }
}

static void count_inflight(Fake *f, int i, int d)
{
  pthread_mutex_lock(&f->mu);
  if (i >= 0 && d > 0) f->cfg[i].compiled++;
  f->inflight += d;
  if (f->inflight > f->max_inflight) f->max_inflight = f->inflight;
  pthread_mutex_unlock(&f->mu);
}

static int fake_compile(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  Fake *f = ud;
  int i = index_of(f, k->config), rc = 1;
  count_inflight(f, i, 1);
  if (i == 0) wait_for_company(f);
  if (i < 0) snprintf(err, errlen, "fake: unknown config %s", k->config);
  else if (f->cfg[i].does == NO_COMPILE) snprintf(err, errlen, COMPILE_ERR);
  else if ((c->data = malloc(sizeof i))) {
    memcpy(c->data, &i, sizeof i);   /* the cubin names its config, for load to check */
    c->size = sizeof i;
    c->ms = 1.5;
    rc = 0;
  }
  count_inflight(f, i, -1);
  return rc;
}

static int fake_load(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t)
{
  Fake *f = ud;
  Config *x = &f->cfg[slot];
  x->loads++;
  if (strcmp(k->config, f->configs[slot]) || c->size != sizeof slot || memcmp(c->data, &slot, sizeof slot)) f->mixups++;
  if (x->does == ZERO_OCC) return snprintf(t->reason, sizeof t->reason, OCC_REASON), TUNE_ECONFIG;
  if (x->does == SPILLS) return snprintf(t->reason, sizeof t->reason, SPILL_REASON), TUNE_ECONFIG;
  t->regs = 40, t->local_bytes = 0, t->smem = 2048, t->blocks_sm = 8, t->occupancy = 1.;
  return TUNE_EOK;
}

static int fake_verify(void *ud, int slot, tune_Trial *t)
{
  Fake *f = ud;
  if (f->cfg[slot].does == WRONG) return snprintf(t->reason, sizeof t->reason, WRONG_REASON), TUNE_ECONFIG;
  if (f->cfg[slot].does == LOST) return snprintf(t->reason, sizeof t->reason, LOST_REASON), TUNE_EFATAL;
  t->max_err = 1e-7;
  return TUNE_EOK;
}

/* -0.1% to +0.1%, scrambled so that no reading falls on a median by pattern. */
static double jitter(long k)
{
  unsigned h = (unsigned)k * 2654435761u;
  return 1e-3 * ((double)((h >> 8) % 2001) - 1000) / 1000;
}

static int fake_time(void *ud, int slot, int n, double *us, char *err, size_t errlen)
{
  Fake *f = ud;
  Call *call = f->ncalls < MAXCALLS ? &f->calls[f->ncalls] : NULL;
  f->ncalls++;
  if (call) *call = (Call){ slot, n, 0 };
  if (slot >= 0 && f->cfg[slot].does == NO_LAUNCH) return snprintf(err, errlen, LAUNCH_ERR), TUNE_ECONFIG;
  f->copy_timed |= slot < 0;
  const Config *x = slot < 0 ? NULL : &f->cfg[slot];
  double base = !x ? f->copy_us : !f->copy_timed && x->early_us > 0 ? x->early_us : x->us;
  for (int j = 0; j < n; j++) us[j] = base * (1 + (f->noise ? jitter(f->readings++) : 0));
  if (call && n > 0) call->first = us[0];
  return TUNE_EOK;
}

static void fake_unload(void *ud, int slot)
{
  Fake *f = ud;
  f->cfg[slot].unloads++;
}

static void fake_progress(void *ud, int done, int total, const tune_Trial *t, const tune_Trial *best)
{
  Fake *f = ud;
  if (done != ++f->progress || total != f->n || (t->status == TUNE_OK && (!best || best->us > t->us))) f->bad_progress++;
  if (done == f->cancel_after) f->cancel = 1;
}

/* A fake on which every config works, config i taking a distinct 200 us or more. */
static void fake_init(Fake *f)
{
  memset(f, 0, sizeof *f);
  CHECK(gen_space(gen, &problem, &f->configs, &f->n) == 0, "space: %s", gen_error(gen));
  f->cfg = calloc((size_t)f->n, sizeof *f->cfg);
  f->calls = calloc(MAXCALLS, sizeof *f->calls);
  for (int i = 0; i < f->n; i++) f->cfg[i].us = 200 + (i * 37) % f->n + (double)i / f->n;   /* shuffled, distinct */
  f->copy_us = 80;
  pthread_mutex_init(&f->mu, NULL);
}

static void fake_free(Fake *f)
{
  gen_free_list(f->configs, f->n);
  free(f->cfg);
  free(f->calls);
  pthread_mutex_destroy(&f->mu);
}

static tune_Options options(Fake *f)
{
  tune_Options o;
  tune_default_options(&o);
  o.threads = 4, o.rounds = 9, o.max_finalists = 3;
  o.progress = fake_progress, o.progress_ud = f, o.cancel = &f->cancel;
  return o;
}

static int sweep(Fake *f, const tune_Options *o, tune_Result *r, char *err, size_t errlen)
{
  tune_Backend b = { f, fake_compile, fake_load, fake_verify, fake_time, fake_unload };
  err[0] = '\0';
  return tune_sweep(gen, &problem, &b, o, r, err, errlen);
}

/* ---- checks ---- */

/* Trial i as its script says; figures too when the sweep finished. */
static void check_trial(const Fake *f, const tune_Result *r, int i, int finished)
{
  static const struct { int status; const char *reason; } want[] = {
    [OK] = { TUNE_OK, "" }, [NO_COMPILE] = { TUNE_FAILED, "compile: " COMPILE_ERR },
    [ZERO_OCC] = { TUNE_PRUNED, OCC_REASON }, [SPILLS] = { TUNE_PRUNED, SPILL_REASON },
    [WRONG] = { TUNE_FAILED, WRONG_REASON }, [NO_LAUNCH] = { TUNE_FAILED, LAUNCH_ERR }, [LOST] = { TUNE_FAILED, LOST_REASON },
  };
  const tune_Trial *t = &r->trials[i];
  int does = f->cfg[i].does;
  CHECK(strcmp(t->config, f->configs[i]) == 0, "trial %d is %s", i, t->config);
  CHECK(t->status == want[does].status, "config %d: status %d, want %d", i, t->status, want[does].status);
  CHECK(strncmp(t->reason, want[does].reason, strlen(want[does].reason)) == 0, "config %d: reason '%s', want '%s'", i,
        t->reason, want[does].reason);
  if (t->status != TUNE_OK) return;
  CHECK(t->compile_ms == 1.5 && t->regs == 40 && t->blocks_sm == 8 && t->max_err == 1e-7, "config %d: load figures", i);
  CHECK(t->us > 0, "config %d: %g us", i, t->us);
  if (finished)
    CHECK(near(t->gbps, (double)r->bytes / t->us / 1e3) && near(t->frac, r->copy_us / t->us), "config %d: %g GB/s, %g",
          i, t->gbps, t->frac);
}

/* What holds after any sweep: scripts followed, each config compiled at most (a full sweep:
** exactly) once, everything loaded unloaded once, and counts that add up. */
static void check_common(const Fake *f, const tune_Result *r, int full)
{
  int ran = 0;
  CHECK(r->ntrials == f->n, "%d trials for %d configs", r->ntrials, f->n);
  CHECK(f->mixups == 0 && f->bad_progress == 0 && f->ncalls <= MAXCALLS, "mixups %d, bad progress %d, %d time calls",
        f->mixups, f->bad_progress, f->ncalls);
  CHECK(r->bytes == 2 * problem.rows * problem.cols * 4, "%lld bytes", (long long)r->bytes);
  for (int i = 0; i < f->n && i < r->ntrials; i++) {
    const Config *x = &f->cfg[i];
    int loaded = x->loads && x->does != ZERO_OCC && x->does != SPILLS;
    CHECK(full ? x->compiled == 1 : x->compiled <= 1, "config %d compiled %d times", i, x->compiled);
    CHECK(x->loads <= 1 && (x->does != NO_COMPILE || x->loads == 0), "config %d loaded %d times", i, x->loads);
    CHECK(x->unloads == loaded, "config %d: %d unloads, loaded %d", i, x->unloads, loaded);
    if (r->trials[i].status == TUNE_PENDING) continue;
    ran++;
    check_trial(f, r, i, r->winner >= 0);
  }
  CHECK(!full || ran == f->n, "%d of %d configs ran", ran, f->n);
  CHECK(r->verified + r->pruned + r->failed == ran, "%d verified + %d pruned + %d failed != %d run", r->verified,
        r->pruned, r->failed, ran);
}

/* First rounds: calls of n >= 3, configs in order, then the copy's; scripted failures untimed. */
static void check_first_rounds(const Fake *f, int end)
{
  int last = -1, copy = 0, *calls = calloc((size_t)f->n, sizeof *calls);
  for (int c = 0; c < end; c++) {
    const Call *x = &f->calls[c];
    CHECK(x->n >= 3, "first-round call %d of slot %d with n=%d", c, x->slot, x->n);
    if (x->slot < 0) {
      copy++;
      continue;
    }
    CHECK(!copy && x->slot >= last, "slot %d timed out of order (after %d%s)", x->slot, last, copy ? ", the copy" : "");
    calls[last = x->slot]++;
  }
  for (int i = 0; i < f->n; i++) {
    int does = f->cfg[i].does;
    CHECK(does == OK ? calls[i] >= 1 : calls[i] == (does == NO_LAUNCH), "config %d (does %d) timed %d times", i, does,
          calls[i]);
  }
  free(calls);
}

/* The last rounds * (nf + 1) calls: one launch each, every round the first one rotated by its
** number; each finalist's time and the copy floor are the medians of their readings. */
static void check_interleaved(const Fake *f, const tune_Result *r, const int *fin, int nf, int rounds)
{
  const int m = nf + 1;
  const Call *c0 = f->calls + f->ncalls - rounds * m;
  double *v = malloc(sizeof *v * (size_t)rounds);
  for (int j = 0; j < m; j++) {
    int slot = c0[j].slot, dup = 0;
    for (int i = 0; i < j; i++) dup |= c0[i].slot == slot;
    CHECK(!dup && (slot == -1 || member(fin, nf, slot)), "round 0 times slot %d", slot);
  }
  for (int k = 0; k < rounds; k++)
    for (int j = 0; j < m; j++) {
      const Call *x = &c0[k * m + j];
      CHECK(x->n == 1 && x->slot == c0[(j + k) % m].slot, "round %d, call %d: slot %d, n=%d", k, j, x->slot, x->n);
    }
  for (int j = 0; j < m; j++) {   /* slot c0[j].slot sits at (j - k) mod m in round k */
    for (int k = 0; k < rounds; k++) v[k] = c0[k * m + ((j - k) % m + m) % m].first;
    double med = tune_median(v, rounds), got = c0[j].slot < 0 ? r->copy_us : r->trials[c0[j].slot].us;
    CHECK(near(got, med), "slot %d: %g us, median of its interleaved readings %g", c0[j].slot, got, med);
  }
  free(v);
}

/* The backend's view of the timing, and the finalists exactly fin[nf]. */
static void check_rounds(const Fake *f, const tune_Result *r, const tune_Options *o, const int *fin, int nf)
{
  int start = f->ncalls - o->rounds * (nf + 1);
  CHECK(start > 0 && f->ncalls <= MAXCALLS, "%d time calls, %d rounds of %d", f->ncalls, o->rounds, nf + 1);
  if (start <= 0 || f->ncalls > MAXCALLS) return;
  check_first_rounds(f, start);
  check_interleaved(f, r, fin, nf, o->rounds);
  for (int i = 0; i < r->ntrials; i++)
    CHECK(r->trials[i].finalist == member(fin, nf, i), "config %d: finalist %d", i, r->trials[i].finalist);
}

/* tune_top: OK trials only, fastest first, equal times in index order, at most n, none left out
** that beats the last. */
static void check_top(const tune_Result *r, int n)
{
  int *idx = malloc(sizeof *idx * (size_t)n), k = tune_top(r, idx, n), want = r->verified < n ? r->verified : n;
  CHECK(k == want, "top %d: %d, want %d", n, k, want);
  for (int i = 0; i < k && i < want; i++) {
    const tune_Trial *t = &r->trials[idx[i]], *prev = i ? &r->trials[idx[i - 1]] : NULL;
    CHECK(t->status == TUNE_OK, "top %d: %d is not OK", i, idx[i]);
    CHECK(!prev || prev->us < t->us || (prev->us == t->us && idx[i - 1] < idx[i]), "top %d: %d (%g us) after %d (%g us)",
          i, idx[i], t->us, idx[i - 1], prev ? prev->us : 0);
  }
  for (int i = 0; k > 0 && k <= want && i < r->ntrials; i++) {
    const tune_Trial *t = &r->trials[i], *last = &r->trials[idx[k - 1]];
    CHECK(t->status != TUNE_OK || member(idx, k, i) || t->us > last->us || (t->us == last->us && i > idx[k - 1]),
          "top %d leaves out %d (%g us)", n, i, t->us);
  }
  free(idx);
}

static int copy_calls(const Fake *f)
{
  int n = 0;
  for (int c = 0; c < f->ncalls && c < MAXCALLS; c++) n += f->calls[c].slot < 0;
  return n;
}

static void check_winner(const tune_Result *r, int want)
{
  CHECK(r->winner == want, "winner %d, want %d", r->winner, want);
  if (r->winner != want) return;
  CHECK(r->cubin.data && r->cubin.size == sizeof want && memcmp(r->cubin.data, &want, sizeof want) == 0,
        "the result holds another config's cubin");
  CHECK(strcmp(r->kernel.config, r->trials[want].config) == 0, "winner's kernel is %s", r->kernel.config);
}

/* ---- scenarios ---- */

/* Scripted failures, noisy times, and a config that reads fast only in its first round. */
static void test_sweep_main(void)
{
  enum { DECOY = 20, FAST = 40, X = 60, Y = 80 };
  Fake f;
  tune_Result r;
  char err[512];
  fake_init(&f);
  f.noise = 1;
  f.cfg[1].does = f.cfg[17].does = NO_COMPILE;
  f.cfg[2].does = ZERO_OCC;
  f.cfg[5].does = SPILLS;
  f.cfg[7].does = WRONG;
  f.cfg[11].does = NO_LAUNCH;
  f.cfg[FAST].us = 100;
  f.cfg[DECOY].us = 102, f.cfg[DECOY].early_us = 98;   /* first-round best, truly slower */
  f.cfg[X].us = 100.3;                                   /* within 3% of 98 */
  f.cfg[Y].us = 100.6;                                   /* within too, but max_finalists is 3 */
  tune_Options o = options(&f);
  CHECK(sweep(&f, &o, &r, err, sizeof err) == 0, "sweep: %s", err);
  check_common(&f, &r, 1);
  check_rounds(&f, &r, &o, (const int[]){ DECOY, FAST, X }, 3);
  check_winner(&r, FAST);
  CHECK(r.verified == f.n - 6 && r.pruned == 2 && r.failed == 4, "%d verified, %d pruned, %d failed", r.verified,
        r.pruned, r.failed);
  CHECK(r.trials[DECOY].us > 101, "the decoy kept its first-round %g us", r.trials[DECOY].us);
  CHECK(f.max_inflight >= 2, "compiles never overlapped (%d at most)", f.max_inflight);
  check_top(&r, 5);
  check_top(&r, 1000);
  tune_result_free(&r);
  fake_free(&f);
}

/* Noise-free equal times: the earlier config wins; the margin alone limits the finalists. */
static void test_ties(void)
{
  Fake f;
  tune_Result r;
  char err[512];
  fake_init(&f);
  f.cfg[12].us = f.cfg[50].us = 90;
  f.cfg[30].us = 92;   /* within 3% of 90 */
  f.cfg[70].us = 93;   /* not */
  tune_Options o = options(&f);
  o.max_finalists = 6;
  CHECK(sweep(&f, &o, &r, err, sizeof err) == 0, "sweep: %s", err);
  check_common(&f, &r, 1);
  check_rounds(&f, &r, &o, (const int[]){ 12, 50, 30 }, 3);
  check_winner(&r, 12);
  check_top(&r, 4);
  int idx[4];
  CHECK(tune_top(&r, idx, 4) == 4 && idx[0] == 12 && idx[1] == 50 && idx[2] == 30 && idx[3] == 70, "top 4: %d %d %d %d",
        idx[0], idx[1], idx[2], idx[3]);
  tune_result_free(&r);
  fake_free(&f);
}

/* tune_top on trials made by hand. */
static void test_top(void)
{
  static const int status[] = { TUNE_OK, TUNE_FAILED, TUNE_OK, TUNE_OK, TUNE_PRUNED, TUNE_OK, TUNE_OK, TUNE_OK };
  static const double us[] = { 5, 1, 3, 3, 0, 7, 3, 4 };
  tune_Trial t[8];
  tune_Result r;
  int idx[8];
  memset(&r, 0, sizeof r);
  memset(t, 0, sizeof t);
  for (int i = 0; i < 8; i++) t[i].status = status[i], t[i].us = us[i], r.verified += status[i] == TUNE_OK;
  r.trials = t, r.ntrials = 8;
  CHECK(tune_top(&r, idx, 4) == 4 && idx[0] == 2 && idx[1] == 3 && idx[2] == 6 && idx[3] == 7, "top 4: %d %d %d %d",
        idx[0], idx[1], idx[2], idx[3]);
  CHECK(tune_top(&r, idx, 2) == 2 && idx[0] == 2 && idx[1] == 3, "top 2: %d %d", idx[0], idx[1]);
  CHECK(tune_top(&r, idx, 0) == 0, "top 0");
  for (int n = 1; n <= 8; n++) check_top(&r, n);
}

/* TUNE_EFATAL from verify stops everything: nonzero, err set, nothing after it loaded. */
static void test_lost(void)
{
  Fake f;
  tune_Result r;
  char err[512];
  fake_init(&f);
  f.cfg[3].does = LOST;
  tune_Options o = options(&f);
  CHECK(sweep(&f, &o, &r, err, sizeof err) != 0 && strstr(err, LOST_REASON), "lost device: err '%s'", err);
  check_common(&f, &r, 0);
  CHECK(r.winner == -1 && copy_calls(&f) == 0, "winner %d after a lost device", r.winner);
  for (int i = 4; i < f.n; i++)
    CHECK(f.cfg[i].loads == 0 && r.trials[i].status == TUNE_PENDING, "config %d ran after the loss", i);
  tune_result_free(&r);
  fake_free(&f);
}

/* A cancel flag set by the progress callback after 5 configs. */
static void test_cancel(void)
{
  Fake f;
  tune_Result r;
  char err[512];
  fake_init(&f);
  f.cancel_after = 5;
  tune_Options o = options(&f);
  CHECK(sweep(&f, &o, &r, err, sizeof err) == 0, "cancelled sweep: %s", err);
  check_common(&f, &r, 0);
  CHECK(r.cancelled == 1 && r.winner == -1 && f.progress == 5, "cancelled %d, winner %d, %d configs", r.cancelled,
        r.winner, f.progress);
  for (int i = 0; i < r.ntrials; i++)
    CHECK((r.trials[i].status == TUNE_PENDING) == (i >= 5), "config %d: status %d", i, r.trials[i].status);
  CHECK(copy_calls(&f) == 0, "the copy was timed");
  tune_result_free(&r);
  fake_free(&f);
}

/* ---- options out of range ---- */

enum { MANY_REPS, NO_ROUNDS, NO_REPS, NO_FINALISTS };

static void tweak(tune_Options *o, int which)
{
  switch (which) {
  case MANY_REPS: o->budget_ms = 1e6, o->max_reps = 2000; break;   /* more readings than 1024 */
  case NO_ROUNDS: o->rounds = 0; break;
  case NO_REPS: o->budget_ms = 0, o->min_reps = 0; break;
  default: o->max_finalists = 0; break;
  }
}

/* Noise-free, option tweaked: refused with a message, or config 40 wins and every time is true. */
static int sane_sweep(int which)
{
  Fake f;
  tune_Result r;
  char err[512];
  fake_init(&f);
  f.cfg[40].us = 100;
  tune_Options o = options(&f);
  tweak(&o, which);
  if (sweep(&f, &o, &r, err, sizeof err)) return err[0] != '\0';
  int ok = r.winner == 40 && r.copy_us == f.copy_us;
  for (int i = 0; i < r.ntrials; i++) ok &= r.trials[i].status == TUNE_OK && r.trials[i].us == f.cfg[i].us;
  return ok;
}

/* In a child, as an overrun may kill it. */
static void expect_sane(int which, const char *what)
{
  int status = 0;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) _exit(sane_sweep(which) ? 0 : 3);
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: %s", what,
        WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "neither refused nor the right winner and times");
}

static void test_options(void)
{
  expect_sane(MANY_REPS, "max_reps 2000");
  expect_sane(NO_ROUNDS, "rounds 0");
  expect_sane(NO_REPS, "min_reps 0, budget_ms 0");
  expect_sane(NO_FINALISTS, "max_finalists 0");
}

int main(void)
{
  char err[1024];
  char **list;
  int n = 0;
  if (gen_open(&gen, NULL, err, sizeof err) || gen_space(gen, &problem, &list, &n)) {
    fprintf(stderr, "gen: %s\n", gen ? gen_error(gen) : err);
    return 1;
  }
  gen_free_list(list, n);
  if (n < 100) {   /* the scripts below name configs up to 80 */
    fprintf(stderr, "test_sweep: the space of 4096x4096 f32 has %d configs; the scripts need 100\n", n);
    return 1;
  }
  test_top();
  test_sweep_main();
  test_ties();
  test_lost();
  test_cancel();
  test_options();
  gen_close(gen);
  return check_done("test_sweep");
}
