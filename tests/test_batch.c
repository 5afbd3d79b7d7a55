/*
** test_batch.c — tuning a list at once, on fake GPUs (fake_backend.h): lists and shapes files
** parsed (good and bad), --gpu lists, a list over two GPUs of one model (the work split between
** them, each problem tuned once) and one of another (tuning all of it), the fake's fastest
** config winning each, the cache answering a second run, the compiles queued ahead handing
** the sweep every cubin, a cancel keeping the finished problems, and the command's summary
** and exit status, Ctrl-C included; shapes lines of the cross-entropy and attention ops (good
** and bad), an attention line's options reaching the GPU that tunes it, and its summary line.
** With --parse FILE: FILE's problems, printed as shapes lines.
*/
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "check.h"
#include "cli.h"
#include "fake_backend.h"

void cli_fail(const char *fmt, ...)   /* main.c's, which the test does not link */
{
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static char dir[] = "/tmp/test_batch.XXXXXX";

static const char *file(const char *name, const char *text)
{
  static char path[4][512];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, 512, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (f) fputs(text, f), fclose(f);
  return p;
}

/* cli_problems of these options: the count (or -1) and the error; the attention options into *a
** (NULL: freed). */
static int problems_with(const char *shape, const char *shapes, const char *dtypes, const char *ops, gen_Problem **l,
                         tune_AttnOptions **a, char *err)
{
  cli_Options o = { .dtype = -1, .op = -1, .shape = shape, .shapes = shapes, .dtypes = dtypes, .ops = ops };
  tune_AttnOptions *attn;
  int n;
  *l = NULL;
  if (cli_problems(&o, l, &attn, &n, err, 512)) return -1;
  if (a) *a = attn;
  else free(attn);
  return n;
}

static int problems(const char *shape, const char *shapes, const char *dtypes, const char *ops, gen_Problem **l, char *err)
{
  return problems_with(shape, shapes, dtypes, ops, l, NULL, err);
}

static void check_lists(void)
{
  gen_Problem *l;
  char err[512];
  int ord[64], n;
  CHECK(problems("64x64,128x4096", NULL, "f32,bf16", "softmax,log_softmax", &l, err) == 8, "%s", err);
  CHECK(l && l[1].op == GEN_LOG_SOFTMAX && l[2].dtype == GEN_BF16 && l[4].rows == 128, "cross product order");
  free(l);
  CHECK(problems("64x64,64x64", NULL, NULL, NULL, &l, err) == 1, "duplicates kept");
  free(l);
  CHECK(problems("64x64,", NULL, NULL, NULL, &l, err) < 0 && strstr(err, "bad shape ''"), "%s", err);
  CHECK(problems("64x64,0x5", NULL, NULL, NULL, &l, err) < 0 && strstr(err, "0x5"), "%s", err);
  CHECK(problems(NULL, NULL, "f32,f8", NULL, &l, err) < 0 && strstr(err, "'f8'"), "%s", err);
  CHECK(problems(NULL, NULL, NULL, NULL, &l, err) < 0 && strstr(err, "--shapes"), "%s", err);
  const char *good = file("good.txt", "# the list\n\n64x64\n  128x4096 bf16   # a comment\n256x256 f16 log_softmax\n");
  CHECK(problems(NULL, good, "f32,bf16", NULL, &l, err) == 4, "%s", err);
  CHECK(l && l[1].dtype == GEN_BF16 && l[2].rows == 128 && l[3].op == GEN_LOG_SOFTMAX, "file order");
  free(l);
  CHECK(problems("64x64", good, NULL, NULL, &l, err) < 0 && strstr(err, "give one"), "%s", err);
  const char *bad[][2] = { { "64x64\n\n64y64\n", ":3: bad shape '64y64'" }, { "64x64 f8\n", ":1: unknown dtype 'f8'" },
                           { "# x\n64x64 f32 exp\n", ":2: unknown op 'exp'" }, { "64x64 f32 softmax x\n", ":1: expected" },
                           { "# nothing\n\n", "no shapes" } };
  for (int i = 0; i < 5; i++) {
    CHECK(problems(NULL, file("bad.txt", bad[i][0]), NULL, NULL, &l, err) < 0 && strstr(err, bad[i][1]), "%d: %s", i, err);
  }
  CHECK(problems(NULL, "/nonexistent/list", NULL, NULL, &l, err) < 0 && strstr(err, "/nonexistent/list"), "%s", err);
  CHECK(cli_parse_gpus("all", ord, &n, err, 512) == 0 && n == 0, "all");
  CHECK(cli_parse_gpus("0,1,3", ord, &n, err, 512) == 0 && n == 3 && ord[2] == 3, "0,1,3");
  CHECK(cli_parse_gpus("0,1,0", ord, &n, err, 512) && strstr(err, "GPU 0 is twice"), "%s", err);
  CHECK(cli_parse_gpus("0,-1", ord, &n, err, 512) && strstr(err, "'-1'"), "%s", err);
  CHECK(cli_parse_gpus("1,", ord, &n, err, 512) && strstr(err, "''"), "%s", err);
}

/* Shapes lines of the cross-entropy and attention ops: read with their shapes, kinds and options
** (a cache key's second line dropped, another mask kind of a shape kept), printed back as lines;
** bad ones refused with the line's number and the bad value. */
static void check_lines(void)
{
  gen_Problem *l;
  tune_AttnOptions *a;
  char err[512], line[192];
  const char *text = "64x50257 bf16 cross_entropy\n64x50257 bf16 cross_entropy_loss\n"
                     "4x16x2048x2048 bf16 attention_softmax mask=causal bias=alibi\n"
                     "2x4x8x3000 f16 attention_softmax_backward mask=causal+window window=256 softcap=30\n"
                     "1x1x1x32768 f32 attention_softmax   mask=padding bias=tensor offset=0 scale=0.125  # decode\n"
                     "4x16x2048x2048 bf16 attention_softmax mask=none\n"
                     "8x8x2048x2048 bf16 attention_softmax mask=causal bias=alibi\n";
  const char *want[] = { "64x50257 bf16 cross_entropy", "64x50257 bf16 cross_entropy_loss",
                         "4x16x2048x2048 bf16 attention_softmax mask=causal bias=alibi",
                         "2x4x8x3000 f16 attention_softmax_backward mask=causal_window bias=none window=256 softcap=30",
                         "1x1x1x32768 f32 attention_softmax mask=padding bias=tensor offset=0 scale=0.125",
                         "4x16x2048x2048 bf16 attention_softmax mask=none bias=none" };
  CHECK(problems_with(NULL, file("lines.txt", text), NULL, NULL, &l, &a, err) == 6, "%s", err);
  if (!l) return;
  CHECK(l[0].op == GEN_CE && l[0].rows == 64 && l[0].cols == 50257 && l[1].op == GEN_CE_LOSS, "the cross-entropy lines");
  CHECK(l[2].op == GEN_ATTN && l[2].rows == 4 * 16 * 2048 && l[2].cols == 2048 && l[2].mask == GEN_MASK_CAUSAL &&
        l[2].bias == GEN_BIAS_ALIBI && a[2].h == 16 && a[2].q == 2048, "line 3: rows %lld, mask %d, bias %d, H %lld, Q %lld",
        (long long)l[2].rows, l[2].mask, l[2].bias, (long long)a[2].h, (long long)a[2].q);
  CHECK(l[2].visible > l[2].rows * l[2].cols / 2 && l[2].visible < l[2].rows * l[2].cols, "causal: %lld scores visible",
        (long long)l[2].visible);
  CHECK(l[3].op == GEN_ATTN_BW && l[3].mask == GEN_MASK_CAUSAL_WINDOW && a[3].window == 256 && a[3].softcap == 30.f &&
        l[3].capped, "line 4: mask %d, window %lld, softcap %g", l[3].mask, (long long)a[3].window, a[3].softcap);
  CHECK(l[4].mask == GEN_MASK_PADDING && l[4].bias == GEN_BIAS_TENSOR && a[4].offset == 0 && a[4].scale == 0.125f,
        "line 5: mask %d, bias %d, offset %lld, scale %g", l[4].mask, l[4].bias, (long long)a[4].offset, a[4].scale);
  CHECK(l[5].mask == GEN_MASK_NONE && l[5].rows == l[2].rows && a[5].offset == TUNE_ATTN_AUTO, "line 6: another mask kind");
  for (int i = 0; i < 6; i++)
    CHECK(strcmp(cli_problem_line(&l[i], &a[i], line, sizeof line), want[i]) == 0, "problem %d printed as '%s'", i, line);
  free(l), free(a);
  const char *bad[][2] = {
    { "64x1 f32 cross_entropy\n", ":1: cross_entropy needs 2 or more classes" },
    { "64x64 f32 cross_entropy mask=causal\n", ":1: expected 'RxC [dtype] [op]', got 'mask=causal'" },
    { "# a\n4x16x2048 bf16 attention_softmax\n", ":2: bad shape '4x16x2048': attention_softmax takes BxHxQxK" },
    { "2x4x8x64 bf16 attention_softmax mask=diagonal\n", ":1: bad mask 'diagonal'" },
    { "2x4x8x64 bf16 attention_softmax bias=rope\n", ":1: bad bias 'rope': expected none, alibi or tensor" },
    { "2x4x8x64 bf16 attention_softmax mask=window\n", ":1: mask window needs a window >= 0" },
    { "2x4x8x64 bf16 attention_softmax window=4\n", ":1: a window (4) is for the masks with a window" },
    { "2x4x8x64 bf16 attention_softmax_backward bias=alibi\n", ":1: bias=alibi: attention_softmax_backward has no bias kind" },
    { "2x4x8x64 bf16 attention_softmax scale=inf\n", ":1: bad scale 'inf': expected a finite number" },
    { "2x4x8x64 bf16 attention_softmax softcap=-1\n", ":1: bad softcap '-1'" },
    { "2x4x8x64 bf16 attention_softmax mask=causal offset=1.5\n", ":1: bad offset '1.5': expected a whole number" },
    { "2x4x8x64 bf16 attention_softmax mask=window window=-3\n", ":1: bad window '-3': expected a width >= 0" },
    { "2x4x8x64 bf16 attention_softmax causal\n", ":1: expected an option as name=value (mask=causal), got 'causal'" },
    { "2x4x8x64 bf16 attention_softmax heads=4\n", ":1: unknown option 'heads'" },
    { "2x4x8x64 bf16 attention_softmax a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1\n", ":1: more than 12 words" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK(problems(NULL, file("bad.txt", bad[i][0]), NULL, NULL, &l, err) < 0 && strstr(err, bad[i][1]) && !strchr(err, '\n'),
          "%zu: %s", i, err);
  }
}

/* The fake's fastest config for p on u's device. */
static void best_config(gen_State *g, const fake_Gpu *u, gen_Problem p, char *out)
{
  fake_Backend f;
  tune_device_limits(&u->dev, &p);
  out[0] = '\0';
  if (fake_init(&f, g, &p, 0, 1) == 0) snprintf(out, 256, "%s", f.configs[f.best]);
  fake_free(&f);
}

static volatile sig_atomic_t cancel;

static void cancel_after_first(void *ud, const tune_Batch *b, int i)
{
  (void)ud;
  if (b->items[i].state == TUNE_ITEM_TUNED) cancel = 1;
}

static long long count_runs(const char *db)
{
  sqlite3 *s;
  long long n = -1;
  if (sqlite3_open(db, &s) == SQLITE_OK) n = query_int(s, "SELECT count(*) FROM runs");
  sqlite3_close(s);
  return n;
}

static int run(tune_Unit *u, int nu, gen_Problem *l, int n, const char *db, int force, int stop, tune_Batch *b)
{
  tune_BatchOptions o = { .force = force, .cache_path = db, .compile_threads = 2 };
  char err[512];
  tune_default_options(&o.sweep);
  o.sweep.threads = 2, o.sweep.min_reps = 3, o.sweep.max_reps = 5, o.sweep.rounds = 5, o.sweep.max_finalists = 3;
  o.sweep.cancel = &cancel;
  if (stop) o.progress = cancel_after_first;
  cancel = 0;
  int rc = tune_batch(u, nu, l, n, &o, b, err, sizeof err);
  CHECK(rc == 0, "tune_batch: %s", err);
  return rc;
}

static void check_batch(gen_State *g)
{
  fake_Gpu gpu[3];
  tune_Unit u[3] = { fake_gpu(&gpu[0], 0, "Fake A", 100), fake_gpu(&gpu[1], 1, "Fake A", 100),
                     fake_gpu(&gpu[2], 2, "Fake B", 100) };
  gen_Problem list[6];
  tune_Batch b;
  char db[600], best[256];
  snprintf(db, sizeof db, "%s/cache.db", dir);
  for (int i = 0; i < 6; i++) list[i] = fake_problem(64 << i);
  if (run(u, 3, list, 6, db, 0, 0, &b)) return;
  CHECK(b.nmodels == 2 && b.nitems == 12 && !b.cancelled, "%d models, %d items", b.nmodels, b.nitems);
  for (int i = 0; i < b.nitems; i++) {
    const tune_Item *it = &b.items[i];
    CHECK(it->state == TUNE_ITEM_TUNED, "item %d: state %d: %s", i, it->state, it->error);
    CHECK(i < 6 ? it->unit == 0 || it->unit == 1 : it->unit == 2, "item %d tuned on unit %d", i, it->unit);
    best_config(g, &gpu[it->unit], list[i % 6], best);
    CHECK(strcmp(it->config, best) == 0, "item %d: winner %s, not the fastest %s", i, it->config, best);
  }
  CHECK(gpu[0].prepared + gpu[1].prepared == 6 && gpu[2].prepared == 6, "prepared %d %d %d", gpu[0].prepared,
        gpu[1].prepared, gpu[2].prepared);
  CHECK(gpu[0].prepared > 0 && gpu[1].prepared > 0, "one GPU of model A did all: %d %d", gpu[0].prepared, gpu[1].prepared);
  for (int k = 0; k < 3; k++) {   /* each config compiled once, and ahead of its sweep after the first problem */
    CHECK(gpu[k].compiles == gpu[k].configs, "GPU %d: %d compiles for %d configs", k, gpu[k].compiles, gpu[k].configs);
    CHECK(gpu[k].ready == gpu[k].prepared - 1, "GPU %d: %d of %d later problems compiled ahead", k, gpu[k].ready,
          gpu[k].prepared - 1);
  }
  CHECK(count_runs(db) == 12, "%lld runs stored", count_runs(db));
  int seen = 0;
  for (int i = 0; i < 6; i++) seen |= 1 << b.order[i];
  CHECK(seen == 63, "the order is not the problems: %x", seen);
  CHECK(b.order[0] == 5 && b.order[5] == 0, "not the largest first: %d ... %d", b.order[0], b.order[5]);
  tune_batch_free(&b);

  /* again: every problem from the cache, nothing swept */
  if (run(u, 3, list, 6, db, 0, 0, &b)) return;
  for (int i = 0; i < b.nitems; i++) CHECK(b.items[i].state == TUNE_ITEM_CACHED, "item %d: state %d", i, b.items[i].state);
  CHECK(gpu[0].prepared + gpu[1].prepared + gpu[2].prepared == 12 && count_runs(db) == 12, "tuned again");
  CHECK(gpu[0].compiles + gpu[1].compiles + gpu[2].compiles == gpu[0].configs + gpu[1].configs + gpu[2].configs,
        "compiled for the cache's problems");
  tune_batch_free(&b);

  /* forced, cancelled once a problem is stored: what finished stays, the rest is not stored */
  if (run(u, 1, list, 6, db, 1, 1, &b)) return;
  int tuned = 0;
  for (int i = 0; i < b.nitems; i++) tuned += b.items[i].state == TUNE_ITEM_TUNED;
  CHECK(b.cancelled && tuned >= 1 && tuned < 6, "cancelled %d, %d tuned", b.cancelled, tuned);
  CHECK(count_runs(db) == 12 + tuned, "%lld runs after %d more", count_runs(db), tuned);
  tune_batch_free(&b);
}

/* cli_run_batch with stdout into a file: the exit status and what it printed. */
static int command(tune_Unit *u, int nu, gen_Problem *l, const tune_AttnOptions *a, int n, const char *db, char *out,
                   size_t outlen)
{
  cli_Options o = { .quiet = 1 };
  char path[600];
  snprintf(path, sizeof path, "%s/out.txt", dir);
  fflush(stdout);
  int saved = dup(1), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fd, 1);
  close(fd);
  int rc = cli_run_batch(&o, u, nu, l, a, n, db);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  FILE *f = fopen(path, "r");
  size_t got = f ? fread(out, 1, outlen - 1, f) : 0;
  out[got] = '\0';
  if (f) fclose(f);
  return rc;
}

static void check_command(void)
{
  static char out[1 << 16];
  fake_Gpu gpu[2];
  tune_Unit u[2] = { fake_gpu(&gpu[0], 0, "Fake A", 0), fake_gpu(&gpu[1], 1, "Fake B", 0) };
  gen_Problem list[3] = { fake_problem(64), fake_problem(128), fake_problem(256) };
  char db[600];
  snprintf(db, sizeof db, "%s/command.db", dir);
  int rc = command(u, 2, list, NULL, 3, db, out, sizeof out);
  CHECK(rc == 0, "exit %d:\n%s", rc, out);
  CHECK(strstr(out, "GPU 1: Fake B") && strstr(out, "summary (3 problems, 2 GPUs, 2 models)") &&
        strstr(out, "6 tuned, 0 from the cache, 0 failed, 0 not tuned"), "%s", out);
  CHECK(strstr(out, "256x4096 f32 softmax") && strstr(out, "tuned"), "%s", out);
  /* Ctrl-C while the second problem is set up: the first stays, exit 130 */
  u[0] = fake_gpu(&gpu[0], 0, "Fake C", 0);
  gpu[0].sigint_at = 2;
  rc = command(u, 1, list, NULL, 3, db, out, sizeof out);
  CHECK(rc == 130, "exit %d:\n%s", rc, out);
  CHECK(strstr(out, "1 tuned, 0 from the cache, 0 failed, 2 not tuned"), "%s", out);
  CHECK(signal(SIGINT, SIG_DFL) == SIG_DFL, "the command left its SIGINT handler");
}

/* An attention line tuned on a fake GPU: its options reach the unit, the summary names it as the line does. */
static void check_attn_command(void)
{
  static char out[1 << 16];
  const char *text = "2x4x8x3000 f16 attention_softmax_backward mask=causal+window window=256 softcap=30\n";
  fake_Gpu gpu;
  tune_Unit u = fake_gpu(&gpu, 0, "Fake A", 0);
  gen_Problem *l;
  tune_AttnOptions *a;
  char db[600], err[512];
  snprintf(db, sizeof db, "%s/attn.db", dir);
  if (problems_with(NULL, file("attn.txt", text), NULL, NULL, &l, &a, err) != 1) {
    CHECK(0, "%s", err);
    return;
  }
  int rc = command(&u, 1, l, a, 1, db, out, sizeof out);
  CHECK(rc == 0 && strstr(out, "2x4x8x3000 f16 attention_softmax_backward mask=causal_window bias=none window=256 softcap=30") &&
        strstr(out, "1 tuned, 0 from the cache"), "exit %d:\n%s", rc, out);
  CHECK(gpu.attn.h == 4 && gpu.attn.q == 8 && gpu.attn.window == 256 && gpu.attn.softcap == 30.f,
        "the unit tuned with H %lld, Q %lld, window %lld, softcap %g", (long long)gpu.attn.h, (long long)gpu.attn.q,
        (long long)gpu.attn.window, gpu.attn.softcap);
  free(l), free(a);
}

/* test_batch --parse FILE: FILE's problems as the command reads them, a shapes line each
** (tests/test_untuned_py.py checks that softmax_tune.write_untuned's files read back whole). */
static int parse_only(const char *path)
{
  gen_Problem *l;
  tune_AttnOptions *a;
  char err[512], line[192];
  int n = problems_with(NULL, path, NULL, NULL, &l, &a, err);
  if (n < 0) return fprintf(stderr, "%s\n", err), 2;
  for (int i = 0; i < n; i++) printf("%s\n", cli_problem_line(&l[i], &a[i], line, sizeof line));
  free(l), free(a);
  return 0;
}

int main(int argc, char **argv)
{
  gen_State *g;
  if (argc == 3 && strcmp(argv[1], "--parse") == 0) return parse_only(argv[2]);
  char err[512];
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  if (gen_open(&g, NULL, err, sizeof err)) return fprintf(stderr, "gen_open: %s\n", err), 1;
  check_lists();
  check_lines();
  check_batch(g);
  check_command();
  check_attn_command();
  gen_close(g);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return check_done("test_batch");
}
