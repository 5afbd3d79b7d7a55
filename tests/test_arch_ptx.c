/*
** test_arch_ptx.c — every architecture's kernels verified on the GPU at hand (label ptx, with
** gpu; exit 77, skipped, without a GPU): each config of an architecture's space (its features and
** its limits from templates/space.lua) is compiled by NVRTC as PTX for the virtual architecture
** (compute_75, 80, 86, 89), compiled by this GPU's driver (the JIT: by the linker, on every core;
** the first config of each problem also loaded as PTX text, cuModuleLoadData) and verified
** against float64 as the tuner verifies (ragged shapes, every dtype and op; cooperative kernels
** twice); a config this GPU cannot launch is reported (unrunnable), not failed, and one that
** spills here is verified all the same. This proves those kernels correct; it says nothing of
** their speed on that architecture.
** compute_100 and compute_120 are tried too: a driver cannot run PTX of a newer GPU than its own,
** and the error it gives is recorded (they run in full where it can).
**   test_arch_ptx [--sample] [--out FILE] [ARCH...]
**     --sample  per problem, configs that together take every knob value (the ctest run)
**     --out     append the results (per architecture: configs, verified, failed and unrunnable
**               with reasons) to FILE (bench/results/arch-ptx-<gpu>-<date>.txt)
**     ARCH      75 80 86 89 100 120 (the default: all)
*/
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gen.h"
#include "sample.h"
#include "tune.h"

static const int64_t SHAPES[][2] = { { 777, 7 }, { 300, 4099 }, { 5, 262147 } };   /* short, medium, long rows */

typedef struct Linker {
  __typeof__(cuLinkCreate) *create;
  __typeof__(cuLinkAddData) *add;
  __typeof__(cuLinkComplete) *complete;
  __typeof__(cuLinkDestroy) *destroy;
} Linker;

typedef struct Job {
  gen_Kernel k;
  gen_Cubin ptx;            /* NVRTC's PTX (data) */
  gen_Cubin bin;            /* the driver's cubin of it for this GPU */
  int ok;
  char err[512];
} Job;

typedef struct Pool {
  Job *jobs;
  int n, next;
  tune_Backend *b;
  const tune_Driver *d;
  const Linker *ln;
  CUcontext ctx;
  pthread_mutex_t lock;
} Pool;

typedef struct Tally {
  int configs, verified, failed, unrunnable, direct, direct_ok;
  char *lines;              /* "failed ..." and "unrunnable ..." lines */
  size_t len;
} Tally;

static void note(Tally *t, const char *fmt, const char *what, const gen_Problem *p, const char *cfg, const char *why)
{
  char line[1024];
  int n = snprintf(line, sizeof line, fmt, what, (long long)p->rows, (long long)p->cols, gen_dtype_name(p->dtype),
                   gen_op_name(p->op), cfg, why);
  char *grown = realloc(t->lines, t->len + (size_t)n + 2);
  if (!grown) return;
  t->lines = grown;
  memcpy(t->lines + t->len, line, (size_t)n);
  t->len += (size_t)n;
  t->lines[t->len++] = '\n';
  t->lines[t->len] = '\0';
}

/* ptx compiled by the driver for the current context's GPU into a malloc'ed cubin. */
static int jit(const Pool *pl, const gen_Cubin *ptx, gen_Cubin *out, char *err, size_t errlen)
{
  char log[2048] = "", buf[256];
  CUjit_option o[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
  void *v[] = { log, (void *)(uintptr_t)sizeof log };
  CUlinkState st;
  void *img = NULL;
  size_t size = 0;
  memset(out, 0, sizeof *out);
  CUresult r = pl->ln->create(2, o, v, &st);
  if (r) return snprintf(err, errlen, "cuLinkCreate: %s", tune_cu_error(pl->d, r, buf, sizeof buf)), 1;
  if (!(r = pl->ln->add(st, CU_JIT_INPUT_PTX, ptx->data, ptx->size, "softmax.ptx", 0, NULL, NULL)))
    r = pl->ln->complete(st, &img, &size);
  if (!r && (out->data = malloc(size))) memcpy(out->data, img, size), out->size = size;
  pl->ln->destroy(st);
  if (r) return snprintf(err, errlen, "driver JIT: %s %.300s", tune_cu_error(pl->d, r, buf, sizeof buf), log), 1;
  return out->data ? 0 : (snprintf(err, errlen, "out of memory"), 1);
}

static void *worker(void *arg)
{
  Pool *pl = arg;
  pl->d->cuCtxSetCurrent(pl->ctx);
  for (;;) {
    pthread_mutex_lock(&pl->lock);
    int i = pl->next++;
    pthread_mutex_unlock(&pl->lock);
    if (i >= pl->n) return NULL;
    Job *j = &pl->jobs[i];
    j->ok = pl->b->compile(pl->b->ud, &j->k, &j->ptx, j->err, sizeof j->err) == 0 &&
            jit(pl, &j->ptx, &j->bin, j->err, sizeof j->err) == 0;
  }
}

/* Load image (a cubin, or PTX text) into slot 0 and verify it; 1 verified, 0 failed, -1 cannot run. */
static int load_verify(tune_Backend *b, const gen_Kernel *k, const gen_Cubin *image, char *why, size_t n)
{
  tune_Trial t;
  memset(&t, 0, sizeof t);
  if (b->load(b->ud, 0, k, image, &t) != TUNE_EOK) return snprintf(why, n, "%s", t.reason), -1;
  int rc = b->verify(b->ud, 0, &t);
  /* a cooperative kernel leaves its workspace as it found it (zeroed): a second run verifies too */
  if (rc == TUNE_EOK && k->launch.coop) rc = b->verify(b->ud, 0, &t);
  b->unload(b->ud, 0);
  snprintf(why, n, "%s", t.reason);
  return rc == TUNE_EOK;
}

/* One problem of arch: its space (or the sample) compiled and JIT-compiled on every core, then
** each config loaded and verified in turn. */
static void run_problem(gen_State *g, const gen_Problem *p, int sample, const Linker *ln, Tally *t)
{
  char err[1024], **list, why[512];
  int n;
  tune_Gpu *gpu = NULL;
  Cover cover = { .n = 0 };
  if (gen_space(g, p, &list, &n)) {
    note(t, "failed %s %lldx%lld %s %s %s: %s", "space", p, "-", gen_error(g));
    t->failed++;
    return;
  }
  Pool pl = { .jobs = calloc((size_t)n, sizeof(Job)), .lock = PTHREAD_MUTEX_INITIALIZER, .ln = ln };
  for (int i = 0; i < n; i++) {
    if (sample && !cover_adds(&cover, list[i])) continue;
    if (gen_render(g, p, list[i], &pl.jobs[pl.n].k) == 0) pl.n++;
    else t->configs++, t->failed++, note(t, "failed %s %lldx%lld %s %s %s: %s", "render", p, list[i], gen_error(g));
  }
  gen_free_list(list, n);
  if (tune_gpu_open(&gpu, 0, err, sizeof err) || (tune_gpu_ptx(gpu, p->arch), tune_gpu_prepare(gpu, g, p, 1, err, sizeof err))) {
    note(t, "failed %s %lldx%lld %s %s %s: %s", "setup", p, "-", err);
    t->failed++;
  } else {
    tune_Backend b = tune_gpu_backend(gpu);
    pthread_t th[32];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = cores < 1 ? 1 : cores > 32 ? 32 : (int)cores;
    pl.b = &b, pl.d = tune_gpu_driver(gpu);
    pl.d->cuCtxGetCurrent(&pl.ctx);
    for (int i = 0; i < nt; i++) pthread_create(&th[i], NULL, worker, &pl);
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < pl.n; i++) {
      Job *j = &pl.jobs[i];
      int rc = j->ok ? load_verify(&b, &j->k, &j->bin, why, sizeof why) : 0;
      t->configs++;
      if (rc > 0) t->verified++;
      else if (rc < 0) t->unrunnable++, note(t, "unrunnable %s %lldx%lld %s %s %s: %s", "here", p, j->k.config, why);
      else t->failed++, note(t, "failed %s %lldx%lld %s %s %s: %s", "verify", p, j->k.config, j->ok ? why : j->err);
      CHECK(rc != 0, "sm_%d %lldx%lld %s %s %s: %s", p->arch, (long long)p->rows, (long long)p->cols,
            gen_dtype_name(p->dtype), gen_op_name(p->op), j->k.config, j->ok ? why : j->err);
      if (i == 0 && j->ok) {   /* the PTX text itself, as cuModuleLoadData takes it */
        t->direct++;
        int d = load_verify(&b, &j->k, &j->ptx, why, sizeof why);
        t->direct_ok += d > 0;
        if (d <= 0) note(t, "failed %s %lldx%lld %s %s %s: %s", "ptx-load", p, j->k.config, why);
      }
    }
  }
  for (int i = 0; i < pl.n; i++) {
    gen_kernel_free(&pl.jobs[i].k);
    gen_cubin_free(&pl.jobs[i].ptx);
    gen_cubin_free(&pl.jobs[i].bin);
  }
  free(pl.jobs);
  tune_gpu_close(gpu);
}

/* Whether this GPU's driver takes PTX of arch at all: one config loaded as PTX text; else why not. */
static int driver_takes(gen_State *g, int arch, char *why, size_t n)
{
  gen_Problem p = { .rows = 777, .cols = 7, .dtype = GEN_F32, .op = GEN_SOFTMAX, .arch = arch };
  char err[1024], cfg[256], buf[256];
  gen_Kernel k;
  gen_Cubin c;
  tune_Gpu *gpu = NULL;
  CUmodule m;
  int ok = 0;
  if (gen_heuristic(g, &p, 0, cfg, sizeof cfg) || gen_render(g, &p, cfg, &k)) return snprintf(why, n, "%s", gen_error(g)), 0;
  if (gen_compile_ptx(k.source, "softmax.cu", arch, &c, err, sizeof err)) snprintf(why, n, "NVRTC: %s", err);
  else if (tune_gpu_open(&gpu, 0, err, sizeof err) || tune_gpu_prepare(gpu, g, &p, 1, err, sizeof err)) snprintf(why, n, "setup: %s", err);
  else {
    const tune_Driver *d = tune_gpu_driver(gpu);
    CUresult r = d->cuModuleLoadData(&m, c.data);
    if (r) snprintf(why, n, "cuModuleLoadData of compute_%d PTX: %s", arch, tune_cu_error(d, r, buf, sizeof buf));
    else d->cuModuleUnload(m), ok = 1;
  }
  tune_gpu_close(gpu);
  gen_kernel_free(&k);
  gen_cubin_free(&c);
  return ok;
}

int main(int argc, char **argv)
{
  int sample = 0, archs[8], narch = 0;
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--sample") == 0) sample = 1;
    else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
    else if (atoi(argv[i]) >= 75 && narch < 8) archs[narch++] = atoi(argv[i]);
    else return fprintf(stderr, "test_arch_ptx: bad argument '%s' (--sample, --out FILE, 75 80 86 89 100 120)\n", argv[i]), 2;
  }
  if (!narch) {
    static const int all[] = { 75, 80, 86, 89, 100, 120 };
    memcpy(archs, all, sizeof all);
    narch = 6;
  }
  char err[1024], why[1024];
  tune_Gpu *gpu;
  gen_State *g;
  if (tune_gpu_open(&gpu, 0, err, sizeof err)) return printf("SKIP: no GPU here (%s)\n", err), 77;
  const tune_Device *dev = tune_gpu_device(gpu);
  const tune_Driver *d = tune_gpu_driver(gpu);
  Linker ln = { (__typeof__(cuLinkCreate) *)tune_driver_proc(d, "cuLinkCreate"),
                (__typeof__(cuLinkAddData) *)tune_driver_proc(d, "cuLinkAddData"),
                (__typeof__(cuLinkComplete) *)tune_driver_proc(d, "cuLinkComplete"),
                (__typeof__(cuLinkDestroy) *)tune_driver_proc(d, "cuLinkDestroy") };
  if (!ln.create || !ln.add || !ln.complete || !ln.destroy) return fprintf(stderr, "the driver lacks cuLink*\n"), 1;
  if (gen_open(&g, NULL, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
  CUcontext keep = NULL;   /* held throughout, so each problem's backend finds the context made */
  d->cuDevicePrimaryCtxRetain(&keep, dev->dev);
  int major = 0, minor = 0;
  gen_nvrtc_version(&major, &minor);
  FILE *f = out ? fopen(out, "a") : stdout;
  if (!f) return fprintf(stderr, "cannot write '%s'\n", out), 1;
  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  fprintf(f, "# softmax-tune arch-ptx (tests/test_arch_ptx.c): each architecture's space compiled by NVRTC as PTX for its\n"
             "# virtual architecture, compiled for this GPU by its driver, and every config verified against float64 here.\n"
             "# This proves the kernels correct on hardware; it says nothing of their speed on that architecture.\n"
             "# gpu %s (sm_%d), driver %d.%d, NVRTC %d.%d, %s; %s of each space\n# problems:",
          dev->name, dev->arch, dev->driver / 1000, dev->driver % 1000 / 10, major, minor, date,
          sample ? "a sample (every knob value)" : "every config");
  for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) fprintf(f, " %lldx%lld", (long long)SHAPES[s][0], (long long)SHAPES[s][1]);
  fprintf(f, ", each in f32 f16 bf16, each op (softmax log_softmax softmax_backward log_softmax_backward)\n");
  fprintf(f, "arch\tconfigs\tverified\tfailed\tunrunnable\tptx_text_loads\tseconds\n");
  for (int a = 0; a < narch; a++) {
    int arch = archs[a];
    struct timespec t0, t1;
    Tally t = { 0 };
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!driver_takes(g, arch, why, sizeof why)) {
      fprintf(f, "compute_%d\tnot run: %s\n", arch, why);
      printf("compute_%d: not run: %s\n", arch, why);
      CHECK(arch > dev->arch, "compute_%d: %s", arch, why);   /* a driver takes PTX of its GPU's arch and older */
      fflush(f);
      continue;
    }
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++)
      for (int dt = 0; dt < GEN_NDTYPE; dt++)
        for (int op = 0; op <= GEN_LOG_SOFTMAX_BW; op++) {
          gen_Problem p = { .rows = SHAPES[s][0], .cols = SHAPES[s][1], .dtype = dt, .op = op, .arch = arch };
          run_problem(g, &p, sample, &ln, &t);
        }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(f, "compute_%d\t%d\t%d\t%d\t%d\t%d/%d\t%.1f\n", arch, t.configs, t.verified, t.failed, t.unrunnable, t.direct_ok,
            t.direct, secs);
    if (t.lines) fputs(t.lines, f);
    fflush(f);
    printf("compute_%d: %d configs, %d verified, %d failed, %d unrunnable, PTX text loads %d/%d, %.1f s\n", arch, t.configs,
           t.verified, t.failed, t.unrunnable, t.direct_ok, t.direct, secs);
    free(t.lines);
  }
  if (out) fclose(f);
  if (keep) d->cuDevicePrimaryCtxRelease(dev->dev);
  gen_close(g);
  tune_gpu_close(gpu);
  return check_done(sample ? "test_arch_ptx --sample" : "test_arch_ptx");
}
