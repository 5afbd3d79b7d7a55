/*
** test_gpu.c — on a real GPU (label gpu; exit 77, skipped, without one): for shapes covering
** every family, ragged cols (not a multiple of the vector width, so rows start unaligned),
** row counts that leave blocks partly empty, and all dtypes and ops (the backward ones too), a sample of each space
** that takes every knob value runs and is verified against the float64 reference. The check
** kernel itself is held to the CPU reference (tune_gpu_selftest). Every knob value of the
** whole sample must have run verified at least once.
**   test_gpu [--all]   --all: every config of every space, not a sample (label long)
**   test_gpu --backward  the sample of the backward ops' cases only
**   test_gpu --sanitize  one config of each kernel family (row held in registers or shared
**                        memory, two passes, split by cluster, by global exchange, pipelined)
**                        on small shapes with tails, f32 and bf16: for compute-sanitizer
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "sample.h"
#include "tune.h"

typedef struct Case { int64_t rows, cols; int dtype, op; } Case;

static const Case CASES[] = {
  { 1000, 1, GEN_F32, GEN_SOFTMAX },      { 777, 7, GEN_BF16, GEN_LOG_SOFTMAX },
  { 513, 96, GEN_F16, GEN_SOFTMAX },      { 4099, 128, GEN_F32, GEN_LOG_SOFTMAX },
  { 4096, 1000, GEN_F32, GEN_SOFTMAX },   { 300, 4099, GEN_BF16, GEN_SOFTMAX },
  { 257, 16384, GEN_F32, GEN_LOG_SOFTMAX }, { 64, 32000, GEN_F16, GEN_SOFTMAX },
  { 33, 65536, GEN_BF16, GEN_SOFTMAX },   { 16, 128256, GEN_F32, GEN_SOFTMAX },
  { 8, 1048576, GEN_F32, GEN_LOG_SOFTMAX }, { 5, 262147, GEN_BF16, GEN_LOG_SOFTMAX },
  /* the backward ops (backward.cu): held rows, two passes, cluster splits held and re-read, the ring */
  { 777, 7, GEN_BF16, GEN_SOFTMAX_BW },   { 4099, 1000, GEN_F32, GEN_LOG_SOFTMAX_BW },
  { 300, 4099, GEN_F16, GEN_SOFTMAX_BW }, { 64, 32003, GEN_BF16, GEN_LOG_SOFTMAX_BW },
  { 16, 128256, GEN_F32, GEN_SOFTMAX_BW }, { 8, 1048579, GEN_F32, GEN_LOG_SOFTMAX_BW },
  { 5, 262147, GEN_BF16, GEN_SOFTMAX_BW },
  /* the ring (hold=ring): rows enough that its stages and workspace buffers wrap many times; odd
  ** columns, so rows start anywhere and their parts' lines differ row by row */
  { 600, 262147, GEN_F16, GEN_LOG_SOFTMAX_BW }, { 300, 262147, GEN_BF16, GEN_SOFTMAX },
  /* xchg=claim: a row's parts fewer than the blocks (3 rows of 32 parts on 132 SMs), and rows
  ** past the 32 pair buffers many times over */
  { 3, 1048579, GEN_BF16, GEN_SOFTMAX }, { 400, 262147, GEN_F32, GEN_LOG_SOFTMAX },
};

/* Small, ragged shapes for compute-sanitizer: cols 1, 7, 1000, 4099, 128256 and split rows. */
static const Case SMALL[] = {
  { 9, 1, GEN_F32, GEN_SOFTMAX },        { 9, 7, GEN_BF16, GEN_LOG_SOFTMAX }, { 33, 1000, GEN_F32, GEN_LOG_SOFTMAX },
  { 33, 1000, GEN_BF16, GEN_SOFTMAX },   { 17, 4099, GEN_F32, GEN_SOFTMAX },  { 17, 4099, GEN_BF16, GEN_LOG_SOFTMAX },
  { 5, 128256, GEN_F32, GEN_SOFTMAX },   { 5, 128256, GEN_BF16, GEN_SOFTMAX }, { 3, 1048579, GEN_F32, GEN_SOFTMAX },
  { 300, 262147, GEN_BF16, GEN_SOFTMAX }, { 9, 7, GEN_F32, GEN_SOFTMAX_BW },     { 17, 4099, GEN_BF16, GEN_LOG_SOFTMAX_BW },
  { 5, 128256, GEN_BF16, GEN_SOFTMAX_BW }, { 300, 262147, GEN_BF16, GEN_LOG_SOFTMAX_BW },
};

/* The family of a config: what the sanitizer run wants one of. */
static void family_of(const char *cfg, char *out, size_t n)
{
  const char *hold = strstr(cfg, "hold="), *x = strstr(cfg, "xchg=");
  snprintf(out, n, "%.*s %.*s", (int)strcspn(hold, ","), hold, (int)strcspn(x, ","), x);
}

static Cover verified;   /* knob=value pairs seen verified, over all cases */
static Cover wanted;     /* knob=value pairs in the samples */

/* Compile, load and verify one config; 1 if it verified. */
static int run_one(tune_Gpu *gpu, tune_Backend *b, gen_State *g, const gen_Problem *p, const char *cfg, int slot)
{
  gen_Kernel k;
  gen_Cubin c;
  tune_Trial t;
  char err[1024];
  memset(&t, 0, sizeof t);
  if (gen_render(g, p, cfg, &k)) {
    CHECK(0, "%s: %s", cfg, gen_error(g));
    return 0;
  }
  int ok = b->compile(b->ud, &k, &c, err, sizeof err) == 0;
  CHECK(ok, "compile %s: %s", cfg, err);
  if (ok && b->load(b->ud, slot, &k, &c, &t) != TUNE_EOK) {
    printf("  pruned   %s: %s\n", cfg, t.reason);   /* allowed: the device says it cannot run */
    ok = -1;
  } else if (ok) {
    int rc = b->verify(b->ud, slot, &t);
    /* a cooperative kernel leaves its workspace as it found it (zeroed): a second run verifies too */
    if (rc == TUNE_EOK && k.launch.coop) rc = b->verify(b->ud, slot, &t);
    CHECK(rc == TUNE_EOK, "%lldx%lld %s %s %s: %s", (long long)p->rows, (long long)p->cols, gen_dtype_name(p->dtype),
          gen_op_name(p->op), cfg, t.reason);
    ok = rc == TUNE_EOK;
    if (ok) printf("  verified %s (max err %.2g ulp)\n", cfg, t.max_err);
    if (ok && slot == 0) {
      CHECK(tune_gpu_selftest(gpu, 0, err, sizeof err) == 0, "check kernel vs CPU reference, %s: %s", cfg, err);
    }
    b->unload(b->ud, slot);
  }
  if (ok > 0) cover_adds(&verified, cfg);
  gen_kernel_free(&k);
  gen_cubin_free(&c);
  return ok > 0;
}

static void run_case(const Case *cs, int all, int ordinal, int families)
{
  char err[1024], **list;
  int n, runs = 0;
  tune_Gpu *gpu;
  gen_State *g;
  gen_Problem p = { .rows = cs->rows, .cols = cs->cols, .dtype = cs->dtype, .op = cs->op };
  Cover mine = { .n = 0 };
  if (tune_gpu_open(&gpu, ordinal, err, sizeof err) || gen_open(&g, NULL, err, sizeof err)) {
    CHECK(0, "%s", err);
    return;
  }
  tune_device_limits(tune_gpu_device(gpu), &p);
  printf("%lldx%lld %s %s\n", (long long)p.rows, (long long)p.cols, gen_dtype_name(p.dtype), gen_op_name(p.op));
  CHECK(gen_space(g, &p, &list, &n) == 0, "%s", gen_error(g));
  if (tune_gpu_prepare(gpu, g, &p, n, err, sizeof err)) CHECK(0, "prepare: %s", err);
  else {
    tune_Backend b = tune_gpu_backend(gpu);
    for (int i = 0; i < n; i++) {
      char fam[64];
      family_of(list[i], fam, sizeof fam);
      if (families ? !cover_adds(&mine, fam) : !all && !cover_adds(&mine, list[i])) continue;
      cover_adds(&wanted, list[i]);
      run_one(gpu, &b, g, &p, list[i], runs++);
    }
  }
  gen_free_list(list, n);
  gen_close(g);
  tune_gpu_close(gpu);
}

int main(int argc, char **argv)
{
  char err[1024];
  tune_Gpu *gpu;
  int all = argc > 1 && strcmp(argv[1], "--all") == 0, sanitize = argc > 1 && strcmp(argv[1], "--sanitize") == 0;
  int backward = argc > 1 && strcmp(argv[1], "--backward") == 0;
  if (tune_gpu_open(&gpu, 0, err, sizeof err)) {
    printf("SKIP: no GPU here (%s)\n", err);
    return 77;
  }
  printf("GPU 0: %s, sm_%d\n", tune_gpu_device(gpu)->name, tune_gpu_device(gpu)->arch);
  tune_gpu_close(gpu);
  if (sanitize) {   /* one config per family and shape; no knob coverage to check */
    for (size_t i = 0; i < sizeof SMALL / sizeof SMALL[0]; i++) run_case(&SMALL[i], 0, 0, 1);
    return check_done("test_gpu --sanitize");
  }
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
    if (!backward || gen_op_inputs(CASES[i].op) == 2) run_case(&CASES[i], all, 0, 0);
  for (int i = 0; i < wanted.n; i++) {
    int seen = 0;
    for (int j = 0; j < verified.n && !seen; j++) seen = strcmp(wanted.seen[i], verified.seen[j]) == 0;
    CHECK(seen, "knob value %s never ran verified", wanted.seen[i]);
  }
  printf("knob values verified: %d of %d sampled\n", verified.n, wanted.n);
  return check_done(all ? "test_gpu --all" : backward ? "test_gpu --backward" : "test_gpu");
}
