/*
** test_gpu.c — on a real GPU (label gpu; exit 77, skipped, without one): for shapes covering
** every family, ragged cols (not a multiple of the vector width, so rows start unaligned),
** row counts that leave blocks partly empty, and all dtypes and ops (the backward ones too), a sample of each space
** that takes every knob value runs and is verified against the float64 reference. The check
** kernel itself is held to the CPU reference (tune_gpu_selftest). Every knob value of the
** sample's configs the device runs (not pruned: a spill, too many resources) must have run
** verified at least once.
**   test_gpu [--all]   --all: every config of every space, not a sample (label long)
**   test_gpu --backward  the sample of the backward ops' cases only
**   test_gpu --ce        the cross-entropy cases only, and their options: int32 labels, class
**                        weights, label smoothing, z-loss, softcap, all of them, an ignore_index
**                        that is a class, a gradient scale other than 1, every row ignored, and
**                        a bad label (its row's loss NaN, the flag set; without one, the flag
**                        left clear), each on one config of every family
**   test_gpu --attn      attention_softmax: every mask and bias kind, with and without a softcap,
**                        a scale, ragged and long rows (both families), Q > K (rows that see
**                        nothing), padding (key lengths 0..K), each dtype; a sample of each space,
**                        after the fill read back (masked scores NaN, visible ones finite)
**   test_gpu --attn-bw   attention_softmax_backward the same way: every mask kind, with and without
**                        a softcap (x then a third input), both families; the default run and
**                        --all run both attention ops' cases too
**   test_gpu --sanitize  one config of each kernel family (row held in registers or shared
**                        memory, two passes, split by cluster, by global exchange, pipelined)
**                        on small shapes with tails, f32 and bf16: for compute-sanitizer
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "ref.h"
#include "sample.h"
#include "tune.h"
#include "attn_mask.h"

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
  /* cross-entropy (ce.cu): rows held by a group, a block, a cluster, or read twice; ragged */
  { 777, 7, GEN_BF16, GEN_CE },           { 300, 4099, GEN_F16, GEN_CE },      { 64, 32003, GEN_F32, GEN_CE },
  { 16, 128256, GEN_BF16, GEN_CE },       { 5, 262147, GEN_BF16, GEN_CE },     { 777, 7, GEN_F32, GEN_CE_LOSS },
  { 300, 4099, GEN_BF16, GEN_CE_LOSS },   { 64, 32003, GEN_F16, GEN_CE_LOSS }, { 16, 128256, GEN_F32, GEN_CE_LOSS },
  { 5, 262147, GEN_F16, GEN_CE_LOSS },
};

/* attention_softmax (attn.cu): rows = B*H*Q of K, with the options each is verified under */
typedef struct AttnCase { Case c; int mask, bias; tune_AttnOptions o; } AttnCase;
#define AUTO TUNE_ATTN_AUTO
static const AttnCase ATTN_CASES[] = {
  { { 2 * 3 * 64, 64, GEN_BF16, GEN_ATTN }, GEN_MASK_CAUSAL, 0, { 64, 3, AUTO, -1, 0.125f, 0.f } },
  { { 1 * 2 * 37, 1000, GEN_F32, GEN_ATTN }, GEN_MASK_CAUSAL, 0, { 37, 2, AUTO, -1, 0.3f, 30.f } },
  { { 2 * 2 * 100, 4099, GEN_F16, GEN_ATTN }, GEN_MASK_WINDOW, GEN_BIAS_ALIBI, { 100, 2, AUTO, 100, 1.f, 0.f } },
  { { 3 * 2 * 16, 4099, GEN_BF16, GEN_ATTN }, GEN_MASK_CAUSAL_WINDOW, 0, { 16, 2, AUTO, 7, 0.5f, 0.f } },
  { { 9 * 1 * 8, 2048, GEN_F32, GEN_ATTN }, GEN_MASK_PADDING, 0, { 8, 1, AUTO, -1, 0.125f, 0.f } },
  { { 5 * 2 * 3, 20000, GEN_BF16, GEN_ATTN }, GEN_MASK_PADDING, GEN_BIAS_ALIBI, { 3, 2, AUTO, -1, 0.0883883f, 20.f } },
  { { 64, 64, GEN_F32, GEN_ATTN }, GEN_MASK_NONE, 0, { 64, 1, AUTO, -1, 2.f, 0.f } },
  { { 2 * 2 * 4, 65536, GEN_BF16, GEN_ATTN }, GEN_MASK_CAUSAL, GEN_BIAS_ALIBI, { 4, 2, AUTO, -1, 0.125f, 50.f } },
  { { 128, 64, GEN_F32, GEN_ATTN }, GEN_MASK_CAUSAL, 0, { 128, 1, AUTO, -1, 1.f, 0.f } },   /* Q > K: rows that see nothing */
  { { 3 * 40, 777, GEN_F16, GEN_ATTN }, GEN_MASK_CAUSAL_WINDOW, GEN_BIAS_ALIBI, { 40, 1, 0, 31, -0.7f, 0.f } },
  { { 5, 1, GEN_F32, GEN_ATTN }, GEN_MASK_CAUSAL, 0, { 5, 1, AUTO, -1, 1.f, 0.f } },
  /* key padding with causal and window: their range cut at the batch's key length */
  { { 6 * 2 * 64, 1000, GEN_BF16, GEN_ATTN }, GEN_MASK_PADDING_CAUSAL, 0, { 64, 2, AUTO, -1, 0.125f, 0.f } },
  { { 5 * 1 * 16, 4099, GEN_F16, GEN_ATTN }, GEN_MASK_PADDING_WINDOW, GEN_BIAS_ALIBI, { 16, 1, AUTO, 300, 1.f, 0.f } },
  { { 4 * 2 * 40, 777, GEN_F32, GEN_ATTN }, GEN_MASK_PADDING_CAUSAL_WINDOW, GEN_BIAS_ALIBI, { 40, 2, 0, 31, 0.5f, 20.f } },
  { { 3 * 2 * 4, 20000, GEN_BF16, GEN_ATTN }, GEN_MASK_PADDING_CAUSAL, GEN_BIAS_ALIBI, { 4, 2, AUTO, -1, 0.0883883f, 0.f } },
  { { 3 * 128, 64, GEN_F32, GEN_ATTN }, GEN_MASK_PADDING_CAUSAL, 0, { 128, 1, AUTO, -1, 1.f, 0.f } },   /* Q > K */
  /* Q == K causal 16-bit: pair=mirror's twins (two rows a group), an odd Q's middle row alone */
  { { 2 * 1 * 1024, 1024, GEN_BF16, GEN_ATTN }, GEN_MASK_CAUSAL, 0, { 1024, 1, AUTO, -1, 0.125f, 0.f } },
  { { 1 * 2 * 1023, 1023, GEN_F16, GEN_ATTN }, GEN_MASK_CAUSAL, 0, { 1023, 2, AUTO, -1, 0.125f, 0.f } },
  /* a bias tensor [Q, K] (the tuner's: -inf in places, query row 1 all -inf) with the masks */
  { { 2 * 3 * 64, 64, GEN_BF16, GEN_ATTN }, GEN_MASK_CAUSAL, GEN_BIAS_TENSOR, { 64, 3, AUTO, -1, 0.125f, 0.f } },
  { { 2 * 2 * 37, 1000, GEN_F32, GEN_ATTN }, GEN_MASK_NONE, GEN_BIAS_TENSOR, { 37, 2, AUTO, -1, 0.3f, 30.f } },
  { { 5 * 1 * 16, 4099, GEN_F16, GEN_ATTN }, GEN_MASK_PADDING_WINDOW, GEN_BIAS_TENSOR, { 16, 1, AUTO, 300, 1.f, 0.f } },
  { { 4 * 2 * 8, 20000, GEN_BF16, GEN_ATTN }, GEN_MASK_PADDING_CAUSAL_WINDOW, GEN_BIAS_TENSOR, { 8, 2, 0, 9000, 0.5f, 20.f } },
  { { 2 * 2 * 4, 65536, GEN_F32, GEN_ATTN }, GEN_MASK_PADDING, GEN_BIAS_TENSOR, { 4, 2, AUTO, -1, 0.0883883f, 0.f } },
  /* hold=packed (16-bit, no bias): a row's max from its inputs' min where scale < 0; a softcap */
  { { 4 * 2 * 32, 4096, GEN_BF16, GEN_ATTN }, GEN_MASK_PADDING, 0, { 32, 2, AUTO, -1, -0.375f, 0.f } },
  { { 3 * 2 * 48, 2048, GEN_F16, GEN_ATTN }, GEN_MASK_CAUSAL, 0, { 48, 2, AUTO, -1, 0.25f, 15.f } },
};

/* attention_softmax_backward (attn_bw.cu): its bias kind is none */
static const AttnCase ATTN_BW_CASES[] = {
  { { 2 * 3 * 64, 64, GEN_BF16, GEN_ATTN_BW }, GEN_MASK_CAUSAL, 0, { 64, 3, AUTO, -1, 0.125f, 0.f } },
  { { 1 * 2 * 37, 1000, GEN_F32, GEN_ATTN_BW }, GEN_MASK_CAUSAL, 0, { 37, 2, AUTO, -1, 0.3f, 30.f } },
  { { 2 * 2 * 100, 4099, GEN_F16, GEN_ATTN_BW }, GEN_MASK_WINDOW, 0, { 100, 2, AUTO, 100, 1.f, 0.f } },
  { { 3 * 2 * 16, 4099, GEN_BF16, GEN_ATTN_BW }, GEN_MASK_CAUSAL_WINDOW, 0, { 16, 2, AUTO, 7, 0.5f, 20.f } },
  { { 9 * 1 * 8, 2048, GEN_F32, GEN_ATTN_BW }, GEN_MASK_PADDING, 0, { 8, 1, AUTO, -1, 0.125f, 0.f } },
  { { 5 * 2 * 3, 20000, GEN_BF16, GEN_ATTN_BW }, GEN_MASK_PADDING, 0, { 3, 2, AUTO, -1, 0.0883883f, 20.f } },
  { { 64, 64, GEN_F32, GEN_ATTN_BW }, GEN_MASK_NONE, 0, { 64, 1, AUTO, -1, 2.f, 0.f } },
  { { 2 * 2 * 4, 65536, GEN_BF16, GEN_ATTN_BW }, GEN_MASK_CAUSAL, 0, { 4, 2, AUTO, -1, 0.125f, 50.f } },
  { { 128, 64, GEN_F32, GEN_ATTN_BW }, GEN_MASK_CAUSAL, 0, { 128, 1, AUTO, -1, 1.f, 0.f } },   /* Q > K: rows that see nothing */
  { { 3 * 40, 777, GEN_F16, GEN_ATTN_BW }, GEN_MASK_CAUSAL_WINDOW, 0, { 40, 1, 0, 31, -0.7f, 0.f } },
  { { 5, 1, GEN_F32, GEN_ATTN_BW }, GEN_MASK_CAUSAL, 0, { 5, 1, AUTO, -1, 1.f, 3.f } },
  { { 6 * 2 * 64, 1000, GEN_BF16, GEN_ATTN_BW }, GEN_MASK_PADDING_CAUSAL, 0, { 64, 2, AUTO, -1, 0.125f, 0.f } },
  { { 5 * 1 * 16, 4099, GEN_F16, GEN_ATTN_BW }, GEN_MASK_PADDING_WINDOW, 0, { 16, 1, AUTO, 300, 1.f, 20.f } },
  { { 4 * 2 * 40, 777, GEN_F32, GEN_ATTN_BW }, GEN_MASK_PADDING_CAUSAL_WINDOW, 0, { 40, 2, 0, 31, 0.5f, 20.f } },
  { { 3 * 2 * 4, 20000, GEN_BF16, GEN_ATTN_BW }, GEN_MASK_PADDING_CAUSAL, 0, { 4, 2, AUTO, -1, 0.0883883f, 0.f } },
  { { 3 * 128, 64, GEN_F32, GEN_ATTN_BW }, GEN_MASK_PADDING_CAUSAL, 0, { 128, 1, AUTO, -1, 1.f, 0.f } },   /* Q > K */
  { { 2 * 1 * 1024, 1024, GEN_BF16, GEN_ATTN_BW }, GEN_MASK_CAUSAL, 0, { 1024, 1, AUTO, -1, 0.125f, 0.f } },   /* pair=mirror */
  { { 1 * 2 * 1023, 1023, GEN_F16, GEN_ATTN_BW }, GEN_MASK_CAUSAL, 0, { 1023, 2, AUTO, -1, 0.125f, 20.f } },
};

/* Small, ragged shapes for compute-sanitizer: cols 1, 7, 1000, 4099, 128256 and split rows. */
static const Case SMALL[] = {
  { 9, 1, GEN_F32, GEN_SOFTMAX },        { 9, 7, GEN_BF16, GEN_LOG_SOFTMAX }, { 33, 1000, GEN_F32, GEN_LOG_SOFTMAX },
  { 33, 1000, GEN_BF16, GEN_SOFTMAX },   { 17, 4099, GEN_F32, GEN_SOFTMAX },  { 17, 4099, GEN_BF16, GEN_LOG_SOFTMAX },
  { 5, 128256, GEN_F32, GEN_SOFTMAX },   { 5, 128256, GEN_BF16, GEN_SOFTMAX }, { 3, 1048579, GEN_F32, GEN_SOFTMAX },
  { 300, 262147, GEN_BF16, GEN_SOFTMAX }, { 9, 7, GEN_F32, GEN_SOFTMAX_BW },     { 17, 4099, GEN_BF16, GEN_LOG_SOFTMAX_BW },
  { 5, 128256, GEN_BF16, GEN_SOFTMAX_BW }, { 300, 262147, GEN_BF16, GEN_LOG_SOFTMAX_BW },
  { 9, 7, GEN_BF16, GEN_CE },             { 17, 4099, GEN_F32, GEN_CE },         { 5, 128256, GEN_BF16, GEN_CE },
  { 5, 262147, GEN_F32, GEN_CE_LOSS },
};

/* The family of a config: what the sanitizer run wants one of. */
static void family_of(const char *cfg, char *out, size_t n)
{
  const char *hold = strstr(cfg, "hold="), *x = strstr(cfg, "xchg=");
  snprintf(out, n, "%.*s %.*s", (int)strcspn(hold, ","), hold, (int)strcspn(x, ","), x);
}

static Cover verified;   /* knob=value pairs seen verified, over all cases */
static Cover wanted;     /* knob=value pairs in the samples */

/* Compile, load and verify one config; 1 if it verified, -1 if the device pruned it. */
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
  return ok;
}

/* ---- the cross-entropy options: launch arguments, verified on one config of every family ---- */

enum { FILL_LABELS, ALL_IGNORED, BAD_LABEL };
typedef struct CeCase { const char *name; tune_CeOptions o; float scale; int labels; } CeCase;
static const CeCase CE_CASES[] = {
  { "int32 labels", { -100, 0.f, 0.f, 0.f, 0, 0 }, 1.f, FILL_LABELS },
  { "class weights", { -100, 0.f, 0.f, 0.f, 1, 1 }, 1.f, FILL_LABELS },
  { "label smoothing 0.1", { -100, 0.1f, 0.f, 0.f, 0, 1 }, 1.f, FILL_LABELS },
  { "z-loss 1e-4", { -100, 0.f, 1e-4f, 0.f, 0, 1 }, 1.f, FILL_LABELS },
  { "softcap 30", { -100, 0.f, 0.f, 30.f, 0, 1 }, 1.f, FILL_LABELS },
  { "smoothing, z-loss, softcap, int32", { -100, 0.2f, 1e-3f, 15.f, 0, 0 }, 1.f, FILL_LABELS },
  { "ignore_index 5 (a class)", { 5, 0.f, 0.f, 0.f, 0, 1 }, 1.f, FILL_LABELS },
  { "gradient scale 0.37", { -100, 0.f, 0.f, 0.f, 1, 0 }, 0.37f, FILL_LABELS },
  { "every row ignored", { -100, 0.f, 0.f, 0.f, 0, 1 }, 1.f, ALL_IGNORED },
  { "a bad label", { -100, 0.1f, 0.f, 0.f, 0, 0 }, 1.f, BAD_LABEL },
};

/* The labels of case c for p, set on the GPU (fill's where the case takes them). */
static int ce_labels(tune_Gpu *gpu, const gen_Problem *p, const CeCase *c, char *err, size_t errlen)
{
  if (c->labels == FILL_LABELS) return 0;
  int64_t *y = malloc((size_t)p->rows * sizeof *y);
  if (!y) return snprintf(err, errlen, "out of memory"), 1;
  for (int64_t r = 0; r < p->rows; r++) y[r] = c->labels == ALL_IGNORED ? c->o.ignore : (r * 7919) % p->cols;
  if (c->labels == BAD_LABEL) y[p->rows > 3 ? 3 : p->rows - 1] = p->cols + 1;   /* not row 0: the selftest's row */
  int rc = tune_gpu_ce_labels(gpu, y, err, errlen);
  free(y);
  return rc;
}

/* The forward's verification fill (as the tuner's fresh input): every score a structured mask
** hides NaN, so a config that reads one and lets it through fails; every visible score finite. */
static void check_masked_fill(tune_Gpu *gpu, const gen_Problem *p, const tune_AttnOptions *o)
{
  char err[512] = "cannot copy the scores back";
  const int64_t n = p->rows * p->cols, es = gen_dtype_size(p->dtype), batches = p->rows / o->q / o->h;
  void *x = malloc((size_t)(n * es));
  int *len = malloc((size_t)(batches > 0 ? batches : 1) * sizeof *len);
  CUdeviceptr in, out;
  CUstream s;
  AttnParams a;
  long long lo, hi, bad = 0;
  tune_gpu_buffers(gpu, &in, &out, &s);
  if (!x || !len || tune_gpu_fill(gpu, err, sizeof err) || tune_gpu_driver(gpu)->cuMemcpyDtoH(x, in, (size_t)(n * es))) {
    CHECK(0, "the masked fill: %s", x && len ? err : "out of memory");
    free(x), free(len);
    return;
  }
  tune_attn_params(p, o, &a);
  for (int64_t b = 0; b < batches; b++) len[b] = am_fill_length(b, p->cols);
  for (int64_t r = 0; r < p->rows; r++) {
    am_range(p->mask, &a, len, p->cols, r, &lo, &hi);
    for (int64_t c = 0; c < p->cols; c++) {
      const double v = tune_load(x, p->dtype, r * p->cols + c);
      bad += c >= lo && c < hi ? !isfinite(v) : !isnan(v);
    }
  }
  CHECK(bad == 0, "the masked fill: %lld scores not NaN where masked or not finite where visible", bad);
  free(x), free(len);
}

/* The sample (all: every config; families: one of each family) of cs's space, verified; with
** ce, under that case's options and labels, the bad-label flag checked after. */
static void run_case(const Case *cs, int all, int ordinal, int families, const CeCase *ce, const AttnCase *attn)
{
  char err[1024], **list;
  int n, runs = 0, flag = -1;
  tune_Gpu *gpu;
  gen_State *g;
  gen_Problem p = { .rows = cs->rows, .cols = cs->cols, .dtype = cs->dtype, .op = cs->op };
  Cover mine = { .n = 0 };
  if (tune_gpu_open(&gpu, ordinal, err, sizeof err) || gen_open(&g, NULL, err, sizeof err)) {
    CHECK(0, "%s", err);
    return;
  }
  tune_device_limits(tune_gpu_device(gpu), &p);
  char op[64];
  if (attn) p.mask = attn->mask, p.bias = attn->bias, p.capped = attn->o.softcap > 0.f;   /* the softcap's own kernel */
  if (ce) p.capped = ce->o.softcap > 0.f;
  gen_op_key(p.op, p.mask, p.bias, op, sizeof op);
  printf("%lldx%lld %s %s%s%s\n", (long long)p.rows, (long long)p.cols, gen_dtype_name(p.dtype), op, ce ? ", " : "",
         ce ? ce->name : "");
  if (attn)
    printf("  Q %lld, H %lld, offset %lld, window %lld, scale %g, softcap %g\n", (long long)attn->o.q, (long long)attn->o.h,
           (long long)attn->o.offset, (long long)attn->o.window, attn->o.scale, attn->o.softcap);
  CHECK(gen_space(g, &p, &list, &n) == 0, "%s", gen_error(g));
  if (ce) tune_gpu_ce_options(gpu, &ce->o);
  if (attn) tune_gpu_attn_options(gpu, &attn->o);
  if (tune_gpu_prepare(gpu, g, &p, n, err, sizeof err) ||
      (ce && ((ce->scale != 1.f && tune_gpu_ce_scale(gpu, ce->scale, err, sizeof err)) || ce_labels(gpu, &p, ce, err, sizeof err))))
    CHECK(0, "prepare: %s", err);
  else {
    tune_Backend b = tune_gpu_backend(gpu);
    if (attn && p.op == GEN_ATTN && p.mask) check_masked_fill(gpu, &p, &attn->o);
    for (int i = 0; i < n; i++) {
      char fam[64];
      family_of(list[i], fam, sizeof fam);
      if (families ? !cover_adds(&mine, fam) : !all && !cover_adds(&mine, list[i])) continue;
      if (run_one(gpu, &b, g, &p, list[i], runs++) >= 0 && !ce) cover_adds(&wanted, list[i]);   /* pruned: not wanted */
    }
    if (ce) {
      CHECK(tune_gpu_ce_flag(gpu, &flag, err, sizeof err) == 0, "flag: %s", err);
      CHECK(runs == 0 || (flag != 0) == (ce->labels == BAD_LABEL), "%s: the bad-label flag reads %d", ce->name, flag);
    }
  }
  gen_free_list(list, n);
  gen_close(g);
  tune_gpu_close(gpu);
}

static void run_ce_options(int ordinal)
{
  static const Case PROBLEMS[] = { { 300, 4099, GEN_BF16, GEN_CE }, { 16, 128256, GEN_BF16, GEN_CE }, { 64, 32003, GEN_F32, GEN_CE_LOSS } };
  for (size_t i = 0; i < sizeof PROBLEMS / sizeof *PROBLEMS; i++)
    for (size_t j = 0; j < sizeof CE_CASES / sizeof *CE_CASES; j++) run_case(&PROBLEMS[i], 0, ordinal, 1, &CE_CASES[j], NULL);
}

int main(int argc, char **argv)
{
  char err[1024];
  tune_Gpu *gpu;
  int all = argc > 1 && strcmp(argv[1], "--all") == 0, sanitize = argc > 1 && strcmp(argv[1], "--sanitize") == 0;
  int backward = argc > 1 && strcmp(argv[1], "--backward") == 0, ce = argc > 1 && strcmp(argv[1], "--ce") == 0;
  int attn = argc > 1 && strcmp(argv[1], "--attn") == 0, attn_bw = argc > 1 && strcmp(argv[1], "--attn-bw") == 0;
  if (tune_gpu_open(&gpu, 0, err, sizeof err)) {
    printf("SKIP: no GPU here (%s)\n", err);
    return 77;
  }
  printf("GPU 0: %s, sm_%d\n", tune_gpu_device(gpu)->name, tune_gpu_device(gpu)->arch);
  tune_gpu_close(gpu);
  if (sanitize) {   /* one config per family and shape; no knob coverage to check */
    for (size_t i = 0; i < sizeof SMALL / sizeof SMALL[0]; i++) run_case(&SMALL[i], 0, 0, 1, NULL, NULL);
    return check_done("test_gpu --sanitize");
  }
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0] && !attn && !attn_bw; i++)
    if ((!backward || gen_op_inputs(CASES[i].op) == 2) && (!ce || gen_op(CASES[i].op)->params)) run_case(&CASES[i], all, 0, 0, NULL, NULL);
  for (size_t i = 0; i < sizeof ATTN_CASES / sizeof *ATTN_CASES && !backward && !ce && !attn_bw; i++)
    run_case(&ATTN_CASES[i].c, all, 0, 0, NULL, &ATTN_CASES[i]);
  for (size_t i = 0; i < sizeof ATTN_BW_CASES / sizeof *ATTN_BW_CASES && !backward && !ce && !attn; i++)
    run_case(&ATTN_BW_CASES[i].c, all, 0, 0, NULL, &ATTN_BW_CASES[i]);
  for (int i = 0; i < wanted.n; i++) {
    int seen = 0;
    for (int j = 0; j < verified.n && !seen; j++) seen = strcmp(wanted.seen[i], verified.seen[j]) == 0;
    CHECK(seen, "knob value %s never ran verified", wanted.seen[i]);
  }
  printf("knob values verified: %d of %d sampled\n", verified.n, wanted.n);
  if (!backward && !attn && !attn_bw) run_ce_options(0);
  return check_done(all ? "test_gpu --all" : backward ? "test_gpu --backward" : ce ? "test_gpu --ce" : attn ? "test_gpu --attn"
                    : attn_bw ? "test_gpu --attn-bw" : "test_gpu");
}
