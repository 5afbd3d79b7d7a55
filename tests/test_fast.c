/*
** test_fast.c — the fast sweep (tuner/fast.c and tune_sweep with keep > 0) against a scripted
** fake backend, without a GPU: the pick holds at most keep configs and each family's
** best-ranked one; the sweep compiles only those; a config that reads fast only in its short
** first round loses to the true fastest once the finalists are re-timed interleaved with the
** copy (after a warm-up of the copy); keep 0 (the full sweep) still sweeps every config; a cancel stops it; the full grid and
** a pinned config are never cut.
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "tune.h"

static gen_State *gen;
static gen_Problem problem = { .rows = 4096, .cols = 4096, .dtype = GEN_F32, .op = GEN_SOFTMAX, .arch = 90,
                                     .sms = 132 };

/* The scripted backend: times by config (the space's index), whatever slot the sweep loads it in. */
typedef struct Script {
  char **configs;           /* the whole space */
  int n;
  double *us, *early;       /* true time; what the first round reads, when nonzero */
  int *slot;                /* per slot: the config loaded there */
  int compiles, mixups, copy_timed, cancel_after, done;
  int calls, warmups;       /* time calls; copy calls before any config's */
  int *singles;             /* per config: single-launch time calls after the copy was first timed */
  int copy_singles;
  int siblings;             /* >= 0: the sweep's siblings option; -1: the fast sweep's default */
  volatile sig_atomic_t cancel;
} Script;

static int find(const Script *s, const char *config)
{
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->configs[i], config) == 0) return i;
  return -1;
}

static int s_compile(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  Script *s = ud;
  int i = find(s, k->config);
  __atomic_add_fetch(&s->compiles, 1, __ATOMIC_SEQ_CST);
  if (i < 0 || !(c->data = malloc(sizeof i))) return snprintf(err, errlen, "fake: %s", k->config), 1;
  memcpy(c->data, &i, sizeof i);
  c->size = sizeof i, c->ms = 1;
  c->kept = i % 2;   /* as if every odd config of the space had been compiled before */
  return 0;
}

static int s_load(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t)
{
  Script *s = ud;
  int i = find(s, k->config);
  if (i < 0 || c->size != sizeof i || memcmp(c->data, &i, sizeof i)) s->mixups++;
  s->slot[slot] = i;
  t->occupancy = 1;
  return TUNE_EOK;
}

static int s_verify(void *ud, int slot, tune_Trial *t)
{
  (void)ud, (void)slot;
  t->max_err = 1e-7;
  return TUNE_EOK;
}

static int s_time(void *ud, int slot, int n, double *us, char *err, size_t errlen)
{
  Script *s = ud;
  int i = slot < 0 ? -1 : s->slot[slot];
  (void)err, (void)errlen;
  s->warmups += slot < 0 && s->calls == s->warmups;
  s->calls++;
  s->copy_timed |= slot < 0 && s->calls > s->warmups;   /* past the warm-up */
  if (s->copy_timed && n == 1) {
    if (i < 0) s->copy_singles++;
    else s->singles[i]++;
  }
  double v = i < 0 ? 80 : !s->copy_timed && s->early[i] > 0 ? s->early[i] : s->us[i];
  for (int j = 0; j < n; j++) us[j] = v;
  return TUNE_EOK;
}

static void s_unload(void *ud, int slot)
{
  (void)ud, (void)slot;
}

static void s_progress(void *ud, int done, int total, const tune_Trial *t, const tune_Trial *best)
{
  Script *s = ud;
  (void)total, (void)t, (void)best;
  s->done = done;
  if (done == s->cancel_after) s->cancel = 1;
}

static void script_init(Script *s)
{
  memset(s, 0, sizeof *s);
  s->siblings = -1;
  CHECK(gen_space(gen, &problem, &s->configs, &s->n) == 0, "space: %s", gen_error(gen));
  s->us = calloc((size_t)s->n, sizeof *s->us);
  s->early = calloc((size_t)s->n, sizeof *s->early);
  s->slot = calloc((size_t)s->n, sizeof *s->slot);
  s->singles = calloc((size_t)s->n, sizeof *s->singles);
  for (int i = 0; i < s->n; i++) s->us[i] = 200 + (i * 37) % s->n + (double)i / s->n;
}

static void script_free(Script *s)
{
  gen_free_list(s->configs, s->n);
  free(s->us), free(s->early), free(s->slot), free(s->singles);
}

static int run(Script *s, int keep, int rounds, tune_Result *r, char *err, size_t errlen)
{
  tune_Backend b = { s, s_compile, s_load, s_verify, s_time, s_unload };
  tune_Options o;
  tune_fast_options(&o);
  o.keep = keep, o.threads = 2, o.rounds = rounds, o.max_finalists = 3;
  if (s->siblings >= 0) o.siblings = s->siblings;
  o.progress = s_progress, o.progress_ud = s, o.cancel = &s->cancel;
  return tune_sweep(gen, &problem, &b, &o, r, err, errlen);
}

/* The family a config string belongs to: passes, hold, and whether it is split. */
static void family(const char *c, char *out, size_t n)
{
  const char *p = strstr(c, "passes="), *h = strstr(c, "hold="), *s = strstr(c, "split=");
  snprintf(out, n, "%.8s %.*s %s", p, (int)strcspn(h, ","), h, strncmp(s, "split=1,", 8) ? "split" : "row");
}

/* The picks: at most keep plus one per family, every family present, keep=1 a subset. */
static void test_pick(void)
{
  Script s;
  script_init(&s);
  int *idx = calloc((size_t)s.n, sizeof *idx), *one = calloc((size_t)s.n, sizeof *one);
  int m = tune_fast_pick(&problem, s.configs, s.n, 48, idx), m1 = tune_fast_pick(&problem, s.configs, s.n, 1, one);
  char fams[64][64], f[64];
  int nf = 0;
  for (int i = 0; i < s.n; i++) {
    family(s.configs[i], f, sizeof f);
    int j = 0;
    while (j < nf && strcmp(fams[j], f)) j++;
    if (j == nf && nf < 64) snprintf(fams[nf++], sizeof fams[0], "%s", f);
  }
  CHECK(m >= 48 && m <= 48 + nf && m < s.n, "%d picks of %d configs, %d families", m, s.n, nf);
  CHECK(m1 == nf, "keep 1: %d picks, %d families", m1, nf);
  for (int j = 0; j < m1; j++) {   /* each family's best-ranked is among the picks */
    int in = 0;
    for (int k = 0; k < m; k++) in |= idx[k] == one[j];
    CHECK(in, "family best %s not picked", s.configs[one[j]]);
  }
  for (int a = 0; a < m; a++)
    for (int b = a + 1; b < m; b++) CHECK(idx[a] != idx[b], "config %d picked twice", idx[a]);
  /* the list form: cut and reordered as picked; the full grid and a pinned config untouched */
  char **list;
  int n;
  char err[256];
  CHECK(gen_space(gen, &problem, &list, &n) == 0 && tune_fast_list(&problem, list, &n, 48, err, sizeof err) == 0 &&
        n == m, "list: %d, picks %d", n, m);
  for (int k = 0; k < n && k < m; k++)   /* worst-ranked first */
    CHECK(strcmp(list[k], s.configs[idx[m - 1 - k]]) == 0, "list[%d] is %s", k, list[k]);
  gen_free_list(list, n);
  gen_Problem full = problem;
  full.full = 1;
  n = s.n;
  CHECK(tune_fast_list(&full, s.configs, &n, 48, err, sizeof err) == 0 && n == s.n, "the full grid was cut to %d", n);
  CHECK(tune_fast_list(&problem, s.configs, &n, 0, err, sizeof err) == 0 && n == s.n, "keep 0 cut to %d", n);
  free(idx), free(one);
  script_free(&s);
}

/* The untuned callback's config: stub[0] ("" for none). */
static char stub[256];
static int stub_untuned(gen_State *g, const gen_Problem *p, char *config, size_t n)
{
  (void)g, (void)p;
  return !stub[0] || snprintf(config, n, "%s", stub) >= (int)n;
}

/* tune_fast_space: the picks, then the config an untuned call runs, last, when they lack it and
** the space holds it; nothing added when it is a pick, not of the space, or none. */
static void test_untuned_added(void)
{
  char **list, err[256];
  int n, space, m;
  tune_Options o;
  tune_fast_options(&o);
  o.untuned = stub_untuned;
  CHECK(tune_fast_space(gen, &problem, &o, &list, &n, &space, err, sizeof err) == 0 && n < space, "%s", err);
  m = n;   /* no config: the picks alone */
  char **all;
  int nall;
  CHECK(gen_space(gen, &problem, &all, &nall) == 0 && nall == space, "space %d against %d", nall, space);
  const char *unpicked = NULL;
  for (int i = 0; i < nall && !unpicked; i++) {
    int in = 0;
    for (int k = 0; k < m; k++) in |= !strcmp(all[i], list[k]);
    if (!in) unpicked = all[i];
  }
  const char *picked = list[0];
  const struct { const char *config; int n; } cases[] = { { unpicked, m + 1 }, { picked, m }, { "threads=64,nonsense", m } };
  for (int c = 0; c < 3; c++) {
    char **l;
    int ln;
    snprintf(stub, sizeof stub, "%s", cases[c].config ? cases[c].config : "");
    CHECK(tune_fast_space(gen, &problem, &o, &l, &ln, &space, err, sizeof err) == 0 && ln == cases[c].n,
          "untuned %s: %d configs, want %d (%s)", stub, ln, cases[c].n, err);
    if (c == 0 && ln == m + 1) CHECK(!strcmp(l[m], unpicked), "last %s, want %s", l[m], unpicked);
    gen_free_list(l, ln);
  }
  stub[0] = '\0';
  gen_free_list(all, nall);
  gen_free_list(list, n);
}

/* Indices of the space's configs that the sweep may compile: the picks and their siblings. */
static int reachable(const Script *s, const int *idx, int m, int *out)
{
  char **picked = malloc(sizeof *picked * (size_t)m);
  for (int k = 0; k < m; k++) picked[k] = s->configs[idx[k]];
  int ns = tune_fast_siblings(picked, m, s->configs, s->n, picked, m, out, s->n);
  free(picked);
  memcpy(out + ns, idx, sizeof *idx * (size_t)m);
  return ns + m;
}

/* The fast sweep compiles only the picks and a few siblings of its leaders; the true fastest
** pick wins over a first-round decoy, after the finalists and the copy were re-timed one launch
** at a time. */
static void test_fast_sweep(void)
{
  Script s;
  tune_Result r;
  char err[512];
  script_init(&s);
  int *idx = calloc((size_t)s.n, sizeof *idx), m = tune_fast_pick(&problem, s.configs, s.n, 48, idx);
  int *near = calloc((size_t)s.n, sizeof *near), nn = reachable(&s, idx, m, near);
  int fast = idx[m - 1], decoy = idx[0], slow = -1;   /* the last pick is truly fastest */
  for (int i = 0; i < s.n && slow < 0; i++) {
    int seen = 0;
    for (int k = 0; k < nn; k++) seen |= near[k] == i;
    if (!seen) slow = i;
  }
  s.us[fast] = 99, s.us[decoy] = 102, s.early[decoy] = 97;   /* within the 3% margin */
  s.us[slow] = 50;   /* neither picked nor a sibling: never compiled, so it cannot win */
  CHECK(run(&s, 48, 7, &r, err, sizeof err) == 0, "sweep: %s", err);
  CHECK(r.ntrials >= m && r.ntrials <= m + 8 && r.space == s.n && s.compiles == r.ntrials && s.mixups == 0,
        "%d trials of %d picks, space %d, %d compiles, %d mixups", r.ntrials, m, r.space, s.compiles, s.mixups);
  CHECK(r.winner >= 0 && strcmp(r.trials[r.winner].config, s.configs[fast]) == 0, "winner %s",
        r.winner >= 0 ? r.trials[r.winner].config : "none");
  CHECK(s.singles[fast] == 7 && s.singles[decoy] == 7 && s.copy_singles == 7, "rounds: fastest %d, decoy %d, copy %d",
        s.singles[fast], s.singles[decoy], s.copy_singles);
  CHECK(s.singles[slow] == 0 && r.verified == r.ntrials, "an unpicked config was timed");
  CHECK(s.warmups >= 1, "no warm-up: the first time call was a config's");
  int kept_ok = 1;
  for (int i = 0; i < r.ntrials; i++) kept_ok &= r.trials[i].kept == find(&s, r.trials[i].config) % 2;
  CHECK(kept_ok, "a trial's kept flag is not its cubin's");
  tune_result_free(&r);
  free(idx), free(near);
  script_free(&s);
}

/* A leader's sibling (another exchange or hint), not picked by the prior, is timed in the second
** round and wins when it is faster; with siblings 0 it is never compiled. A long row, where the
** prior keeps one exchange of a split. */
static void test_siblings(void)
{
  char **lead, err[512];
  int *idx, m, sib = -1;
  const gen_Problem saved = problem;
  problem.rows = 42, problem.cols = 140799;
  for (int pass = 0; pass < 2; pass++) {
    Script s;
    tune_Result r;
    script_init(&s);
    idx = calloc((size_t)s.n, sizeof *idx), m = tune_fast_pick(&problem, s.configs, s.n, 48, idx);
    s.us[idx[m - 1]] = 99;
    lead = malloc(sizeof *lead * (size_t)m);
    for (int k = 0; k < m; k++) lead[k] = s.configs[idx[k]];
    if (tune_fast_siblings(&lead[m - 1], 1, s.configs, s.n, lead, m, &sib, 1) != 1) {
      CHECK(0, "the leader %s has no sibling", lead[m - 1]);
      break;
    }
    s.us[sib] = 90;
    s.siblings = pass ? 0 : -1;
    CHECK(run(&s, 48, 3, &r, err, sizeof err) == 0, "sweep: %s", err);
    const char *want = s.configs[pass ? idx[m - 1] : sib];
    CHECK(r.winner >= 0 && strcmp(r.trials[r.winner].config, want) == 0, "siblings %s: winner %s, not %s",
          pass ? "off" : "on", r.winner >= 0 ? r.trials[r.winner].config : "none", want);
    CHECK(pass ? r.ntrials == m : r.ntrials > m, "siblings %s: %d trials of %d picks", pass ? "off" : "on",
          r.ntrials, m);
    tune_result_free(&r);
    free(idx), free(lead);
    script_free(&s);
  }
  problem = saved;
}

/* keep 0: every config compiled and timed (the full sweep); a cancel stops the fast one. */
static void test_full_and_cancel(void)
{
  Script s;
  tune_Result r;
  char err[512];
  script_init(&s);
  CHECK(run(&s, 0, 3, &r, err, sizeof err) == 0 && r.ntrials == s.n && s.compiles == s.n && r.verified == s.n,
        "full: %d trials, %d compiles of %d", r.ntrials, s.compiles, s.n);
  tune_result_free(&r);
  script_free(&s);
  script_init(&s);
  s.cancel_after = 5;
  CHECK(run(&s, 48, 3, &r, err, sizeof err) == 0 && r.cancelled && r.winner == -1 && s.done == 5 &&
        s.copy_singles == 0, "cancel: cancelled %d, winner %d, %d done", r.cancelled, r.winner, s.done);
  tune_result_free(&r);
  script_free(&s);
}

int main(void)
{
  char err[1024];
  if (gen_open(&gen, NULL, err, sizeof err)) return fprintf(stderr, "gen: %s\n", err), 1;
  test_pick();
  test_untuned_added();
  test_fast_sweep();
  test_siblings();
  test_full_and_cancel();
  gen_close(gen);
  return check_done("test_fast");
}
