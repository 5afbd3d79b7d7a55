/*
** batch.c — tuning a list at once, on one GPU or several: softmax-tune --shape A,B --dtype
** f32,bf16, --shapes FILE, --gpu all or 0,1,3. One progress line over every problem and GPU
** (stderr, when a terminal), a line per problem as it finishes, a summary table at the end.
** Exit status: 0 all tuned, 1 any failed, 2 bad input, 130 interrupted (what finished is kept).
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "cli.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
  (void)sig;
  stop = 1;
}

typedef struct Show {
  int tty;
  int finished;             /* items done with, any state */
} Show;

static int over(int state)
{
  return state != TUNE_ITEM_WAITING && state != TUNE_ITEM_RUNNING;
}

static const char *state_name(int s)
{
  static const char *const names[] = { "waiting", "tuning", "tuned", "cache", "FAILED", "stopped" };
  return names[s];
}

/* The bar over all items (running ones by their configs swept), then each GPU's problem. */
static void draw(const tune_Batch *b, const Show *s)
{
  char bar[31], buf[192];
  double part = s->finished;
  for (int u = 0; u < b->nunits; u++) {
    const tune_Item *it = b->current[u] >= 0 ? &b->items[b->current[u]] : NULL;
    if (it && it->total) part += (double)it->done / it->total;
  }
  int fill = (int)(part * 30 / b->nitems);
  memset(bar, '=', (size_t)fill);
  memset(bar + fill, ' ', (size_t)(30 - fill));
  bar[30] = '\0';
  fprintf(stderr, "\r[%s] %d/%d", bar, s->finished, b->nitems);
  for (int u = 0; u < b->nunits; u++) {
    const tune_Item *it = b->current[u] >= 0 ? &b->items[b->current[u]] : NULL;
    fprintf(stderr, "  GPU %d", b->units[u].dev->ordinal);
    if (it && b->nunits <= 2)   /* more GPUs: one line still */
      fprintf(stderr, " %s", cli_problem_line(&it->p, &it->attn, buf, sizeof buf));
    if (it && it->total) fprintf(stderr, " %d/%d", it->done, it->total);
    else fputs(it ? " starting" : " idle", stderr);
  }
  fputs("\033[K", stderr);
  fflush(stderr);
}

/* One line for item i: GPU, problem, state, figures or the error. */
static void print_item(const tune_Batch *b, const tune_Item *it)
{
  char buf[192], gpu[16] = "-";
  if (it->unit >= 0) snprintf(gpu, sizeof gpu, "%d", b->units[it->unit].dev->ordinal);
  printf("  %-34s %4s  %-7s", cli_problem_line(&it->p, &it->attn, buf, sizeof buf), gpu, state_name(it->state));
  if (it->state == TUNE_ITEM_TUNED || it->state == TUNE_ITEM_CACHED)
    printf(" %7.3f %10.1f %8.1f  %s\n", it->frac, it->us, it->seconds, it->config);
  else
    printf(" %7s %10s %8s  %s\n", "-", "-", "-", it->error[0] ? it->error : "not tuned");
}

static void progress(void *ud, const tune_Batch *b, int i)
{
  Show *s = ud;
  if (over(b->items[i].state)) {
    s->finished++;
    if (s->tty) fputs("\r\033[K", stderr);
    print_item(b, &b->items[i]);
    fflush(stdout);
  }
  if (s->tty) draw(b, s);
}

static void print_summary(const tune_Batch *b, double seconds)
{
  int n[TUNE_ITEM_STOPPED + 1] = { 0 };
  printf("summary (%d problems, %d GPUs, %d model%s):\n", b->nproblems, b->nunits, b->nmodels, b->nmodels == 1 ? "" : "s");
  printf("  %-34s %4s  %-7s %7s %10s %8s  %s\n", "problem", "GPU", "", "of copy", "us", "seconds", "config");
  for (int i = 0; i < b->nitems; i++) {
    print_item(b, &b->items[i]);
    n[b->items[i].state]++;
  }
  printf("%d tuned, %d from the cache, %d failed, %d not tuned in %.1f s\n", n[TUNE_ITEM_TUNED], n[TUNE_ITEM_CACHED],
         n[TUNE_ITEM_FAILED], n[TUNE_ITEM_WAITING] + n[TUNE_ITEM_RUNNING] + n[TUNE_ITEM_STOPPED], seconds);
}

/* The exit status, and a word on an interruption. */
static int verdict(const tune_Batch *b)
{
  int failed = 0, kept = 0;
  for (int i = 0; i < b->nitems; i++) {
    failed += b->items[i].state == TUNE_ITEM_FAILED;
    kept += b->items[i].state == TUNE_ITEM_TUNED || b->items[i].state == TUNE_ITEM_CACHED;
  }
  if (b->cancelled) {
    cli_fail("interrupted: the %d problem%s finished %s stored (the cache answers them next time); the other %d %s not",
             kept, kept == 1 ? "" : "s", kept == 1 ? "is" : "are", b->nitems - kept, b->nitems - kept == 1 ? "is" : "are");
    return 130;
  }
  if (failed) cli_fail("%d of %d problems failed (see the summary)", failed, b->nitems);
  return failed ? 1 : 0;
}

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* The list on the units: headers, the run (Ctrl-C stops it between configs), the summary. */
int cli_run_batch(const cli_Options *o, const tune_Unit *units, int nunits, const gen_Problem *list,
                  const tune_AttnOptions *attn, int n, const char *path)
{
  tune_BatchOptions bo = { .force = o->force, .cache_path = path, .templates = o->templates, .attn = attn };
  Show show = { isatty(2) && !o->quiet, 0 };
  tune_Batch b;
  char err[1024];
  for (int u = 0; u < nunits; u++) cli_print_gpu(units[u].dev);
  printf("%d problem%s; as each finishes:\n", n, n == 1 ? "" : "s");
  printf("  %-34s %4s  %-7s %7s %10s %8s  %s\n", "problem", "GPU", "", "of copy", "us", "seconds", "config");
  fflush(stdout);
  cli_sweep_options(o, &bo.sweep);
  bo.sweep.cancel = &stop;
  bo.progress = progress, bo.progress_ud = &show;
  double t0 = now_s();
  stop = 0;   /* a run before this one may have been stopped */
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  int rc = tune_batch(units, nunits, list, n, &bo, &b, err, sizeof err);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (show.tty) fputs("\r\033[K", stderr);
  if (rc) cli_fail("%s", err);
  else print_summary(&b, now_s() - t0);
  rc = rc ? 1 : verdict(&b);
  tune_batch_free(&b);
  return rc;
}

int cli_batch(cli_Options *o)
{
  char path[4096];
  gen_Problem *list = NULL;
  tune_AttnOptions *attn = NULL;
  tune_Unit *units = NULL;
  int ord[64], ngpus = 1, nunits = 0, n = 0, rc = 2;
  ord[0] = o->gpu;
  if (o->config || o->full) return cli_fail("--config and --space full tune one problem (--shape RxC) on one GPU"), 2;
  if (cli_problems(o, &list, &attn, &n, o->err, sizeof o->err) || (o->gpus && cli_parse_gpus(o->gpus, ord, &ngpus, o->err, sizeof o->err)) ||
      cache_path(o->cache, 1, path, sizeof path, o->err, sizeof o->err) || cache_writable(path, o->err, sizeof o->err) ||
      tune_gpu_units(ord, ngpus, &units, &nunits, o->err, sizeof o->err))
    cli_fail("%s", o->err);
  else
    rc = cli_run_batch(o, units, nunits, list, attn, n, path);
  tune_gpu_units_free(units, nunits);
  free(list);
  free(attn);
  return rc;
}
