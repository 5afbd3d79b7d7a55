/*
** test_compile.c — configs render and compile with NVRTC, with no warnings, for sm_80 and
** sm_90, cols 1 .. 128256 and all three dtypes (both ops, alternating by shape); the backward ops
** for cols 7 .. 128256, and every config of their ring (hold=ring, sm_90) for 256x1048576 and
** 2048x128256; and every hold=packed config of 16-bit log_softmax and softmax_backward over
** 2048x128256 (sm_90), at most a quarter of which may spill: where ptxas keeps the sum's floats
** instead of the words across the reduction, most of them do.
**   --all     every config of every space (label long: thousands of compiles)
**   --sample  per space, a fixed set of configs that together take every value each knob
**             takes in that space (what CI runs)
**   --sm75 [--all]  sm_75 (no bf16 arithmetic, no cp.async, no clusters): short, medium and
**             long rows, every dtype and op; the sample (CI), or every config (label long)
**   --ce [--all]  the cross-entropy ops (ce.cu) for sm_75, sm_80 and sm_90 over LLM vocabularies
**             (32000, 50257, 128256, 256000) and short and ragged rows, every dtype: their
**             spaces checked (valid, the families each arch and length should have), then per
**             arch a sample taking every knob value plus the rule's config of every problem
**             (CI), or every config of every space, both ops (label long)
**   --attn [--all]  attention_softmax (attn.cu) for sm_80 and sm_90: every mask and bias kind
**             (the bias tensor's in each of its types, a kernel of each at least),
**             rows held and read twice, every dtype: its spaces checked (valid, canonical, both
**             families where the row is long), then per arch a sample taking every knob value
**             plus the rule's config of every other problem, and the rule's softcap kernel (a
**             source of its own) of each mask kind of bias none (the backward's of one) and of
**             one pair (CI), or every config (label long)
**   --attn-bw [--all]  attention_softmax_backward (attn_bw.cu) the same way, every mask kind
**             (its bias is none); and both attention ops' tuner kernels (aux.cu) of every mask
**             kind, for sm_80 and sm_90
** Every config is compiled by NVRTC's front end; every third (CUBIN_EVERY), every packed config,
** every sm_75 config (its limits are the tightest: a block bound past its 1024 threads a SM is a
** ptxas warning) and, under --all, every config also through ptxas to a cubin (its warnings,
** registers and spills): ptxas takes about 55% of a compile. The rest stop at PTX for the
** virtual arch (gen_compile_ptx), which front-end warnings and errors still fail.
** With ST_TEST_RENDER_ONLY=1 in the environment every config is rendered and checked but none
** compiled: the sanitizer build's run (.ci/run), where NVRTC, not instrumented, is the time.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gen.h"
#include "sample.h"

typedef struct Job {
  gen_Kernel k;
  int arch;
  int ok, warned, stack;
  int packed;               /* one of the packed configs whose spills are counted */
  int cubin;                /* through ptxas too; else PTX alone */
  char err[512];
} Job;

#define CUBIN_EVERY 3   /* a job in this many goes through ptxas (and those the head names) */

static Job *jobs;
static int njobs, next_job, render_only;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
  for (;;) {
    pthread_mutex_lock(&lock);
    int i = next_job++;
    pthread_mutex_unlock(&lock);
    if (i >= njobs) return arg;
    Job *j = &jobs[i];
    gen_Cubin c;
    if (render_only) {
      j->ok = 1;
      continue;
    }
    int (*compile)(const char *, const char *, int, gen_Cubin *, char *, size_t) = j->cubin ? gen_compile : gen_compile_ptx;
    j->ok = compile(j->k.source, "softmax.cu", j->arch, &c, j->err, sizeof j->err) == 0 && c.size > 0;
    j->warned = c.log && strstr(c.log, "warning") != NULL;
    j->stack = c.stack;
    if (j->warned) snprintf(j->err, sizeof j->err, "%.400s", c.log);
    gen_cubin_free(&c);
  }
}

/* One rendered job of config cfg for p. */
static void add_job(gen_State *g, const gen_Problem *p, const char *cfg)
{
  Job *j = &jobs[njobs];
  j->arch = p->arch;
  if (gen_render(g, p, cfg, &j->k)) CHECK(0, "%s: %s", cfg, gen_error(g));
  else njobs++;
}

/* The configs of p's space (all, or the sample), those naming `only` where it is given. */
static void add_space(gen_State *g, const gen_Problem *p, int all, const char *only)
{
  char **list;
  int n;
  Cover cover = { .n = 0 };
  CHECK(gen_space(g, p, &list, &n) == 0, "%s", gen_error(g));
  for (int i = 0; i < n; i++) {
    if ((only && !strstr(list[i], only)) || (!all && !cover_adds(&cover, list[i]))) continue;
    add_job(g, p, list[i]);
  }
  gen_free_list(list, n);
}

/* sm_75's spaces: short, medium and long rows (ragged), every dtype and op. */
static void add_sm75(gen_State *g, int all)
{
  static const int64_t shapes[][2] = { { 4096, 7 }, { 1000, 4099 }, { 64, 128257 } };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int d = 0; d < GEN_NDTYPE; d++)
      for (int op = 0; op <= GEN_LOG_SOFTMAX_BW; op++) {
        gen_Problem p = { .rows = shapes[s][0], .cols = shapes[s][1], .dtype = d, .op = op, .arch = 75 };
        add_space(g, &p, all, NULL);
      }
}

static void add_sm80_90(gen_State *g, int all)
{
  static const int64_t cols[] = { 1, 7, 96, 128, 1000, 2048, 4096, 16384, 32000, 128256 };
  for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
    for (int d = 0; d < GEN_NDTYPE; d++)
      for (int arch = 80; arch <= 90; arch += 10) {
        gen_Problem p = { .rows = 64, .cols = cols[c], .dtype = d, .op = (int)((c + d) % 2), .arch = arch };
        add_space(g, &p, all, NULL);
      }
  static const int64_t bw_cols[] = { 7, 1000, 16384, 128256 };   /* backward.cu: held, two-pass, cluster */
  for (size_t c = 0; c < sizeof bw_cols / sizeof bw_cols[0]; c++)
    for (int d = 0; d < GEN_NDTYPE; d++)
      for (int arch = 80; arch <= 90; arch += 10) {
        gen_Problem p = { .rows = 64, .cols = bw_cols[c], .dtype = d, .op = GEN_SOFTMAX_BW + (int)((c + d) % 2), .arch = arch };
        add_space(g, &p, all, NULL);
      }
  /* the backward ring (sm_90): every config of the long rows it is for, both ops */
  static const int64_t ring_shapes[][2] = { { 256, 1048576 }, { 2048, 128256 } };
  for (size_t s = 0; s < sizeof ring_shapes / sizeof ring_shapes[0]; s++)
    for (int d = 0; d < GEN_NDTYPE; d++)
      for (int op = GEN_SOFTMAX_BW; op <= GEN_LOG_SOFTMAX_BW; op++) {
        gen_Problem p = { .rows = ring_shapes[s][0], .cols = ring_shapes[s][1], .dtype = d, .op = op, .arch = 90 };
        add_space(g, &p, 1, "hold=ring");
      }
  /* the packed configs of the ops whose output reuses the held words' floats most readily */
  int first_packed = njobs;
  for (int d = GEN_F16; d <= GEN_BF16; d++)
    for (int op = GEN_LOG_SOFTMAX; op <= GEN_SOFTMAX_BW; op++) {
      gen_Problem p = { .rows = 2048, .cols = 128256, .dtype = d, .op = op, .arch = 90 };
      add_space(g, &p, 1, "hold=packed");
    }
  for (int i = first_packed; i < njobs; i++) jobs[i].packed = 1;
}

/* A cross-entropy space: not empty, every config canonical, clusters (xchg=dsmem) from sm_90 on
** only and there for rows of 32000 and more, two reads for rows no block holds, and the rule's
** config one of the space's knob values. */
static void check_ce_space(gen_State *g, const gen_Problem *p, char **list, int n, const char *rule)
{
  int dsmem = 0, two = 0;
  char canon[256], what[96];
  snprintf(what, sizeof what, "sm_%d %lldx%lld %s %s", p->arch, (long long)p->rows, (long long)p->cols,
           gen_dtype_name(p->dtype), gen_op_name(p->op));
  CHECK(n > 0, "%s: an empty space", what);
  for (int i = 0; i < n; i++) {
    CHECK(gen_canon(g, p, list[i], canon, sizeof canon) == 0 && strcmp(canon, list[i]) == 0, "%s: %s not canonical", what, list[i]);
    dsmem += strstr(list[i], "xchg=dsmem") != NULL, two += strstr(list[i], "passes=2") != NULL;
  }
  CHECK(p->arch >= 90 ? dsmem > 0 || p->cols < 32000 : dsmem == 0, "%s: %d cluster configs", what, dsmem);
  CHECK(two > 0 || p->cols < 8192, "%s: no two-read config", what);
  CHECK(gen_canon(g, p, rule, canon, sizeof canon) == 0, "%s: the rule's %s: %s", what, rule, gen_error(g));
}

static void add_aux(gen_State *g, const gen_Problem *p, const char *name);

/* cfg's softcap kernel for p (a source of its own: gen_Problem.capped). */
static void add_capped(gen_State *g, const gen_Problem *p, const char *cfg)
{
  gen_Problem q = *p;
  q.capped = 1;
  add_job(g, &q, cfg);
}

/* The cross-entropy ops' spaces and compiles (--ce). */
static void add_ce(gen_State *g, int all)
{
  static const int64_t cols[] = { 2, 7, 1000, 4099, 32000, 50257, 128256, 256000, 262147 };
  static const int arches[] = { 75, 80, 90 };
  for (size_t a = 0; a < sizeof arches / sizeof *arches; a++) {
    Cover cover = { .n = 0 };
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
      for (int d = 0; d < GEN_NDTYPE; d++)
        for (int op = GEN_CE; op <= GEN_CE_LOSS; op++) {
          gen_Problem p = { .rows = cols[c] > 100000 ? 1024 : 8192, .cols = cols[c], .dtype = d, .op = op, .arch = arches[a] };
          char **list, rule[256];
          int n;
          if (gen_space(g, &p, &list, &n) || gen_heuristic(g, &p, 0, rule, sizeof rule)) {
            CHECK(0, "%s", gen_error(g));
            continue;
          }
          check_ce_space(g, &p, list, n, rule);
          const int sampled = (op - GEN_CE) == (int)((c + (size_t)d) % 2);   /* the sample: one op a problem, alternating */
          for (int i = 0; i < n; i++)
            if (all || (sampled && cover_adds(&cover, list[i]))) add_job(g, &p, list[i]);
          if (sampled) {   /* the rule, and its softcap's kernel */
            if (!all) add_job(g, &p, rule);
            add_capped(g, &p, rule);
          }
          gen_free_list(list, n);
          if (c == 0 && op == GEN_CE) add_aux(g, &p, "ce_steps");   /* the steps' module, one a dtype */
        }
  }
}

/* A module of kernels without a config for p: the tuner's (aux.cu), cross-entropy's steps
** (ce_steps.cu). */
static void add_aux(gen_State *g, const gen_Problem *p, const char *name)
{
  Job *j = &jobs[njobs];
  memset(&j->k, 0, sizeof j->k);
  j->arch = p->arch;
  snprintf(j->k.config, sizeof j->k.config, "%s.cu of %s %s mask %s sm_%d", name, gen_dtype_name(p->dtype), gen_op_name(p->op),
           gen_mask_name(p->mask), p->arch);
  if (gen_aux(g, p, name, &j->k.source)) CHECK(0, "%s: %s", j->k.config, gen_error(g));
  else njobs++;
}

/* attention_softmax's (or its backward's, op) spaces and compiles (--attn, --attn-bw): each kind
** on a problem of its own shape. */
static void add_attn(gen_State *g, int all, int op)
{
  static const int64_t cols[] = { 1, 64, 1000, 4099, 20000 };
  for (int arch = 80; arch <= 90; arch += 10) {
    Cover cover = { .n = 0 };
    for (int mask = 0; mask < GEN_NMASK; mask++)
      for (int bias = 0; bias < (op == GEN_ATTN ? GEN_NBIAS : 1); bias++)
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
          const int d = (int)((c + (size_t)mask + (size_t)bias) % GEN_NDTYPE);
          gen_Problem p = { .rows = 4096, .cols = cols[c], .dtype = d, .op = op, .mask = mask, .bias = bias, .arch = arch,
                            .bias_type = bias == GEN_BIAS_TENSOR ? (int)(c % 4) : 0 };   /* a tensor's four types */
          if (op == GEN_ATTN_BW && c == 2) add_aux(g, &p, "aux"), p.op = GEN_ATTN, add_aux(g, &p, "aux"), p.op = op;
          char **list, rule[256], canon[256];
          int n, two = 0;
          if (gen_space(g, &p, &list, &n) || gen_heuristic(g, &p, 0, rule, sizeof rule)) {
            CHECK(0, "%s", gen_error(g));
            continue;
          }
          CHECK(n > 0, "sm_%d %s %s cols %lld: an empty space", arch, gen_mask_name(mask), gen_bias_name(bias), (long long)cols[c]);
          for (int i = 0; i < n; i++) {
            CHECK(gen_canon(g, &p, list[i], canon, sizeof canon) == 0 && strcmp(canon, list[i]) == 0, "%s not canonical", list[i]);
            two += strstr(list[i], "passes=2") != NULL;
            if (all || cover_adds(&cover, list[i]) || (p.bias_type && i == 0)) add_job(g, &p, list[i]);
          }
          CHECK(two > 0 || cols[c] * gen_dtype_size(d) < 8192, "sm_%d cols %lld: no two-read config", arch, (long long)cols[c]);
          if (!all && c % 2 == 0) add_job(g, &p, rule);
          /* the softcap's kernel: of each mask kind where a plain kernel holds one row loop
          ** (attn.cu); the backward's differs by name alone */
          if (c == 2 && (op == GEN_ATTN ? bias == GEN_BIAS_NONE : mask == 0)) add_capped(g, &p, rule);
          gen_free_list(list, n);
        }
    /* pair=mirror, offered where Q == K may hold (rows a multiple of cols), for both ops: a causal
    ** problem of 4 x cols rows for each length, its mirror configs (all, or those the sample lacks) */
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
      gen_Problem p = { .rows = 4 * cols[c], .cols = cols[c], .dtype = (int)(c % GEN_NDTYPE), .op = op, .mask = GEN_MASK_CAUSAL,
                        .arch = arch };
      char **list;
      int n;
      if (gen_space(g, &p, &list, &n)) {
        CHECK(0, "%s", gen_error(g));
        continue;
      }
      for (int i = 0, capped = 0; i < n; i++)
        if (strstr(list[i], "pair=mirror") && (all || cover_adds(&cover, list[i]) || c == 3)) {
          add_job(g, &p, list[i]);
          if (c == 3 && op == GEN_ATTN && !capped++) add_capped(g, &p, list[i]);   /* a softcap's pairs' loop */
        }
      gen_free_list(list, n);
    }
  }
}

int main(int argc, char **argv)
{
  int sm75 = argc > 1 && strcmp(argv[1], "--sm75") == 0, ce = argc > 1 && strcmp(argv[1], "--ce") == 0;
  int attn = argc > 1 && strcmp(argv[1], "--attn") == 0, attn_bw = argc > 1 && strcmp(argv[1], "--attn-bw") == 0;
  attn = attn || attn_bw;
  int all = argc > 1 + (sm75 || ce || attn) && strcmp(argv[1 + (sm75 || ce || attn)], "--all") == 0;
  char err[1024];
  gen_State *g;
  const char *ro = getenv("ST_TEST_RENDER_ONLY");
  render_only = ro && strcmp(ro, "0") != 0;
  if (gen_open(&g, NULL, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
  jobs = calloc(40000, sizeof *jobs);
  if (attn) add_attn(g, all, attn_bw ? GEN_ATTN_BW : GEN_ATTN);
  else if (ce) add_ce(g, all);
  else if (sm75) add_sm75(g, all);
  else add_sm80_90(g, all);
  gen_close(g);

  int cubins = 0;
  for (int i = 0; i < njobs; i++) cubins += jobs[i].cubin = all || jobs[i].packed || jobs[i].arch == 75 || i % CUBIN_EVERY == 0;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int nthreads = cores > 1 ? (int)cores : 1;
  pthread_t t[64];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < nthreads && i < 64; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < nthreads && i < 64; i++) pthread_join(t[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);

  int spilled = 0, packed = 0, packed_spilled = 0;
  for (int i = 0; i < njobs; i++) {
    Job *j = &jobs[i];
    CHECK(j->ok && !j->warned, "sm_%d %s: %s", j->arch, j->k.config, j->err);
    spilled += j->stack > 0;
    packed += j->packed, packed_spilled += j->packed && j->stack > 0;
    gen_kernel_free(&j->k);
  }
  CHECK(render_only || sm75 || ce || attn || (packed > 0 && 4 * packed_spilled <= packed), "%d of %d packed configs spill", packed_spilled, packed);
  if (render_only) printf("rendered %d configs, compiled none (ST_TEST_RENDER_ONLY)\n", njobs);
  else printf("compiled %d configs (%d to cubins, the rest to PTX) on %d threads in %.1f s; %d of the cubins use local memory "
              "(pruned on the GPU)\n", njobs, cubins, nthreads, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, spilled);
  free(jobs);
  const char *name = attn_bw ? (all ? "test_compile --attn-bw --all" : "test_compile --attn-bw") : attn ? (all ? "test_compile --attn --all" : "test_compile --attn") : ce ? (all ? "test_compile --ce --all" : "test_compile --ce") : sm75 ? (all ? "test_compile --sm75 --all" : "test_compile --sm75") : all ? "test_compile --all" : "test_compile --sample";
  return check_done(name);
}
