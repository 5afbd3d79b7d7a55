/*
** tune.c — the main job: softmax-tune --gpu N --shape RxC. Answers from the cache when it can,
** else sweeps the space on the GPU, prints the winner and the top five, and stores the run.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "reverify.h"
#include "tune.h"
#include "untuned.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
  (void)sig;
  interrupted = 1;
}

typedef struct Progress {
  int tty;
  int64_t bytes;
} Progress;

static void progress(void *ud, int done, int total, const tune_Trial *t, const tune_Trial *best)
{
  Progress *p = ud;
  char bar[31];
  if (!p->tty) return;
  int fill = done * 30 / total;
  memset(bar, '=', (size_t)fill);
  memset(bar + fill, ' ', (size_t)(30 - fill));
  bar[30] = '\0';
  fprintf(stderr, "\r[%s] %d/%d", bar, done, total);
  if (best) fprintf(stderr, "  best %.1f us (%.0f GB/s)", best->us, p->bytes / best->us / 1e3);
  fprintf(stderr, "  %-8s\033[K", t->status == TUNE_OK ? "ok" : t->status == TUNE_PRUNED ? "pruned" : "failed");
  if (done == total) fputs("\r\033[K", stderr);
  fflush(stderr);
}

void cli_print_gpu(const tune_Device *d)
{
  int major = 0, minor = 0;
  gen_nvrtc_version(&major, &minor);
  printf("GPU %d: %s, sm_%d, %d SMs, %.1f GB, driver %d.%d, NVRTC %d.%d\n", d->ordinal, d->name, d->arch, d->sms,
         d->mem / 1e9, d->driver / 1000, d->driver % 1000 / 10, major, minor);
}

static void print_header(const tune_Device *d, const gen_Problem *p, int64_t bytes)
{
  char op[64];
  gen_op_key(p->op, p->mask, p->bias, op, sizeof op);
  cli_print_gpu(d);
  printf("problem: %lldx%lld %s %s, %.3f GB moved per call (read + write; the floor: %s)\n", (long long)p->rows,
         (long long)p->cols, gen_dtype_name(p->dtype), op, bytes / 1e9, gen_op(p->op)->floor_text);
}

void cli_print_attn(const gen_Problem *p, const tune_AttnOptions *a)
{
  AttnParams k;
  if (!gen_op_is_attn(p->op)) return;
  tune_attn_params(p, a, &k);
  printf("options: B %lld, H %lld, Q %lld, K %lld, mask %s, causal offset %lld, window %lld, scale %g, softcap %g, bias %s;"
         " %.1f%% of the scores visible as timed (launch arguments but the kinds: a sweep verifies with these;"
         " key lengths: verified with full, empty and random rows, timed spread over [K/4, K])\n",
         (long long)(p->rows / k.q / k.h), (long long)k.h, (long long)k.q, (long long)p->cols, gen_mask_name(p->mask),
         (long long)k.offset, (long long)k.window, k.scale, k.softcap, gen_bias_name(p->bias),
         100. * (double)tune_attn_visible(p, &k) / ((double)p->rows * (double)p->cols));
}

void cli_attn_bytes(gen_Problem *p, const tune_AttnOptions *a)
{
  AttnParams k;
  tune_attn_params(p, a, &k);
  p->visible = tune_attn_visible(p, &k);   /* the visible inputs read */
  p->capped = k.softcap > 0.f;
}

void cli_print_ce(const gen_Problem *p, const tune_CeOptions *ce)
{
  if (gen_op(p->op)->params != 1) return;
  printf("options: ignore_index %lld, label smoothing %g, z-loss %g, softcap %g, %s, %s labels (launch arguments: one tuned"
         " config serves every value, a softcap's kernel compiled from it; a sweep verifies with these)\n", (long long)ce->ignore, ce->smoothing, ce->zloss, ce->softcap,
         ce->weight ? "class weights" : "no weights", ce->labels64 ? "int64" : "int32");
}

static void print_result(const tune_Result *r)
{
  int top[5], n = tune_top(r, top, 5);
  printf("copy floor  %10.1f us  %7.1f GB/s\n", r->copy_us, r->bytes / r->copy_us / 1e3);
  if (r->winner < 0) {
    printf("no winner: no config passed (see softmax-tune log for the reasons)\n");
    return;
  }
  const tune_Trial *w = &r->trials[r->winner];
  printf("winner      %10.1f us  %7.1f GB/s  %.3f of copy  %s\n", w->us, w->gbps, w->frac, w->config);
  printf("top %d (finalists re-timed interleaved with the copy):\n", n);
  printf("  %-3s %-74s %10s %9s %8s\n", "#", "config", "us", "GB/s", "of copy");
  for (int i = 0; i < n; i++) {
    const tune_Trial *t = &r->trials[top[i]];
    printf("  %-3d %-74s %10.1f %9.1f %8.3f%s\n", i + 1, t->config, t->us, t->gbps, t->frac, t->finalist ? "" : "  (first round)");
  }
  int kept = 0;
  for (int i = 0; i < r->ntrials; i++) kept += r->trials[i].kept;
  printf("swept %d configs in %.1f s: %d verified, %d pruned, %d failed", r->ntrials, r->seconds, r->verified,
         r->pruned, r->failed);
  if (kept) printf("; %d compiled before (kept cubins)", kept);
  putchar('\n');
  if (r->ntrials < r->space)
    printf("(the fast sweep: %d of the space's %d configs, ranked by a prior; --sweep full: all)\n", r->ntrials, r->space);
}

/* --space full: where the pruned space's best trial stands against the full grid's winner. */
static void print_pruning_loss(gen_State *g, const gen_Problem *p, const tune_Result *r)
{
  gen_Problem q = *p;
  char **list;
  int n, best = -1;
  q.full = 0;
  if (r->winner < 0 || gen_space(g, &q, &list, &n)) return;
  for (int i = 0; i < r->ntrials; i++) {
    const tune_Trial *t = &r->trials[i];
    if (t->status != TUNE_OK || (best >= 0 && t->us >= r->trials[best].us)) continue;
    for (int j = 0; j < n; j++)
      if (strcmp(list[j], t->config) == 0) { best = i; break; }
  }
  gen_free_list(list, n);
  if (best < 0) {
    printf("pruned space: %d configs, none verified in this run\n", n);
    return;
  }
  const tune_Trial *b = &r->trials[best], *w = &r->trials[r->winner];
  printf("pruned space: %d of %d configs; its best %.1f us, %.3f of copy%s: %.1f%% slower than the full grid's winner\n",
         n, r->ntrials, b->us, b->frac, b->finalist ? "" : " (first round)", 100.0 * (b->us / w->us - 1));
}

static int answer_from_cache(cli_Options *o, gen_State *g, const gen_Problem *p, cache_Db *db, const cache_Key *k,
                             const char *path)
{
  cache_Entry e;
  int rc = cache_get(db, k, &e);
  if (rc == CACHE_CORRUPT) {
    fprintf(stderr, "softmax-tune: %s; tuning again\n", cache_error(db));
    return -1;
  }
  if (rc == CACHE_MISS) return -1;
  if (rc) return cli_fail("%s", cache_error(db)), 1;
  if (tune_stale(k, &e) && (rc = cli_reverify(o, g, p, db, k, &e))) {   /* made under another driver or NVRTC */
    cache_entry_free(&e);
    return rc;
  }
  printf("winner      %10.1f us  %7.1f GB/s  %.3f of copy  %s\n", e.us, e.gbps, e.frac, e.config);
  printf("from the cache %s (tuned %s, run %lld; --force tunes again)\n", path, e.created, (long long)e.run);
  cache_entry_free(&e);
  return 0;
}

void cli_sweep_options(const cli_Options *o, tune_Options *opt)
{
  if (o->full || o->sweep == CLI_FULL) tune_default_options(opt);
  else tune_fast_options(opt);
  if (o->full) opt->budget_ms = 10.;   /* thousands of configs; the finalists are re-timed as usual */
  opt->untuned = untuned_sweep_config;
}

/* Everything after the cache missed: GPU buffers, the cache file (made only now that the
** problem is known to fit), the sweep, the report, the store. */
static int sweep(cli_Options *o, tune_Gpu *gpu, gen_State *g, gen_Problem *p, cache_Db **dbp, const cache_Key *k,
                 char *path, size_t pathlen)
{
  tune_Options opt;
  tune_Result r;
  char **list;
  int n, rc;
  int64_t run;
  Progress pr = { isatty(2) && !o->quiet, gen_problem_bytes(p) };
  if (gen_space(g, p, &list, &n)) return cli_fail("%s", gen_error(g)), 2;
  gen_free_list(list, n);
  if ((rc = tune_gpu_prepare(gpu, g, p, n, o->err, sizeof o->err))) return cli_fail("%s", o->err), rc == 2 ? 2 : 1;
  if (!*dbp && (cache_path(o->cache, 1, path, pathlen, o->err, sizeof o->err) ||
                cache_open(dbp, path, 1, o->err, sizeof o->err)))
    return cli_fail("%s", o->err), 2;
  cache_Db *db = *dbp;
  cli_sweep_options(o, &opt);
  opt.cancel = &interrupted;
  opt.progress = progress;
  opt.progress_ud = &pr;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  tune_Backend b = tune_gpu_backend(gpu);
  rc = tune_sweep(g, p, &b, &opt, &r, o->err, sizeof o->err);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (pr.tty) fputs("\r\033[K", stderr);
  if (rc) {
    cli_fail("%s", o->err);
    tune_result_free(&r);
    return 1;
  }
  if (r.cancelled) {
    cli_fail("interrupted after %.1f s: nothing was stored", r.seconds);
    tune_result_free(&r);
    return 130;
  }
  print_result(&r);
  if (p->full) print_pruning_loss(g, p, &r);
  rc = tune_store(db, k, &r, &run, o->err, sizeof o->err);
  if (rc) cli_fail("%s", o->err);
  else printf("stored in %s (run %lld); every trial: softmax-tune log --run %lld\n", path, (long long)run, (long long)run);
  int won = r.winner >= 0;
  tune_result_free(&r);
  return rc ? 1 : won ? 0 : 1;
}

int cli_tune(cli_Options *o)
{
  if (cli_is_batch(o)) return cli_batch(o);
  char path[4096];
  cache_Db *db = NULL;
  tune_Gpu *gpu = NULL;
  gen_State *g = NULL;
  gen_Problem p = { 0 };
  cache_Key k;
  int rc = 2;
  if (!o->shape) return cli_fail("tuning needs --shape RxC, such as --shape 32000x16384 (see --help)"), 2;
  if (o->config && o->full) return cli_fail("--config '%s' and --space full do not go together: one sweeps a config, the other the grid", o->config), 2;
  /* an existing cache must be usable before any GPU work; a missing one is made only to store */
  if (cache_path(o->cache, 0, path, sizeof path, o->err, sizeof o->err) ||
      ((rc = cache_open(&db, path, 0, o->err, sizeof o->err)) && rc != CACHE_MISS) ||
      cache_writable(path, o->err, sizeof o->err)) {
    cli_fail("%s", o->err);
    return 2;
  }
  rc = 2;
  if (tune_gpu_open(&gpu, o->gpu, o->err, sizeof o->err) || (o->sms && tune_gpu_limit_sms(gpu, o->sms, o->err, sizeof o->err))) {
    cli_fail("%s", o->err);
    goto done;
  }
  rc = 1;
  if (gen_open(&g, o->templates, o->err, sizeof o->err)) {
    cli_fail("%s", o->err);
    goto done;
  }
  cli_problem(o, &p);
  p.full = o->full, p.only = o->config;
  tune_device_limits(tune_gpu_device(gpu), &p);
  if (gen_op_is_attn(p.op)) cli_attn_bytes(&p, &o->attn);
  if (tune_key(g, tune_gpu_device(gpu), &p, &k, o->err, sizeof o->err)) {
    cli_fail("%s", o->err);
    goto done;
  }
  print_header(tune_gpu_device(gpu), &p, gen_problem_bytes(&p));
  cli_print_ce(&p, &o->ce);
  cli_print_attn(&p, &o->attn);
  tune_gpu_ce_options(gpu, &o->ce);
  if (o->max_local >= 0) tune_gpu_max_local(gpu, o->max_local);
  tune_gpu_attn_options(gpu, &o->attn);
  if (o->sms) printf("on %d SMs of the GPU (--sms %d, a green context): every kernel, the copy floor too\n", p.sms, o->sms);
  if (!o->force && !o->full && !o->config && db && (rc = answer_from_cache(o, g, &p, db, &k, path)) >= 0) goto done;
  fflush(stdout);
  rc = sweep(o, gpu, g, &p, &db, &k, path, sizeof path);
done:
  gen_close(g);
  tune_gpu_close(gpu);
  cache_close(db);
  return rc;
}
