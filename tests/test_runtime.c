/*
** test_runtime.c — the runtime library (include/softmax_tune.h).
**   test_runtime cpu   error paths without a GPU: codes and messages, nothing printed; the
**                      background worker's compiles (NVRTC), and a stop and exit during one
**   test_runtime gpu   on a GPU (exit 77 without one): every dtype and op against float64, with
**                      in == out, a non-default stream, 4 host threads at once, input and output
**                      aligned differently, widths and rows of one width class through one
**                      kernel, a class of the kernel set loaded without a compile, and the miss
**                      policies heuristic, tune and error
*/
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "background.h"
#include "check.h"
#include "kset.h"
#include "softmax_tune.h"
#include "tune.h"

/* st_ce_options as python/softmax_tune/_lib.py's CeOptions lays it out (tests/test_import_py.py
** holds the Python side to the same offsets): a field added on one side only fails a build or a test. */
_Static_assert(sizeof(st_ce_options) == 72 && offsetof(st_ce_options, reduction) == 8 &&
               offsetof(st_ce_options, weight) == 24 && offsetof(st_ce_options, bad_label) == 40 &&
               offsetof(st_ce_options, reduced) == 48 && offsetof(st_ce_options, reduced_in_dtype) == 56 &&
               offsetof(st_ce_options, grad_scale) == 64,
               "st_ce_options moved: change _lib.CeOptions and tests/test_import_py.py with it");

/* st_problem as _lib._Problem lays it out; kind took the padding after backward (the size stays 32) */
_Static_assert(sizeof(st_problem) == 32 && offsetof(st_problem, backward) == 24 && offsetof(st_problem, kind) == 28,
               "st_problem moved: change _lib._Problem with it");
/* st_attn_problem as _lib._AttnProblem lays it out (tests/test_untuned_py.py holds the Python side to these offsets) */
_Static_assert(sizeof(st_attn_problem) == 72 && offsetof(st_attn_problem, causal_offset) == 32 &&
               offsetof(st_attn_problem, scale) == 48 && offsetof(st_attn_problem, dtype) == 56 &&
               offsetof(st_attn_problem, mask) == 64 && offsetof(st_attn_problem, bias) == 68,
               "st_attn_problem moved: change _lib._AttnProblem and tests/test_untuned_py.py with it");

/* st_attn_options as _lib.AttnOptions lays it out (tests/test_import_py.py holds the Python side) */
_Static_assert(sizeof(st_attn_options) == 88 && offsetof(st_attn_options, bias) == 48 &&
               offsetof(st_attn_options, bias_stride_q) == 72 && offsetof(st_attn_options, bias_type) == 80,
               "st_attn_options moved: change _lib.AttnOptions and tests/test_import_py.py with it");

/* st_vocab_args as _lib.VocabArgs lays it out (tests/test_import_py.py holds the Python side) */
_Static_assert(sizeof(st_vocab_args) == 200 && offsetof(st_vocab_args, label_smoothing) == 48 &&
               offsetof(st_vocab_args, label_type) == 60 && offsetof(st_vocab_args, weight) == 64 &&
               offsetof(st_vocab_args, sg_rows) == 152 && offsetof(st_vocab_args, lab) == 192,
               "st_vocab_args moved: change _lib.VocabArgs and tests/test_import_py.py with it");

static char dir[] = "/tmp/st_rtXXXXXX";
static char db[512];

/* st_vocab_parallel_step's checks, each naming the field and its value (host buffers: nothing launches). */
static void test_vocab_args(void)
{
  static double buf[64];
  char *b = (char *)buf;
  st_vocab_args a = { .rows = 4, .cols = 8, .start = 8, .total = 16, .world = 2, .ignore_index = -100, .labels = b,
                      .logits = b, .lse_local = (float *)b, .stats = (float *)b };
#define VERR(step, want, what) \
  CHECK(st_vocab_parallel_step(NULL, ST_BF16, step, &a, NULL) == ST_EINVAL && strstr(st_error(NULL), want), \
        "st_vocab_parallel_step, %s: %s", what, st_error(NULL))
  VERR(ST_VOCAB_STATS, "ctx is NULL", "checked first, then the ctx");
  VERR((st_vocab_step)9, "bad step 9", "bad step");
  VERR(ST_VOCAB_LOSS, "lse is NULL", "LOSS without lse");
  a.stats = NULL;
  VERR(ST_VOCAB_STATS, "STATS: stats is NULL", "STATS without stats");
  a.stats = (float *)b, a.logits = b + 1;
  VERR(ST_VOCAB_STATS, "logits is not aligned", "odd logits");
  a.logits = b, a.start = 9;
  VERR(ST_VOCAB_STATS, "[9, 17) is not within the 16", "shard outside");
  a.start = 8, a.label_smoothing = 1.5f;
  VERR(ST_VOCAB_STATS, "label_smoothing 1.5", "smoothing > 1");
  a.label_smoothing = 0.1f, a.weight = (float *)b;
  VERR(ST_VOCAB_STATS, "smoothing with class weights", "smoothing and weights");
  a.weight = NULL, a.label_smoothing = 0.f, a.softcap = 30.f, a.grad = b, a.w = a.delta = (float *)b;
  VERR(ST_VOCAB_RESCALE, "in place of the logits under a softcap", "RESCALE in place");
  a.world = 0;
  VERR(ST_VOCAB_LOSS, "world 0", "no ranks");
  CHECK(st_vocab_parallel_step(NULL, (st_dtype)5, ST_VOCAB_STATS, &a, NULL) == ST_EINVAL &&
        strstr(st_error(NULL), "dtype 5"), "st_vocab_parallel_step, bad dtype: %s", st_error(NULL));
#undef VERR
}

/* The background worker (runtime/background.h), no GPU needed: an ALiBi softcap class's kernel
** chosen, rendered and compiled off the calling thread; a second job of the same class reads its
** cubin back from the kept folder; a job it cannot make says why. */
static void test_background(void)
{
  char tmp[] = "/tmp/st_bgXXXXXX", err[256];
  bg_Worker *w = NULL;
  bg_Job *j[3];
  const gen_Problem p = { .rows = 512, .cols = 3072, .dtype = GEN_BF16, .op = GEN_ATTN, .arch = 90,
                          .mask = GEN_MASK_CAUSAL, .bias = GEN_BIAS_ALIBI, .capped = 1 };
  CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
  for (int i = 0; i < 3; i++) {
    CHECK((j[i] = calloc(1, sizeof *j[i])) != NULL, "calloc");
    j[i]->p = j[i]->key = p;
    j[i]->p.arch = j[i]->key.arch = i == 2 ? 12 : 90;   /* the third: an arch the templates refuse */
    snprintf(j[i]->kept, sizeof j[i]->kept, "%s", tmp);
    CHECK(bg_submit(&w, j[i], err, sizeof err) == 0, "bg_submit: %s", err);
  }
  for (int i = 0; i < 3; i++) bg_wait(w, j[i]);
  CHECK(!j[0]->rc && j[0]->cb.size > 0 && !j[0]->cb.kept && strstr(j[0]->k.config, "bias=alibi") &&
        gen_capped_name(j[0]->k.name), "the first job: rc %d, %zu bytes, %s %s: %s", j[0]->rc, j[0]->cb.size,
        j[0]->k.name, j[0]->k.config, j[0]->err);
  CHECK(!j[1]->rc && j[1]->cb.kept && j[1]->cb.size == j[0]->cb.size, "the second job not read back: %s", j[1]->err);
  CHECK(j[2]->rc && strstr(j[2]->err, "sm_12"), "the third job: rc %d, '%s'", j[2]->rc, j[2]->err);
  bg_stop(w);
  for (int i = 0; i < 3; i++) bg_job_free(j[i]);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  CHECK(system(cmd) == 0, "cleanup");
}

/* A process that stops its worker (st_close) before exit() exits cleanly however far its compile
** went: bg_stop finishes the job in hand. exit() with a thread inside NVRTC crashed 12 of 30 times
** (its teardown runs under the compile), so forked children each queue a job (an ALiBi class's
** kernel, about half a second) and stop 0-350 ms later, mostly inside the compile. */
static void test_exit_compiling(void)
{
  const gen_Problem p = { .rows = 512, .cols = 3072, .dtype = GEN_BF16, .op = GEN_ATTN, .arch = 90,
                          .mask = GEN_MASK_CAUSAL, .bias = GEN_BIAS_ALIBI };
  for (int i = 0; i < 8; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      char err[256];
      bg_Worker *w = NULL;
      bg_Job *j = calloc(1, sizeof *j);
      if (!j) _exit(3);
      j->p = j->key = p;   /* kept "": no kept cubins, a compile every time */
      if (bg_submit(&w, j, err, sizeof err)) _exit(4);
      usleep((useconds_t)(50 * i) * 1000);
      bg_stop(w);
      bg_job_free(j);
      exit(0);   /* the job done or dropped: either way no thread is inside NVRTC now */
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork or wait");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: %s %d", i, WIFSIGNALED(status) ? "signal" : "exit",
          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
}

/* The kernel set's row bands (kset_band: 0 under 64 rows of 8 KB and more, 2 from many_rows).
** The attention forward's 16-bit rows of 129-2048 vectors and a softcap's backward end the middle
** band at 163840 / G rows (G: decode_fwd's group); the plain backward at 4096; cross-entropy rows of
** 1025 classes to 64 KB at 1024 rows (a softcap's and a row of 1024 classes at 4096). */
static void test_bands(void)
{
  static const struct { int op, capped; int64_t rows, hi; int band; } B[] = {
    { GEN_ATTN, 0, 319, 6144, 1 }, { GEN_ATTN, 0, 320, 6144, 2 },   /* 768 vectors: G 512 */
    { GEN_ATTN_BW, 1, 319, 6144, 1 }, { GEN_ATTN_BW, 1, 320, 6144, 2 },
    { GEN_ATTN_BW, 0, 320, 6144, 1 }, { GEN_ATTN_BW, 0, 4096, 6144, 2 },
    { GEN_ATTN_BW, 1, 4095, 22528, 1 }, { GEN_ATTN_BW, 1, 63, 22528, 0 },
    { GEN_ATTN_BW, 1, 1279, 1536, 1 }, { GEN_ATTN_BW, 1, 1280, 1536, 2 },   /* 192 vectors: G 128 */
    { GEN_CE, 0, 1023, 1152, 1 }, { GEN_CE, 0, 1024, 1152, 2 }, { GEN_CE_LOSS, 0, 1024, 32768, 2 },
    { GEN_CE, 1, 1024, 1152, 1 }, { GEN_CE, 0, 1024, 1024, 1 }, { GEN_CE, 0, 1024, 32768, 1 },   /* 64 KB */
  };
  for (size_t i = 0; i < sizeof B / sizeof *B; i++)
    CHECK(kset_band(B[i].op, GEN_BF16, B[i].capped, B[i].rows, B[i].hi) == B[i].band, "%s%s bf16 %lld rows of %lld: band %d, want %d",
          gen_op_name(B[i].op), B[i].capped ? " softcap" : "", (long long)B[i].rows, (long long)B[i].hi,
          kset_band(B[i].op, GEN_BF16, B[i].capped, B[i].rows, B[i].hi), B[i].band);
}

static void test_cpu(void)
{
  st_ctx *c = (st_ctx *)1;
  char buf[8];
  CHECK(st_open(&c, 0, NULL) == ST_ENODEV && c == NULL, "st_open without a GPU: %s", st_error(NULL));
  CHECK(strstr(st_error(NULL), "libcuda.so.1") != NULL, "message: %s", st_error(NULL));
  CHECK(st_open(NULL, 0, NULL) == ST_EINVAL, "NULL ctx pointer");
  CHECK(st_softmax(NULL, ST_F32, ST_SOFTMAX, buf, buf, 0, 10, NULL) == ST_EINVAL && strstr(st_error(NULL), "0x10"),
        "rows = 0: %s", st_error(NULL));
  CHECK(st_softmax(NULL, (st_dtype)7, ST_SOFTMAX, buf, buf, 1, 10, NULL) == ST_EINVAL && strstr(st_error(NULL), "dtype 7"),
        "bad dtype: %s", st_error(NULL));
  CHECK(st_softmax(NULL, ST_F32, (st_op)3, buf, buf, 1, 10, NULL) == ST_EINVAL && strstr(st_error(NULL), "op 3"),
        "bad op: %s", st_error(NULL));
  CHECK(st_softmax(NULL, ST_F32, ST_SOFTMAX, buf, buf, 1, 10, NULL) == ST_EINVAL && strstr(st_error(NULL), "ctx is NULL"),
        "NULL ctx: %s", st_error(NULL));
  CHECK(st_softmax(NULL, ST_BF16, ST_SOFTMAX, buf, buf, 1LL << 40, 1LL << 40, NULL) == ST_EINVAL, "huge shape");
  CHECK(st_softmax_backward(NULL, ST_F32, (st_op)2, buf, buf, buf, 1, 10, NULL) == ST_EINVAL && strstr(st_error(NULL), "op 2"),
        "backward, bad op: %s", st_error(NULL));
  CHECK(st_softmax_backward(NULL, ST_F16, ST_LOG_SOFTMAX, buf, buf, buf, 1, 10, NULL) == ST_EINVAL &&
        strstr(st_error(NULL), "ctx is NULL"), "backward, NULL ctx: %s", st_error(NULL));
  st_options o = { (st_miss)9, NULL, NULL };
  CHECK(st_open_ex(&c, 0, NULL, &o) == ST_EINVAL, "bad miss policy");
  CHECK(st_untuned(NULL, NULL, 0) == -1 && strstr(st_error(NULL), "ctx is NULL"), "st_untuned, NULL ctx: %s", st_error(NULL));
  CHECK(st_untuned_attention(NULL, NULL, 0) == -1 && strstr(st_error(NULL), "st_untuned_attention: ctx is NULL"),
        "st_untuned_attention, NULL ctx: %s", st_error(NULL));
  CHECK(st_wait(NULL) == ST_EINVAL && strstr(st_error(NULL), "st_wait: ctx is NULL"), "st_wait, NULL ctx: %s", st_error(NULL));
  st_close(NULL);
  test_vocab_args();
  test_background();
  test_exit_compiling();
  test_bands();
}

/* ---- GPU ---- */

typedef struct Env {
  tune_Gpu *gpu;
  gen_State *gen;
  gen_Problem p;
  CUdeviceptr in, out;
  CUstream s;
  const tune_Driver *d;
} Env;

static int logged;
static void count_log(void *ud, const char *msg)
{
  (void)ud;
  (void)msg;
  __atomic_add_fetch(&logged, 1, __ATOMIC_SEQ_CST);
}

static int env_open(Env *e, int64_t rows, int64_t cols, int dtype, int op)
{
  char err[1024];
  memset(e, 0, sizeof *e);
  e->p = (gen_Problem){ .rows = rows, .cols = cols, .dtype = dtype, .op = op };
  int bad = tune_gpu_open(&e->gpu, 0, err, sizeof err) || gen_open(&e->gen, NULL, err, sizeof err);
  if (!bad) {
    tune_device_limits(tune_gpu_device(e->gpu), &e->p);
    bad = tune_gpu_prepare(e->gpu, e->gen, &e->p, 1, err, sizeof err) != 0;
  }
  CHECK(!bad, "%s", err);
  if (bad) return 1;
  tune_gpu_buffers(e->gpu, &e->in, &e->out, &e->s);
  e->d = tune_gpu_driver(e->gpu);
  return 0;
}

static void env_close(Env *e)
{
  gen_close(e->gen);
  tune_gpu_close(e->gpu);
}

/* The output at y against float64 from the input at x, over the whole problem. The check runs on
** the tuner's non-blocking stream, which does not wait for the legacy stream's launches and copies. */
static void expect_correct(Env *e, CUdeviceptr x, CUdeviceptr y, const char *what)
{
  tune_Check c = { 0 };
  char err[1024];
  CHECK(e->d->cuStreamSynchronize(NULL) == CUDA_SUCCESS, "%s: legacy stream sync", what);
  CHECK(tune_gpu_check(e->gpu, x, y, &c, err, sizeof err) == 0, "%s: %s", what, err);
  CHECK(c.bad == 0 && c.bad_sums == 0, "%s %lldx%lld %s %s: %lld bad elements, %lld bad sums, max err %.3g", what,
        (long long)e->p.rows, (long long)e->p.cols, gen_dtype_name(e->p.dtype), gen_op_name(e->p.op), (long long)c.bad,
        (long long)c.bad_sums, c.max_err);
}

static st_status run(st_ctx *c, Env *e, CUdeviceptr x, CUdeviceptr y, CUstream s)
{
  return st_softmax(c, (st_dtype)e->p.dtype, (st_op)e->p.op, (const void *)x, (void *)y, e->p.rows, e->p.cols,
                    (struct CUstream_st *)s);
}

static void test_dtypes_ops(st_ctx *c)
{
  char err[1024];
  for (int dtype = 0; dtype < 3; dtype++)
    for (int op = 0; op < 2; op++) {
      Env e;
      if (env_open(&e, 513, 1000 + 3 * dtype, dtype, op) == 0) {
        CHECK(tune_gpu_fill(e.gpu, err, sizeof err) == 0, "%s", err);
        CHECK(run(c, &e, e.in, e.out, NULL) == ST_OK, "default stream: %s", st_error(c));
        expect_correct(&e, e.in, e.out, "default stream");
        CHECK(tune_gpu_fill(e.gpu, err, sizeof err) == 0, "%s", err);
        /* on e.s: a device-to-device cuMemcpyDtoD returns before it is done, and e.s would not wait */
        CHECK(e.d->cuMemcpyDtoDAsync(e.out, e.in, (size_t)(e.p.rows * e.p.cols * gen_dtype_size(dtype)), e.s) == CUDA_SUCCESS,
              "copy");
        CHECK(run(c, &e, e.out, e.out, e.s) == ST_OK, "in == out: %s", st_error(c));
        CHECK(e.d->cuStreamSynchronize(e.s) == CUDA_SUCCESS, "sync");
        expect_correct(&e, e.in, e.out, "in == out, non-default stream");
      }
      env_close(&e);
    }
}

/* Widths of one class (2817..3072) and row counts each run verified, through one kernel: one
** class resolved, one load and at most one compile (none when a kept cubin is read back); the
** next class's first width resolves one more. */
static void test_classes(st_ctx *c)
{
  /* rows of one band (kset_band: 1 to 4095 for rows under 8 KB) */
  static const int64_t shapes[][2] = { { 77, 3000 }, { 300, 2817 }, { 1, 3072 }, { 513, 2901 }, { 4095, 3001 } };
  char err[1024], cfg[256], first[256] = "";
  st_stats s0, s1;
  CHECK(st_get_stats(c, &s0) == ST_OK, "st_get_stats: %s", st_error(c));
  for (int i = 0; i < 5; i++) {
    Env e;
    if (env_open(&e, shapes[i][0], shapes[i][1], GEN_BF16, GEN_SOFTMAX) == 0) {
      CHECK(tune_gpu_fill(e.gpu, err, sizeof err) == 0, "%s", err);
      CHECK(run(c, &e, e.in, e.out, NULL) == ST_OK, "class width %lld: %s", (long long)e.p.cols, st_error(c));
      expect_correct(&e, e.in, e.out, "a width of the class");
      CHECK(st_config(c, ST_BF16, ST_SOFTMAX, e.p.rows, e.p.cols, cfg, sizeof cfg) == ST_OK, "%s", st_error(c));
      if (!first[0]) snprintf(first, sizeof first, "%s", cfg);
      CHECK(strcmp(cfg, first) == 0, "%lldx%lld runs '%s', not the class's '%s'", (long long)e.p.rows, (long long)e.p.cols,
            cfg, first);
    }
    env_close(&e);
  }
  CHECK(st_get_stats(c, &s1) == ST_OK && s1.classes - s0.classes == 1 && s1.loads - s0.loads == 1 &&
        s1.compiles - s0.compiles <= 1 && s1.calls - s0.calls == 10, "one class: %lld resolved, %lld loads, %lld compiles, "
        "%lld calls", (long long)(s1.classes - s0.classes), (long long)(s1.loads - s0.loads),
        (long long)(s1.compiles - s0.compiles), (long long)(s1.calls - s0.calls));
  CHECK(st_config(c, ST_BF16, ST_SOFTMAX, 77, 3073, cfg, sizeof cfg) == ST_OK && st_get_stats(c, &s0) == ST_OK &&
        s0.classes == s1.classes + 1, "the next class: %s", st_error(c));
  CHECK(st_get_stats(c, NULL) == ST_EINVAL && st_get_stats(NULL, &s0) == ST_EINVAL, "st_get_stats: NULL accepted");
}

/* A class nobody tuned, with the kernel set of these templates for this GPU's arch (built with the
** tree, found beside the test: kset_get): its kernel is loaded, nothing compiled, and correct. */
static void test_set(st_ctx *c)
{
  const char *why;
  const kset_Set *k = kset_get(&why);
  st_stats s0, s1;
  char cfg[256];
  Env e;
  if (env_open(&e, 200, 5000, GEN_F16, GEN_LOG_SOFTMAX)) return;
  const int arch = k ? kset_arch_for(k->r, (int)k->h->count, tune_gpu_device(e.gpu)->arch) : 0;
  const int64_t hi = 5120;   /* 5000's class: 4609..5120 */
  const kset_Record *r = arch ? kset_find(k->r, (int)k->h->count, arch, GEN_F16, GEN_LOG_SOFTMAX, 0, 0, 0,
                                          kset_band(GEN_LOG_SOFTMAX, GEN_F16, 0, 200, hi), hi) : NULL;
  if (!r) printf("note: the kernel set's test ran without one: %s\n", k ? "no key of this arch" : why);
  CHECK(st_get_stats(c, &s0) == ST_OK && tune_gpu_fill(e.gpu, cfg, sizeof cfg) == 0, "stats, fill");
  CHECK(run(c, &e, e.in, e.out, NULL) == ST_OK, "a class of the set: %s", st_error(c));
  expect_correct(&e, e.in, e.out, "the kernel set's kernel");
  CHECK(st_get_stats(c, &s1) == ST_OK && s1.loads == s0.loads + 1, "one load");
  CHECK(!r || s1.compiles == s0.compiles, "the set's key compiled %lld kernels", (long long)(s1.compiles - s0.compiles));
  CHECK(!r || (st_config(c, ST_F16, ST_LOG_SOFTMAX, 200, 5000, cfg, sizeof cfg) == ST_OK && !strcmp(cfg, r->config)),
        "runs '%s', not the set's '%s'", cfg, r ? r->config : "");
  env_close(&e);
}

/* st_softmax_backward through the heuristic miss path, every dtype and op, a ragged shape: dx
** apart, dx == dy (a copy of dy, the check reading the original), and dx offset by one element
** (differently aligned: the vector-free kernel). */
static void test_backward(st_ctx *c)
{
  char err[1024];
  for (int dtype = 0; dtype < 3; dtype++)
    for (int op = 0; op < 2; op++) {
      Env e;
      if (env_open(&e, 257, 1000 + 3 * dtype, dtype, GEN_SOFTMAX_BW + op) == 0) {
        const size_t n = (size_t)(e.p.rows * e.p.cols * gen_dtype_size(dtype));
        const CUdeviceptr dy = tune_gpu_in2(e.gpu);
        CUdeviceptr spare = 0;
        CHECK(tune_gpu_fill(e.gpu, err, sizeof err) == 0, "%s", err);
        CHECK(st_softmax_backward(c, (st_dtype)dtype, (st_op)op, (const void *)e.in, (const void *)dy, (void *)e.out, e.p.rows,
                                  e.p.cols, NULL) == ST_OK, "backward: %s", st_error(c));
        expect_correct(&e, e.in, e.out, "backward");
        CHECK(e.d->cuMemAlloc(&spare, n + 16) == CUDA_SUCCESS, "alloc");
        CHECK(e.d->cuMemcpyDtoDAsync(spare, dy, n, e.s) == CUDA_SUCCESS, "copy");
        CHECK(st_softmax_backward(c, (st_dtype)dtype, (st_op)op, (const void *)e.in, (const void *)spare, (void *)spare,
                                  e.p.rows, e.p.cols, e.s) == ST_OK, "dx == dy: %s", st_error(c));
        CHECK(e.d->cuStreamSynchronize(e.s) == CUDA_SUCCESS, "sync");
        CHECK(e.d->cuMemcpyDtoD(e.out, spare, n) == CUDA_SUCCESS, "copy back");
        expect_correct(&e, e.in, e.out, "backward, dx == dy");
        const CUdeviceptr odd = spare + (CUdeviceptr)gen_dtype_size(dtype);
        CHECK(st_softmax_backward(c, (st_dtype)dtype, (st_op)op, (const void *)e.in, (const void *)dy, (void *)odd, e.p.rows,
                                  e.p.cols, NULL) == ST_OK, "dx unaligned: %s", st_error(c));
        CHECK(e.d->cuMemcpyDtoD(e.out, odd, n) == CUDA_SUCCESS, "copy back");
        expect_correct(&e, e.in, e.out, "backward, dx differently aligned");
        if (spare) e.d->cuMemFree(spare);
      }
      env_close(&e);
    }
}

typedef struct Worker {
  st_ctx *c;
  Env *e;
  int part, fails;
  CUstream s;
} Worker;

/* A quarter of the rows, 50 times, on the worker's own stream. */
static void *worker(void *arg)
{
  Worker *w = arg;
  Env *e = w->e;
  const int64_t rows = e->p.rows / 4, es = gen_dtype_size(e->p.dtype);
  const CUdeviceptr off = (CUdeviceptr)(w->part * rows * e->p.cols * es);
  e->d->cuCtxSetCurrent(NULL);   /* a fresh host thread: the library must bring its context */
  for (int i = 0; i < 50; i++)
    w->fails += st_softmax(w->c, (st_dtype)e->p.dtype, (st_op)e->p.op, (const void *)(e->in + off), (void *)(e->out + off),
                           rows, e->p.cols, (struct CUstream_st *)w->s) != ST_OK;
  return NULL;
}

static void test_threads(st_ctx *c)
{
  Env e;
  Worker w[4];
  pthread_t t[4];
  char err[1024];
  if (env_open(&e, 4096, 2048, GEN_BF16, GEN_SOFTMAX) == 0 && tune_gpu_fill(e.gpu, err, sizeof err) == 0) {
    for (int i = 0; i < 4; i++) {
      w[i] = (Worker){ c, &e, i, 0, NULL };
      CHECK(e.d->cuStreamCreate(&w[i].s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "stream");
      pthread_create(&t[i], NULL, worker, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
      pthread_join(t[i], NULL);
      CHECK(w[i].fails == 0, "thread %d: %d calls failed: %s", i, w[i].fails, st_error(c));
      e.d->cuStreamSynchronize(w[i].s);
      e.d->cuStreamDestroy(w[i].s);
    }
    expect_correct(&e, e.in, e.out, "4 threads");
  }
  env_close(&e);
}

/* Output one element past the input's alignment: the library must fall back to a vector-free
** kernel; checked on the CPU over rows - 1 rows. */
static void test_unaligned(st_ctx *c)
{
  Env e;
  char err[1024];
  if (env_open(&e, 64, 4096, GEN_F32, GEN_SOFTMAX) == 0 && tune_gpu_fill(e.gpu, err, sizeof err) == 0) {
    const int64_t rows = e.p.rows - 1, n = rows * e.p.cols;
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    CHECK(st_softmax(c, ST_F32, ST_SOFTMAX, (const void *)e.in, (void *)(e.out + 4), rows, e.p.cols, NULL) == ST_OK,
          "unaligned: %s", st_error(c));
    CUresult r1 = e.d->cuStreamSynchronize(NULL), r2 = e.d->cuMemcpyDtoH(x, e.in, (size_t)n * 4);
    CUresult r3 = e.d->cuMemcpyDtoH(y, e.out + 4, (size_t)n * 4);
    CHECK(!r1 && !r2 && !r3, "read back: sync %d, copies %d %d", r1, r2, r3);
    tune_Check k = { 0 };
    k.first_bad = -1;
    tune_check_rows(x, y, GEN_F32, GEN_SOFTMAX, e.p.cols, 0, rows, 0x7fa5a5a5u, &k);
    CHECK(k.bad == 0 && k.bad_sums == 0, "unaligned: %lld bad, first at %lld", (long long)k.bad, (long long)k.first_bad);
    free(x), free(y);
  }
  env_close(&e);
}

static st_ctx *open_with(st_miss miss)
{
  st_ctx *c = NULL;
  st_options o = { miss, count_log, NULL };
  CHECK(st_open_ex(&c, 0, db, &o) == ST_OK, "st_open: %s", st_error(NULL));
  return c;
}

/* c has served 77x3000 bf16 log_softmax untuned and nothing else: st_untuned lists it alone; a
** tuned shape (256x1024 f32, cached by the tune policy) is not listed; a backward miss and a
** cross_entropy_loss one are, after it; attention problems are st_untuned_attention's (test_untuned_attention). */
static void test_untuned_list(st_ctx *c)
{
  char cfg[256];
  st_problem p[4] = { { 0 } };
  if (!c) return;
  CHECK(st_untuned(c, p, 4) == 1 && p[0].rows == 77 && p[0].cols == 3000 && p[0].dtype == ST_BF16 &&
        p[0].op == ST_LOG_SOFTMAX && !p[0].backward, "untuned: %lldx%lld dtype %d op %d", (long long)p[0].rows,
        (long long)p[0].cols, p[0].dtype, p[0].op);
  CHECK(st_config(c, ST_F32, ST_SOFTMAX, 256, 1024, cfg, sizeof cfg) == ST_OK && st_untuned(c, NULL, 0) == 1,
        "a tuned shape is not listed: %d", st_untuned(c, NULL, 0));
  CHECK(st_config_backward(c, ST_F16, ST_SOFTMAX, 5, 700, cfg, sizeof cfg) == ST_OK && st_untuned(c, p, 1) == 2 &&
        p[0].rows == 77, "a backward miss: %d", st_untuned(c, NULL, 0));
  CHECK(st_untuned(c, p, 4) == 2 && p[1].rows == 5 && p[1].cols == 700 && p[1].dtype == ST_F16 && p[1].op == ST_SOFTMAX &&
        p[1].backward == 1 && p[1].kind == ST_KIND_SOFTMAX, "the backward one second: %lldx%lld backward %d",
        (long long)p[1].rows, (long long)p[1].cols, p[1].backward);
  CHECK(st_config_cross_entropy(c, ST_BF16, 0, 64, 5000, cfg, sizeof cfg) == ST_OK && st_untuned(c, p, 4) == 3 &&
        p[2].rows == 64 && p[2].cols == 5000 && p[2].kind == ST_KIND_CE_LOSS && p[2].backward == 0,
        "cross_entropy_loss third: %lldx%lld kind %d", (long long)p[2].rows, (long long)p[2].cols, p[2].kind);
  CHECK(st_untuned(c, NULL, 1) == -1 && st_untuned(c, p, -1) == -1, "st_untuned: bad out or cap accepted");
}

/* On c (no attention call yet): an untuned causal forward with ALiBi and a causal+window backward
** (its ALiBi slopes ignored: bias none) are listed by st_untuned_attention with their shapes, kinds
** and options, in that order; another shape of the forward's class and kinds is not, another mask
** kind is; st_untuned's list does not change. */
static void test_untuned_attention(st_ctx *c)
{
  char cfg[256];
  st_attn_problem p[4];
  st_attn_options o;
  float slopes[4];
  if (!c) return;
  const int others = st_untuned(c, NULL, 0);
  st_attn_defaults(&o);
  o.causal = 1, o.scale = 0.125f, o.alibi_slopes = slopes;   /* only its kind matters to a config */
  CHECK(st_untuned_attention(c, NULL, 0) == 0, "attention listed before any attention call");
  CHECK(st_config_attention(c, ST_BF16, &o, 2, 4, 8, 3000, cfg, sizeof cfg) == ST_OK, "%s", st_error(c));
  CHECK(st_config_attention(c, ST_BF16, &o, 1, 1, 64, 2900, cfg, sizeof cfg) == ST_OK, "%s", st_error(c));
  o.window = 16, o.softcap = 30.f, o.causal_offset = 0;
  CHECK(st_config_attention_backward(c, ST_F16, &o, 1, 2, 16, 700, cfg, sizeof cfg) == ST_OK, "%s", st_error(c));
  CHECK(st_untuned_attention(c, p, 4) == 2, "%d attention problems listed", st_untuned_attention(c, NULL, 0));
  CHECK(p[0].B == 2 && p[0].H == 4 && p[0].Q == 8 && p[0].K == 3000 && p[0].dtype == ST_BF16 && !p[0].backward &&
        p[0].mask == 1 && p[0].bias == 1 && p[0].causal_offset == 3000 - 8 && p[0].window == -1 && p[0].scale == 0.125f &&
        p[0].softcap == 0.f, "forward: %lldx%lldx%lldx%lld mask %d bias %d offset %lld", (long long)p[0].B, (long long)p[0].H,
        (long long)p[0].Q, (long long)p[0].K, p[0].mask, p[0].bias, (long long)p[0].causal_offset);
  CHECK(p[1].B == 1 && p[1].H == 2 && p[1].Q == 16 && p[1].K == 700 && p[1].dtype == ST_F16 && p[1].backward && p[1].mask == 3 &&
        p[1].bias == 0 && p[1].causal_offset == 0 && p[1].window == 16 && p[1].softcap == 30.f,
        "backward: %lldx%lldx%lldx%lld mask %d bias %d window %lld", (long long)p[1].B, (long long)p[1].H, (long long)p[1].Q,
        (long long)p[1].K, p[1].mask, p[1].bias, (long long)p[1].window);
  o.window = -1, o.causal = 0;
  CHECK(st_config_attention(c, ST_BF16, &o, 2, 4, 8, 3000, cfg, sizeof cfg) == ST_OK && st_untuned_attention(c, p, 4) == 3 &&
        p[2].mask == 0 && p[2].bias == 1, "mask none third: %d", st_untuned_attention(c, NULL, 0));
  CHECK(st_untuned(c, NULL, 0) == others, "st_untuned's list grew with attention calls: %d", st_untuned(c, NULL, 0));
  CHECK(st_untuned_attention(c, NULL, 1) == -1 && st_untuned_attention(c, p, -1) == -1, "bad out or cap accepted");
  st_attn_defaults(&o);
  o.bias = slopes, o.bias_type = 9;
  CHECK(st_config_attention(c, ST_BF16, &o, 2, 4, 8, 3000, cfg, sizeof cfg) == ST_EINVAL && strstr(st_error(c), "bias_type 9"),
        "bad bias_type: %s", st_error(c));
  o.bias = (const char *)slopes + 1, o.bias_type = ST_BF16;
  CHECK(st_config_attention(c, ST_BF16, &o, 2, 4, 8, 3000, cfg, sizeof cfg) == ST_EINVAL && strstr(st_error(c), "aligned"),
        "a bfloat16 bias at an odd address: %s", st_error(c));
  o.bias_type = ST_ATTN_BIAS_BOOL;
  CHECK(st_config_attention(c, ST_BF16, &o, 2, 4, 8, 3000, cfg, sizeof cfg) == ST_OK, "a bool bias at an odd address: %s",
        st_error(c));
  const int listed = st_untuned_attention(c, NULL, 0);   /* the bias tensor's class: listed once, whatever its types */
  o.bias = slopes;
  for (int t = ST_F32; t <= ST_BF16; t++) {
    o.bias_type = t;
    CHECK(st_config_attention(c, ST_BF16, &o, 2, 4, 8, 3000, cfg, sizeof cfg) == ST_OK && st_untuned_attention(c, NULL, 0) == listed,
          "bias type %d: the class listed again (%d, was %d): %s", t, st_untuned_attention(c, NULL, 0), listed, st_error(c));
  }
}

/* On c (heuristic): a cross-entropy class called with a softcap, then without, then with again:
** each way verified against float64 (two kernels of one config: the softcap's a source of its
** own), the reduced loss (ce_steps.cu's st_ce_reduce, loaded once for the dtype) equal to the sum
** of the rows' losses, and the class listed by st_untuned once. */
static void test_ce_softcap(st_ctx *c)
{
  char err[1024];
  Env e;
  tune_Args a;
  st_stats s0, s1;
  const int listed = st_untuned(c, NULL, 0);
  if (env_open(&e, 300, 4099, GEN_BF16, GEN_CE)) {
    env_close(&e);
    return;
  }
  tune_gpu_args(e.gpu, &a);
  CHECK(st_get_stats(c, &s0) == ST_OK, "stats");
  for (int k = 0; k < 3; k++) {
    tune_CeOptions ce;
    tune_ce_defaults(&ce);
    ce.softcap = k == 1 ? 0.f : 30.f;
    tune_gpu_ce_options(e.gpu, &ce);
    st_ce_options o;
    st_ce_defaults(&o);
    o.softcap = ce.softcap, o.reduction = ST_REDUCE_SUM;
    float sum = 0.f, total = 0.f, *loss = malloc((size_t)e.p.rows * 4);
    CUdeviceptr dsum = 0;
    CHECK(loss && e.d->cuMemAlloc(&dsum, 4) == CUDA_SUCCESS, "a float for the reduced loss");
    o.reduced = (void *)dsum;
    CHECK(tune_gpu_fill(e.gpu, err, sizeof err) == 0, "%s", err);
    CHECK(st_cross_entropy(c, ST_BF16, (const void *)a.buf[0], (const void *)a.buf[1], ST_I64, (void *)a.buf[2],
                           (float *)a.buf[3], (float *)a.buf[4], e.p.rows, e.p.cols, &o, NULL) == ST_OK,
          "softcap %g: %s", o.softcap, st_error(c));
    expect_correct(&e, e.in, e.out, k == 1 ? "cross_entropy, no softcap" : "cross_entropy, softcap 30");
    CHECK(loss && e.d->cuStreamSynchronize(NULL) == CUDA_SUCCESS && e.d->cuMemcpyDtoH(loss, a.buf[3], (size_t)e.p.rows * 4) == CUDA_SUCCESS &&
          e.d->cuMemcpyDtoH(&sum, dsum, 4) == CUDA_SUCCESS, "losses back");
    for (int64_t r = 0; loss && r < e.p.rows; r++) total += loss[r];
    CHECK(fabsf(sum - total) <= 1e-4f * fabsf(total) + 1e-3f, "reduced %g against the rows' sum %g", sum, total);
    e.d->cuMemFree(dsum);
    free(loss);
  }
  CHECK(st_get_stats(c, &s1) == ST_OK && s1.loads - s0.loads <= 3 && s1.classes - s0.classes == 2,
        "two kernels and the steps: %lld loads, %lld classes", (long long)(s1.loads - s0.loads), (long long)(s1.classes - s0.classes));
  CHECK(st_untuned(c, NULL, 0) == listed + 1, "the class listed once for its two kernels: %d (was %d)", st_untuned(c, NULL, 0),
        listed);
  env_close(&e);
}

static void test_policies(void)
{
  char cfg[256], cfg2[256];
  st_ctx *c = open_with(ST_MISS_ERROR);
  if (!c) return;
  CHECK(st_config(c, ST_F32, ST_SOFTMAX, 256, 1024, cfg, sizeof cfg) == ST_EMISS && strstr(st_error(c), "256x1024"),
        "miss=error: %s", st_error(c));
  st_close(c);
  c = open_with(ST_MISS_TUNE);
  logged = 0;
  CHECK(c && st_config(c, ST_F32, ST_SOFTMAX, 256, 1024, cfg, sizeof cfg) == ST_OK, "miss=tune: %s", st_error(c));
  CHECK(logged == 1, "tuning said once, got %d", logged);
  st_close(c);
  c = open_with(ST_MISS_ERROR);   /* the tuned entry is in the cache now, and other rows reuse it */
  CHECK(c && st_config(c, ST_F32, ST_SOFTMAX, 256, 1024, cfg2, sizeof cfg2) == ST_OK && strcmp(cfg, cfg2) == 0,
        "cached after tuning: '%s' vs '%s': %s", cfg, cfg2, st_error(c));
  CHECK(c && st_config(c, ST_F32, ST_SOFTMAX, 999, 1024, cfg2, sizeof cfg2) == ST_OK && strcmp(cfg, cfg2) == 0,
        "same cols reuse: %s", st_error(c));
  CHECK(c && st_config(c, ST_F32, ST_SOFTMAX, 7, 961, cfg2, sizeof cfg2) == ST_OK && strcmp(cfg, cfg2) == 0,
        "a width of the class (961..1024) reuses it: %s", st_error(c));
  CHECK(c && st_config(c, ST_F32, ST_SOFTMAX, 256, 1025, cfg2, sizeof cfg2) == ST_EMISS, "the next class is a miss");
  st_close(c);
  c = open_with(ST_MISS_HEURISTIC);
  logged = 0;
  CHECK(c && st_config(c, ST_BF16, ST_LOG_SOFTMAX, 77, 3000, cfg, sizeof cfg) == ST_OK, "heuristic: %s", st_error(c));
  CHECK(c && st_config(c, ST_BF16, ST_LOG_SOFTMAX, 77, 3000, cfg, sizeof cfg) == ST_OK && logged == 1,
        "heuristic said once, got %d", logged);
  test_untuned_list(c);
  test_untuned_attention(c);
  test_ce_softcap(c);
  st_close(c);
}

int main(int argc, char **argv)
{
  if (argc < 2 || strcmp(argv[1], "gpu") != 0) {
    test_cpu();
    return check_done("test_runtime cpu");
  }
  tune_Gpu *probe;
  char err[1024];
  if (tune_gpu_open(&probe, 0, err, sizeof err)) {
    printf("SKIP: no GPU here (%s)\n", err);
    return 77;
  }
  tune_gpu_close(probe);
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  snprintf(db, sizeof db, "%s/cache.db", dir);
  st_ctx *c = open_with(ST_MISS_HEURISTIC);
  if (c) {
    test_dtypes_ops(c);
    test_threads(c);
    test_unaligned(c);
    test_backward(c);
    test_classes(c);
    test_set(c);
    st_close(c);
  }
  test_policies();
  unlink(db);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0, "cleanup");
  return check_done("test_runtime gpu");
}
