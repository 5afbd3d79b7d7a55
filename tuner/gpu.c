/*
** gpu.c — the tuner's GPU backend: buffers for one problem, random inputs drawn on the GPU,
** verification by the float64 check kernel (templates/check.cu), event timing with L2 flushed
** before every launch, and recovery when a config's launch breaks the context. The backward
** ops (two inputs: in is y, in2 dy; out is dx) have their own fill and check kernels, and their
** floor is a kernel reading two tensors and writing a third (st_add) instead of the copy. The
** cross-entropy ops add labels, class weights, loss and lse buffers and a CeParams block; the
** loss-only op's floor reads the logits and writes a float a row (st_read_rows). attention_softmax
** adds key lengths and ALiBi slopes and an AttnParams block; its floor copies the visible scores
** and zeroes the rest (st_attn_floor). Its backward (in is y, in2 dy, out dx) adds the scores x
** (ax), and its floor reads the visible y and dy (and x under a softcap) and writes all of dx
** (st_attn_bw_floor). The op's descriptor (gen_Op) says which.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ref.h"
#include "tune.h"
#include "attn_mask.h"

#define MAX_REPS 256
#define FLUSH_BYTES (256u << 20)   /* what triton.testing.do_bench clears between launches */
#define WS_BYTES (8u << 20)        /* workspace for cooperative (xchg=global) kernels */
#define VERIFY_CAP 30.f            /* the softcap a softcap's kernel runs with where the options have none */

typedef struct Slot {
  CUmodule mod;
  CUfunction fn;
  gen_Launch launch;
  int resident;             /* blocks resident at once, for cooperative grids */
  const gen_Cubin *cubin;   /* borrowed from the sweep, to reload after a context reset */
  char name[64];
} Slot;

typedef struct CheckOut {   /* as struct CheckOut in templates/check.cu */
  uint64_t bad, first_bad, bad_sums;
  uint32_t max_err, max_sumdev;
} CheckOut;

struct tune_Gpu {
  tune_Driver drv;
  tune_Device dev;
  int ready;                /* context, buffers and aux kernels are up */
  CUcontext ctx;
  tune_Green green;         /* --sms: the SMs kernels run on; else none (green.ctx NULL) */
  int want_sms;             /* --sms as asked, to make the green context again after a reset */
  CUstream stream;
  CUevent ev[2 * MAX_REPS];
  gen_Problem p;
  size_t bytes;             /* one tensor */
  const gen_Op *op;         /* what the problem's op reads, writes, fills, checks and floors */
  int bw;                   /* a backward op: in2 (dy) is used */
  int ce;                   /* a cross-entropy op: labels, weight, loss, lse, scale, flag and params */
  CUdeviceptr in, in2, out, flush, res, ws;
  CUdeviceptr labels, weight, loss, lse, scale, flag;
  CeParams params;          /* ce: the options the kernels run and are checked with */
  float softcap;            /* ce: the options' softcap (params' is the loaded kernel's: softcap_variant) */
  int use_weight;
  void *own_labels;         /* ce: labels set by tune_gpu_ce_labels (as the kernels read them), copied over fill's */
  int attn;                 /* attention_softmax or its backward: key lengths, slopes and its params */
  int attn_bw;              /* attention_softmax_backward: also the scores x (ax) */
  int timing_set;           /* key padding: the lengths and tensors are timing's (timed), until fresh_input's */
  tune_AttnOptions aopt;
  AttnParams aparams;
  CUdeviceptr lengths, slopes, ax, tbias;   /* tbias: the bias tensor [Q, K] (bias kind tensor) */
  gen_Cubin aux;            /* fill and check kernels (templates/aux.cu) */
  char cubins[4096];        /* the kept cubins' folder (cache_compile), "" for none */
  int ptx_arch;             /* tune_gpu_ptx: configs compiled as PTX for compute_<ptx_arch>, or 0 */
  int max_local;            /* tune_gpu_max_local: the most local memory a timed config holds, bytes a thread */
  CUmodule auxmod;
  CUfunction fill, fill_ce, fill_attn, fill_bias, check, floor;
  Slot *slots;
  int nslots;
  uint64_t seed;
  char err[512];
};

/* "what: CUDA_ERROR_X: text" into buf. */
static const char *cu_msg(tune_Gpu *g, const char *what, CUresult r, char *buf, size_t n)
{
  char e[256];
  snprintf(buf, n, "%s: %s", what, tune_cu_error(&g->drv, r, e, sizeof e));
  return buf;
}

static int sticky(CUresult r)
{
  return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED || r == CUDA_ERROR_MISALIGNED_ADDRESS ||
         r == CUDA_ERROR_ILLEGAL_INSTRUCTION || r == CUDA_ERROR_HARDWARE_STACK_ERROR || r == CUDA_ERROR_INVALID_PC ||
         r == CUDA_ERROR_ASSERT || r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_INVALID_ADDRESS_SPACE;
}

/* Wait for the stream, giving up after `seconds`: a kernel that never ends (a deadlock) must
** not hang the tuner. CUDA_ERROR_NOT_READY means it timed out. */
static CUresult wait(tune_Gpu *g, double seconds)
{
  struct timespec t0, t, nap = { 0, 50000 };
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    CUresult r = g->drv.cuStreamQuery(g->stream);
    if (r != CUDA_ERROR_NOT_READY) return r;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 > seconds) return CUDA_ERROR_NOT_READY;
    nanosleep(&nap, NULL);
  }
}

int tune_gpu_open(tune_Gpu **out, int ordinal, char *err, size_t errlen)
{
  tune_Gpu *g = calloc(1, sizeof *g);
  *out = NULL;
  if (!g) return snprintf(err, errlen, "out of memory"), 1;
  if (tune_driver_load(&g->drv, err, errlen)) {
    free(g);
    return 1;
  }
  if (tune_device(&g->drv, ordinal, &g->dev, err, errlen)) {
    tune_driver_unload(&g->drv);
    free(g);
    return 1;
  }
  cache_cubin_dir(NULL, g->cubins, sizeof g->cubins);
  tune_CeOptions ce;
  tune_ce_defaults(&ce);
  tune_gpu_ce_options(g, &ce);
  tune_attn_defaults(&g->aopt);
  g->max_local = TUNE_MAX_LOCAL;
  *out = g;
  return 0;
}

void tune_gpu_ptx(tune_Gpu *g, int arch)
{
  g->ptx_arch = arch;
}

void tune_gpu_max_local(tune_Gpu *g, int bytes)
{
  g->max_local = bytes;
}

const tune_Device *tune_gpu_device(const tune_Gpu *g)
{
  return &g->dev;
}

int tune_gpu_limit_sms(tune_Gpu *g, int sms, char *err, size_t errlen)
{
  if (g->ready || g->green.ctx) return snprintf(err, errlen, "--sms must come before the GPU is set up"), 1;
  if (tune_green_open(&g->drv, &g->dev, sms, &g->green, err, errlen)) return 1;
  g->want_sms = sms;
  g->dev.sms = g->green.sms;   /* the space, grids and cache key see the narrowed GPU */
  return 0;
}

static void unload_slot(tune_Gpu *g, Slot *s)
{
  if (s->mod) g->drv.cuModuleUnload(s->mod);
  s->mod = NULL;
  s->fn = NULL;
}

/* Release the context's resources (not the slots' bookkeeping). */
static void teardown(tune_Gpu *g)
{
  tune_Driver *d = &g->drv;
  if (!g->ctx) return;
  for (int i = 0; i < g->nslots; i++) unload_slot(g, &g->slots[i]);
  if (g->auxmod) d->cuModuleUnload(g->auxmod);
  for (int i = 0; i < 2 * MAX_REPS; i++)
    if (g->ev[i]) d->cuEventDestroy(g->ev[i]);
  if (g->in) d->cuMemFree(g->in);
  if (g->out) d->cuMemFree(g->out);
  if (g->in2) d->cuMemFree(g->in2);
  if (g->flush) d->cuMemFree(g->flush);
  if (g->res) d->cuMemFree(g->res);
  if (g->ws) d->cuMemFree(g->ws);
  CUdeviceptr *ce[] = { &g->labels, &g->weight, &g->loss, &g->lse, &g->scale, &g->flag, &g->lengths, &g->slopes, &g->ax,
                        &g->tbias };
  for (size_t i = 0; i < sizeof ce / sizeof *ce; i++)
    if (*ce[i]) d->cuMemFree(*ce[i]), *ce[i] = 0;
  if (g->stream) d->cuStreamDestroy(g->stream);
  d->cuDevicePrimaryCtxRelease(g->dev.dev);
  g->auxmod = NULL;
  memset(g->ev, 0, sizeof g->ev);
  g->in = g->in2 = g->out = g->flush = g->res = g->ws = 0;
  g->stream = NULL;
  g->ctx = NULL;
  g->ready = 0;
}

/* The cross-entropy buffers, and the params pointing at them: labels (int64, or int32), class
** weights, loss and lse, and the flag; the gradient's scale is 1 (reduction sum: a mean's factor
** is a float the kernel reads, whatever its value) until tune_gpu_ce_scale writes one. */
static CUresult alloc_ce(tune_Gpu *g)
{
  tune_Driver *d = &g->drv;
  const size_t rows = (size_t)g->p.rows;
  CUresult r;
  if ((r = d->cuMemAlloc(&g->labels, 8 * rows)) || (r = d->cuMemAlloc(&g->weight, 4 * (size_t)g->p.cols)) ||
      (r = d->cuMemAlloc(&g->loss, 4 * rows)) || (r = d->cuMemAlloc(&g->lse, 4 * rows)) ||
      (r = d->cuMemAlloc(&g->scale, 4)) || (r = d->cuMemAlloc(&g->flag, 4)) ||
      (r = d->cuMemsetD32Async(g->flag, 0, 1, g->stream)) || (r = d->cuStreamSynchronize(g->stream)))
    return r;
  g->params.cols = g->params.stride = g->p.cols;
  g->params.weight = g->use_weight ? g->weight : 0;
  g->params.scale = 0;
  g->params.flag = g->flag;
  return CUDA_SUCCESS;
}

/* attention_softmax's key lengths [B], slopes [H] and bias tensor [Q, K] (broadcast over B and
** H), and the params pointing at them as its kinds read them. */
static CUresult alloc_attn(tune_Gpu *g)
{
  const size_t heads = (size_t)g->aparams.h, batches = (size_t)(g->p.rows / g->aparams.q) / heads;
  CUresult r;
  if ((r = g->drv.cuMemAlloc(&g->lengths, 4 * batches)) || (r = g->drv.cuMemAlloc(&g->slopes, 4 * heads)) ||
      (g->attn_bw && (r = g->drv.cuMemAlloc(&g->ax, g->bytes))) ||
      (g->p.bias == GEN_BIAS_TENSOR && (r = g->drv.cuMemAlloc(&g->tbias, 4 * (size_t)(g->aparams.q * g->p.cols)))))
    return r;
  g->aparams.bias = g->tbias, g->aparams.bias_sb = g->aparams.bias_sh = 0, g->aparams.bias_sq = g->tbias ? g->p.cols : 0;
  g->aparams.key_lengths = g->p.mask & GEN_MASK_PADDING ? g->lengths : 0;
  g->aparams.slopes = g->p.bias == GEN_BIAS_ALIBI ? g->slopes : 0;
  return CUDA_SUCCESS;
}

/* Context, stream, events, buffers, aux kernels: everything but the configs' modules. */
static int setup(tune_Gpu *g, char *err, size_t errlen)
{
  tune_Driver *d = &g->drv;
  CUresult r;
  size_t free_mem = 0, total = 0;
  const size_t need = (size_t)(g->op->reads + 1 + g->attn_bw) * g->bytes + FLUSH_BYTES + (64u << 20);
  if ((r = d->cuDevicePrimaryCtxRetain(&g->ctx, g->dev.dev)) != CUDA_SUCCESS) {
    g->ctx = NULL;
    return cu_msg(g, "cannot get a context on the GPU", r, err, errlen), 1;
  }
  /* under --sms the stream, events, buffers and modules all belong to the green context */
  if ((r = d->cuCtxSetCurrent(g->green.ctx ? g->green.ctx : g->ctx)) || (r = d->cuMemGetInfo(&free_mem, &total)))
    return cu_msg(g, "cannot use the GPU", r, err, errlen), 1;
  if (need > free_mem)   /* 2: the shape is too large for this GPU, refused before allocating */
    return snprintf(err, errlen, "shape %lldx%lld %s needs %.2f GB on the GPU (inputs, output, L2 flush); %.2f GB of %.2f GB are free",
                    (long long)g->p.rows, (long long)g->p.cols, gen_dtype_name(g->p.dtype), need / 1e9, free_mem / 1e9,
                    total / 1e9), 2;
  if ((r = d->cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING)))
    return cu_msg(g, "cannot make a stream", r, err, errlen), 1;
  for (int i = 0; i < 2 * MAX_REPS; i++)
    if ((r = d->cuEventCreate(&g->ev[i], CU_EVENT_DEFAULT))) return cu_msg(g, "cannot make events", r, err, errlen), 1;
  if ((r = d->cuMemAlloc(&g->in, g->bytes)) || (r = d->cuMemAlloc(&g->out, g->bytes)) ||
      (r = d->cuMemAlloc(&g->flush, FLUSH_BYTES)) || (r = d->cuMemAlloc(&g->res, sizeof(CheckOut))) ||
      (r = d->cuMemAlloc(&g->ws, WS_BYTES)) || (r = d->cuMemsetD8(g->ws, 0, WS_BYTES)) ||
      (g->bw && (r = d->cuMemAlloc(&g->in2, g->bytes))) || (g->ce && (r = alloc_ce(g))) || (g->attn && (r = alloc_attn(g))))
    return cu_msg(g, "cannot allocate GPU memory", r, err, errlen), 1;
  static const char *const floors[] = { NULL, "st_add", "st_read_rows", "st_attn_floor", "st_attn_bw_floor" };
  if ((r = d->cuModuleLoadData(&g->auxmod, g->aux.data)) ||
      (r = d->cuModuleGetFunction(&g->fill, g->auxmod, g->ce ? "st_fill" : g->op->fill)) ||
      (g->ce && (r = d->cuModuleGetFunction(&g->fill_ce, g->auxmod, g->op->fill))) ||
      (g->attn && (r = d->cuModuleGetFunction(&g->fill_attn, g->auxmod, "st_fill_attn"))) ||
      (g->tbias && (r = d->cuModuleGetFunction(&g->fill_bias, g->auxmod, "st_fill_attn_bias"))) ||
      (r = d->cuModuleGetFunction(&g->check, g->auxmod, g->op->check)) ||
      (floors[g->op->floor] && (r = d->cuModuleGetFunction(&g->floor, g->auxmod, floors[g->op->floor]))))
    return cu_msg(g, "cannot load the fill and check kernels", r, err, errlen), 1;
  g->ready = 1;
  return 0;
}

int tune_gpu_prepare(tune_Gpu *g, gen_State *gen, const gen_Problem *p, int nslots, char *err, size_t errlen)
{
  char *src;
  g->p = *p;
  g->op = gen_op(p->op);
  g->bw = g->op->reads == 2;
  g->ce = g->op->params == 1;
  g->attn = gen_op_is_attn(p->op);
  g->attn_bw = p->op == GEN_ATTN_BW;
  if (g->attn) {   /* an entry verified again comes with the defaults: a window mask gets a window */
    tune_AttnOptions a = g->aopt;
    if (p->mask & GEN_MASK_WINDOW && a.window < 0) a.window = p->cols / 8;
    if (p->capped && !(a.softcap > 0.f)) a.softcap = VERIFY_CAP;   /* and a softcap's kernel a softcap */
    if (tune_attn_check(p, &a, err, errlen)) return 1;
    tune_attn_params(p, &a, &g->aparams);
  }
  g->bytes = (size_t)(p->rows * p->cols * gen_dtype_size(p->dtype));
  g->seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
  if (!(g->slots = calloc((size_t)nslots, sizeof *g->slots))) return snprintf(err, errlen, "out of memory"), 1;
  g->nslots = nslots;
  if (gen_aux(gen, p, "aux", &src)) return snprintf(err, errlen, "%s", gen_error(gen)), 1;
  int rc = gen_compile(src, "aux.cu", g->dev.arch, &g->aux, err, errlen);
  free(src);
  return rc ? rc : setup(g, err, errlen);
}

static int load_slot(tune_Gpu *g, Slot *s, char *why, size_t n)
{
  tune_Driver *d = &g->drv;
  CUresult r;
  if ((r = d->cuModuleLoadData(&s->mod, s->cubin->data))) {
    s->mod = NULL;
    return cu_msg(g, "module load", r, why, n), 1;
  }
  if ((r = d->cuModuleGetFunction(&s->fn, s->mod, s->name)) || (r = tune_func_setup(d, s->fn, &s->launch)) ||
      (r = tune_resident(d, s->fn, &s->launch, g->dev.sms, &s->resident)))
    return cu_msg(g, "function setup", r, why, n), 1;
  return 0;
}

/* After a launch broke the context: start over and reload every loaded config. */
static int recover(tune_Gpu *g)
{
  char err[512];
  for (int i = 0; i < g->nslots; i++) g->slots[i].mod = NULL;   /* gone with the context */
  teardown(g);
  tune_green_close(&g->green);   /* it lives on the primary context, which the reset ends */
  g->drv.cuDevicePrimaryCtxReset(g->dev.dev);
  if ((g->want_sms && tune_green_open(&g->drv, &g->dev, g->want_sms, &g->green, err, sizeof err)) || setup(g, err, sizeof err))
    return snprintf(g->err, sizeof g->err, "recovering the GPU: %s", err), 1;
  for (int i = 0; i < g->nslots; i++)
    if (g->slots[i].cubin && load_slot(g, &g->slots[i], err, sizeof err))
      return snprintf(g->err, sizeof g->err, "reloading after a reset: %s", err), 1;
  return 0;
}

static int occupancy(tune_Gpu *g, Slot *s, tune_Trial *t)
{
  tune_Driver *d = &g->drv;
  const gen_Launch *l = &s->launch;
  CUresult r = CUDA_SUCCESS;
  int n = 0;
  if (l->cluster > 1) {
    CUlaunchConfig cfg;
    CUlaunchAttribute attr;
    memset(&cfg, 0, sizeof cfg);
    memset(&attr, 0, sizeof attr);
    cfg.gridDimX = (unsigned)l->cluster;
    cfg.gridDimY = cfg.gridDimZ = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.blockDimX = (unsigned)l->threads;
    cfg.sharedMemBytes = (unsigned)l->smem;
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = (unsigned)l->cluster;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    r = d->cuOccupancyMaxActiveClusters(&n, s->fn, &cfg);
    t->blocks_sm = (n * l->cluster + g->dev.sms - 1) / g->dev.sms;
  } else {   /* load_slot read the resident blocks already */
    n = s->resident / g->dev.sms;
    t->blocks_sm = n;
  }
  if (r) return cu_msg(g, "occupancy", r, t->reason, sizeof t->reason), 1;
  t->occupancy = (double)n * (l->cluster > 1 ? l->cluster : 1) * l->threads / ((double)g->dev.threads_sm * (l->cluster > 1 ? g->dev.sms : 1));
  if (n == 0)
    return snprintf(t->reason, sizeof t->reason, "zero occupancy: %d threads, %d registers, %d bytes shared%s", l->threads,
                    t->regs, t->smem, l->cluster > 1 ? ", cluster does not fit" : ""), 1;
  return 0;
}

/* A cross-entropy or attention module holds one entry point (ce.cu, attn.cu, attn_bw.cu): the
** softcap's (name "..._cap") where the options have one, else the plain one. A softcap kernel met
** under options without one (a cached entry verified again) runs with a softcap of VERIFY_CAP. 1
** with why when the two disagree. */
static int softcap_variant(tune_Gpu *g, const char *name, char *why, size_t n)
{
  const float want = g->ce ? g->softcap : g->aopt.softcap;
  const int capped = gen_capped_name(name);
  if (!capped && want > 0.f)
    return snprintf(why, n, "%s has no softcap, and the options have one (%g): render it capped", name, want), 1;
  *(g->ce ? &g->params.softcap : &g->aparams.softcap) = capped ? (want > 0.f ? want : VERIFY_CAP) : 0.f;
  return 0;
}

static int gpu_load(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t)
{
  tune_Gpu *g = ud;
  tune_Driver *d = &g->drv;
  Slot *s = &g->slots[slot];
  int regs = 0, local = 0, shared = 0, maxthreads = 0;
  s->launch = k->launch;
  s->cubin = c;
  snprintf(s->name, sizeof s->name, "%s", k->name);
  if ((g->ce || g->attn) && softcap_variant(g, k->name, t->reason, sizeof t->reason)) return TUNE_ECONFIG;
  if (load_slot(g, s, t->reason, sizeof t->reason)) {
    unload_slot(g, s);
    s->cubin = NULL;
    return TUNE_ECONFIG;
  }
  d->cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, s->fn);
  d->cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, s->fn);
  d->cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, s->fn);
  d->cuFuncGetAttribute(&maxthreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, s->fn);
  t->regs = regs;
  t->local_bytes = local;
  t->smem = shared + k->launch.smem;
  int bad = occupancy(g, s, t);
  if (!bad && maxthreads < k->launch.threads)
    bad = snprintf(t->reason, sizeof t->reason, "%d registers allow %d threads per block, not %d", regs, maxthreads,
                   k->launch.threads) > 0;
  if (!bad && k->launch.coop && s->resident < k->launch.blocks_per_row)
    bad = snprintf(t->reason, sizeof t->reason, "the %d blocks of a row cannot all be resident (%d fit)",
                   k->launch.blocks_per_row, s->resident) > 0;
  if (!bad && tune_workspace(&k->launch, s->resident) > WS_BYTES)
    bad = snprintf(t->reason, sizeof t->reason, "needs %zu bytes of workspace", tune_workspace(&k->launch, s->resident)) > 0;
  if (!bad && local > g->max_local && !g->ptx_arch)
    bad = snprintf(t->reason, sizeof t->reason, "spills: %d bytes of local memory per thread (%d allowed)", local,
                   g->max_local) > 0;
  if (bad) {
    unload_slot(g, s);
    s->cubin = NULL;
    return TUNE_ECONFIG;
  }
  return TUNE_EOK;
}

/* A failed launch or run: recover the context when the error broke it. */
static int run_failed(tune_Gpu *g, const char *what, CUresult r, tune_Trial *t)
{
  if (r == CUDA_ERROR_NOT_READY)
    return snprintf(g->err, sizeof g->err, "%s did not finish in 20 s (%s): stopping, the GPU may still be busy", what,
                    t ? t->config : "check"), TUNE_EFATAL;
  if (t) cu_msg(g, what, r, t->reason, sizeof t->reason);
  else cu_msg(g, what, r, g->err, sizeof g->err);
  if (sticky(r) && recover(g)) return TUNE_EFATAL;
  return t ? TUNE_ECONFIG : TUNE_EFATAL;
}

static unsigned aux_grid(tune_Gpu *g)
{
  int64_t n = g->p.rows < (int64_t)g->dev.sms * 16 ? g->p.rows : (int64_t)g->dev.sms * 16;
  return (unsigned)n;
}

/* attention_softmax's key lengths and slopes: the lengths it verifies by (timing 0: full, empty
** and random rows, am_fill_length), or those it times by (1: am_time_length, a spread over
** [K/4, K] as users' padded batches). */
static CUresult attn_lengths(tune_Gpu *g, int timing)
{
  long long batches = g->p.rows / g->aparams.q / g->aparams.h, heads = g->aparams.h;
  void *args[] = { &g->lengths, &g->slopes, &batches, &heads, &timing };
  return g->drv.cuLaunchKernel(g->fill_attn, aux_grid(g), 1, 1, 256, 1, 1, 0, g->stream, args, NULL);
}

/* A fresh seed for the fill kernels. */
static unsigned long long next_seed(tune_Gpu *g)
{
  return ++g->seed * 0xbf58476d1ce4e5b9ull;
}

/* The op's tensors drawn afresh (with the special rows; attention's by the key lengths set now:
** a score they mask is NaN). */
static CUresult fill_tensors(tune_Gpu *g, unsigned long long seed)
{
  long long rows = g->p.rows;
  int specials = !g->ce;   /* a loss needs finite logits */
  void *args[] = { &g->in, &rows, &seed, &specials }, *args_bw[] = { &g->in, &g->in2, &rows, &seed, &specials };
  void *args_attn[] = { &g->in, &rows, &seed, &g->aparams }, *args_attn_bw[] = { &g->ax, &g->in, &g->in2, &rows, &seed, &g->aparams };
  return g->drv.cuLaunchKernel(g->fill, aux_grid(g), 1, 1, 256, 1, 1, 0, g->stream,
                               g->attn_bw ? args_attn_bw : g->attn ? args_attn : g->bw ? args_bw : args, NULL);
}

/* Fresh random input (with the special rows) and the output poisoned. */
static CUresult fresh_input(tune_Gpu *g)
{
  tune_Driver *d = &g->drv;
  long long rows = g->p.rows;
  unsigned long long seed = next_seed(g);
  void *args_ce[] = { &g->labels, &g->weight, &rows, &seed, &g->params };
  long long nbias = g->attn ? g->aparams.q * g->p.cols : 0;
  void *args_bias[] = { &g->tbias, &nbias };
  /* the key lengths first: the fill reads them */
  CUresult r = g->attn ? attn_lengths(g, 0) : CUDA_SUCCESS;
  g->timing_set = 0;
  if (!r && g->tbias) r = d->cuLaunchKernel(g->fill_bias, aux_grid(g), 1, 1, 256, 1, 1, 0, g->stream, args_bias, NULL);
  if (!r) r = fill_tensors(g, seed);
  if (!r && g->ce) r = d->cuLaunchKernel(g->fill_ce, aux_grid(g), 1, 1, 256, 1, 1, 0, g->stream, args_ce, NULL);
  if (!r && g->own_labels)
    r = d->cuMemcpyHtoDAsync(g->labels, g->own_labels, (size_t)g->p.rows * (g->params.labels64 ? 8 : 4), g->stream);
  if (!r && g->ce) r = d->cuMemsetD32Async(g->loss, tune_poison(GEN_F32), (size_t)g->p.rows, g->stream);
  if (!r && g->ce) r = d->cuMemsetD32Async(g->lse, tune_poison(GEN_F32), (size_t)g->p.rows, g->stream);
  if (r) return r;
  const uint32_t p = tune_poison(g->p.dtype);
  if (g->p.dtype == GEN_F32) return d->cuMemsetD32Async(g->out, p, g->bytes / 4, g->stream);
  return d->cuMemsetD16Async(g->out, (unsigned short)p, g->bytes / 2, g->stream);
}

/* The float64 reference of row `row` of a cross-entropy problem into ref (the gradient), with
** its logits xr and label *y read back; CUDA_SUCCESS or the error. */
static CUresult ce_row_ref(tune_Gpu *g, int64_t row, void *raw, double *xr, double *ref, int64_t *y)
{
  const int64_t cols = g->p.cols, es = gen_dtype_size(g->p.dtype);
  float scale = 1.f, *w = g->params.weight ? malloc((size_t)cols * 4) : NULL;
  int64_t label = 0;
  double loss, lse;
  CUresult r = g->params.weight && !w ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
  if (!r) r = g->drv.cuMemcpyDtoH(raw, g->in + (CUdeviceptr)(row * cols * es), (size_t)(cols * es));
  if (!r) r = g->drv.cuMemcpyDtoH(&label, g->labels + (CUdeviceptr)(row * (g->params.labels64 ? 8 : 4)), g->params.labels64 ? 8 : 4);
  if (!r && w) r = g->drv.cuMemcpyDtoH(w, g->weight, (size_t)cols * 4);
  if (!r && g->params.scale) r = g->drv.cuMemcpyDtoH(&scale, g->scale, 4);
  if (!r) {
    const tune_CeRef o = { g->params.ignore, g->params.smoothing, g->params.zloss, g->params.softcap, scale, w };
    *y = g->params.labels64 ? label : (int64_t)(int32_t)label;
    for (int64_t j = 0; j < cols; j++) xr[j] = tune_load(raw, g->p.dtype, j);
    tune_ref_row_ce(xr, cols, *y, &o, ref, &loss, &lse);
  }
  free(w);
  return r;
}

/* A cross-entropy run's reason: the first wrong gradient element against the CPU's reference,
** and the rows whose loss or lse is off. */
static void describe_bad_ce(tune_Gpu *g, const CheckOut *co, tune_Trial *t)
{
  const int64_t cols = g->p.cols, es = gen_dtype_size(g->p.dtype);
  char first[200] = "";
  float dev;
  memcpy(&dev, &co->max_sumdev, 4);
  if (co->bad) {
    const int64_t row = (int64_t)(co->first_bad / (uint64_t)cols), col = (int64_t)(co->first_bad % (uint64_t)cols);
    void *raw = malloc((size_t)(cols * es)), *got = malloc((size_t)es);
    double *xr = malloc((size_t)cols * sizeof *xr), *ref = malloc((size_t)cols * sizeof *ref);
    int64_t y = 0;
    if (raw && got && xr && ref && !ce_row_ref(g, row, raw, xr, ref, &y) &&
        !g->drv.cuMemcpyDtoH(got, g->out + (CUdeviceptr)((uint64_t)co->first_bad * (uint64_t)es), (size_t)es))
      snprintf(first, sizeof first, " (first: row %lld col %lld, label %lld, logit %.6g, got %.6g, want %.6g)", (long long)row,
               (long long)col, (long long)y, xr[col], tune_load(got, g->p.dtype, 0), ref[col]);
    free(raw), free(got), free(xr), free(ref);
  }
  snprintf(t->reason, sizeof t->reason, "wrong: %llu gradient elements out of bounds%s; %llu rows' loss or lse off (max"
           " |loss - reference| %.3g)", (unsigned long long)co->bad, first, (unsigned long long)co->bad_sums, dev);
}

/* The first wrong element, checked on the CPU against the float64 reference, for the reason. */
static void describe_bad(tune_Gpu *g, const CheckOut *co, tune_Trial *t)
{
  const int64_t cols = g->p.cols, es = gen_dtype_size(g->p.dtype);
  char first[160] = "";
  if (g->ce) {
    describe_bad_ce(g, co, t);
    return;
  }
  if (g->attn) {   /* the GPU check's figures: its reference needs the whole row's inputs */
    snprintf(t->reason, sizeof t->reason, "wrong: %llu elements out of bounds (first: row %lld col %lld)", (unsigned long long)co->bad,
             (long long)(co->first_bad / (uint64_t)cols), (long long)(co->first_bad % (uint64_t)cols));
    return;
  }
  if (co->bad) {
    const int64_t row = (int64_t)(co->first_bad / (uint64_t)cols), col = (int64_t)(co->first_bad % (uint64_t)cols);
    const CUdeviceptr at = (CUdeviceptr)(row * cols * es);
    void *x = malloc((size_t)(cols * es)), *y = malloc((size_t)(cols * es)), *dy = malloc((size_t)(cols * es));
    double *xr = malloc((size_t)cols * sizeof *xr), *ref = malloc((size_t)cols * sizeof *ref);
    double *dr = malloc((size_t)cols * sizeof *dr);
    if (x && y && dy && xr && ref && dr && !g->drv.cuMemcpyDtoH(x, g->in + at, (size_t)(cols * es)) &&
        !g->drv.cuMemcpyDtoH(y, g->out + at, (size_t)(cols * es)) &&
        !(g->bw && g->drv.cuMemcpyDtoH(dy, g->in2 + at, (size_t)(cols * es)))) {
      for (int64_t j = 0; j < cols; j++) xr[j] = tune_load(x, g->p.dtype, j), dr[j] = g->bw ? tune_load(dy, g->p.dtype, j) : 0.;
      if (g->bw) tune_ref_row_bw(xr, dr, cols, g->p.op, ref);
      else tune_ref_row(xr, cols, g->p.op, ref);
      snprintf(first, sizeof first, " (first: row %lld col %lld, input %.6g, got %.6g, want %.6g)", (long long)row,
               (long long)col, xr[col], tune_load(y, g->p.dtype, col), ref[col]);
    }
    free(x), free(y), free(dy), free(xr), free(ref), free(dr);
  }
  float sumdev;
  memcpy(&sumdev, &co->max_sumdev, 4);
  snprintf(t->reason, sizeof t->reason, "wrong: %llu elements out of bounds%s; %llu rows' sums off (max |sum - rounded"
           " reference's| %.3g)", (unsigned long long)co->bad, first, (unsigned long long)co->bad_sums, sumdev);
}

/* Run the check kernel over input x and output y into co. */
static CUresult check_buffers(tune_Gpu *g, CUdeviceptr x, CUdeviceptr y, CheckOut *co)
{
  long long rows = g->p.rows;
  uint32_t poison = tune_poison(g->p.dtype);
  void *args[] = { &x, &y, &rows, &poison, &g->res }, *args_bw[] = { &x, &g->in2, &y, &rows, &poison, &g->res };
  void *args_ce[] = { &x, &g->labels, &y, &g->loss, &g->lse, &rows, &g->params, &poison, &g->res };
  void *args_attn[] = { &x, &y, &rows, &g->aparams, &poison, &g->res };
  void *args_attn_bw[] = { &g->ax, &x, &g->in2, &y, &rows, &g->aparams, &poison, &g->res };
  CUresult r;
  const CheckOut init = { 0, ~0ull, 0, 0, 0 };
  /* in stream order: a plain HtoD from pageable memory may land after the kernel starts */
  if ((r = g->drv.cuMemcpyHtoDAsync(g->res, &init, sizeof init, g->stream)) ||
      (r = g->drv.cuLaunchKernel(g->check, aux_grid(g), 1, 1, 256, 1, 1, 0, g->stream, g->ce ? args_ce : g->attn_bw ? args_attn_bw : g->attn ? args_attn : g->bw ? args_bw : args,
                                 NULL)) || (r = wait(g, 60.)))
    return r;
  return g->drv.cuMemcpyDtoH(co, g->res, sizeof *co);
}

static CUresult run_check(tune_Gpu *g, CheckOut *co) { return check_buffers(g, g->in, g->out, co); }

/* The op's kernel arguments over the tuner's buffers (gen_Op's order). */
void tune_gpu_args(tune_Gpu *g, tune_Args *a)
{
  memset(a, 0, sizeof *a);
  if (g->ce) {
    const CUdeviceptr b[] = { g->in, g->labels, g->out, g->loss, g->lse };
    memcpy(a->buf, b, sizeof b);
    a->params = &g->params;
  } else if (g->attn_bw) {
    a->buf[0] = g->ax, a->buf[1] = g->in, a->buf[2] = g->in2, a->buf[3] = g->out;
    a->params = &g->aparams;
  } else if (g->bw) {
    a->buf[0] = g->in, a->buf[1] = g->in2, a->buf[2] = g->out;
  } else {
    a->buf[0] = g->in, a->buf[1] = g->out;
    a->params = g->attn ? &g->aparams : NULL;
  }
  a->rows = g->p.rows;
  a->cols = g->p.cols;
  a->ws = g->ws;
}

static CUresult launch_slot(tune_Gpu *g, const Slot *s)
{
  tune_Args a;
  tune_gpu_args(g, &a);
  return tune_launch(&g->drv, s->fn, &s->launch, &a, s->resident, g->stream);
}

static int gpu_verify(void *ud, int slot, tune_Trial *t)
{
  tune_Gpu *g = ud;
  Slot *s = &g->slots[slot];
  CheckOut co;
  CUresult r;
  if ((r = fresh_input(g))) return run_failed(g, "fill", r, NULL);
  if ((r = launch_slot(g, s))) return run_failed(g, "launch", r, t);
  if ((r = wait(g, 20.))) return run_failed(g, "run", r, t);
  if ((r = run_check(g, &co))) return run_failed(g, "check", r, NULL);
  float err;
  memcpy(&err, &co.max_err, 4);
  t->max_err = err;
  if (co.bad || co.bad_sums) {
    describe_bad(g, &co, t);
    return TUNE_ECONFIG;
  }
  return TUNE_EOK;
}

/* Set element i of the output to the element at bits (in the output's dtype), in stream order. */
static CUresult poke(tune_Gpu *g, int64_t i, const void *bits)
{
  const int es = gen_dtype_size(g->p.dtype);
  CUresult r = g->drv.cuMemcpyHtoDAsync(g->out + (CUdeviceptr)(i * es), bits, (size_t)es, g->stream);
  return r ? r : wait(g, 20.);
}

/* The cross-entropy problem's buffers on the host, for the CPU check. */
typedef struct CeHost {
  void *x, *dx, *labels;
  float *loss, *lse, *weight;
  tune_CeRef o;
} CeHost;

static void ce_host_free(CeHost *h) { free(h->x), free(h->dx), free(h->labels), free(h->loss), free(h->lse), free(h->weight); }

static CUresult ce_host_read(tune_Gpu *g, CeHost *h)
{
  const size_t rows = (size_t)g->p.rows, cols = (size_t)g->p.cols;
  float scale = 1.f;
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!h->x && !((h->x = malloc(g->bytes)) && (h->dx = malloc(g->bytes)) && (h->labels = malloc(rows * 8)) &&
                 (h->loss = malloc(rows * 4)) && (h->lse = malloc(rows * 4)) && (h->weight = malloc(cols * 4))))
    return r;
  if ((r = wait(g, 20.)) || (r = g->drv.cuMemcpyDtoH(h->x, g->in, g->bytes)) || (r = g->drv.cuMemcpyDtoH(h->dx, g->out, g->bytes)) ||
      (r = g->drv.cuMemcpyDtoH(h->labels, g->labels, rows * (g->params.labels64 ? 8 : 4))) ||
      (r = g->drv.cuMemcpyDtoH(h->loss, g->loss, rows * 4)) || (r = g->drv.cuMemcpyDtoH(h->lse, g->lse, rows * 4)) ||
      (r = g->drv.cuMemcpyDtoH(h->weight, g->weight, cols * 4)) || (g->params.scale && (r = g->drv.cuMemcpyDtoH(&scale, g->scale, 4))))
    return r;
  const CeParams *p = &g->params;
  h->o = (tune_CeRef){ p->ignore, p->smoothing, p->zloss, p->softcap, scale, p->weight ? h->weight : NULL };
  return CUDA_SUCCESS;
}

/* The cross-entropy check (after a verified run) and the CPU's (tune_check_rows_ce) on the
** whole problem must agree: on the outputs as they are, then with one gradient element moved by
** 8 ulps of its dtype and 2^-12 of (itself + the row's largest gradient), then poisoned (ops
** with a gradient), with row 0's loss moved by 2^-8 (the gradient as it was), and with its lse
** moved by 2^-8 (the loss as it was). The row's largest term: an element's bound follows the
** terms it is made of (a p, the smoothing's c, the label's b), and where they cancel (a p near
** c) the element is far smaller than its bound; 2^-12 of itself then stayed inside it. */
static int selftest_ce(tune_Gpu *g, char *err, size_t errlen)
{
  const int64_t mid = g->p.cols / 2;
  const int es = gen_dtype_size(g->p.dtype), grad = g->op->writes > 0;
  uint32_t bits[2] = { 0, 0 };
  float loss0 = 0.f, lse0 = 0.f;
  double rowmax = 0.;   /* row 0's largest |gradient|, read at step 0 */
  CheckOut co;
  CeHost h = { 0 };
  CUresult r = g->drv.cuMemcpyDtoH(bits, g->out + (CUdeviceptr)(mid * es), (size_t)es);
  if (!r) r = g->drv.cuMemcpyDtoH(&loss0, g->loss, 4);
  if (!r) r = g->drv.cuMemcpyDtoH(&lse0, g->lse, 4);
  const double v = r ? 0. : tune_load(bits, g->p.dtype, 0);
  for (int k = 0; k < 5 && !r; k++) {
    if (!grad && (k == 1 || k == 2)) continue;
    /* 2^-100 too: an element whose p underflowed (v 0) may read up to 2^-126 |a| (ftz), past 8 ulps of 0 */
    if (k == 1)
      tune_store_elem(bits, g->p.dtype, 0, v + 8 * tune_ulp(v, g->p.dtype) + (fabs(v) + rowmax) * 0x1p-12 + 0x1p-100),
      r = poke(g, mid, bits);
    if (k == 2) bits[0] = tune_poison(g->p.dtype), r = poke(g, mid, bits);
    if (k == 3) {   /* the gradient as it was, the loss moved */
      const float moved = loss0 + fabsf(loss0) * 0x1p-8f + 0x1p-8f;
      tune_store_elem(bits, g->p.dtype, 0, v);
      if (!(r = poke(g, mid, bits)) && !(r = g->drv.cuMemcpyHtoDAsync(g->loss, &moved, 4, g->stream))) r = wait(g, 20.);
    }
    if (k == 4) {   /* the loss as it was, the lse moved */
      const float moved = lse0 + fabsf(lse0) * 0x1p-8f + 0x1p-8f;
      if (!(r = g->drv.cuMemcpyHtoDAsync(g->loss, &loss0, 4, g->stream)) && !(r = g->drv.cuMemcpyHtoDAsync(g->lse, &moved, 4, g->stream)))
        r = wait(g, 20.);
    }
    if (!r) r = run_check(g, &co);
    if (!r) r = ce_host_read(g, &h);
    if (r) break;
    tune_Check cpu = { .first_bad = -1 };
    tune_check_rows_ce(h.x, h.labels, g->params.labels64, grad ? h.dx : NULL, h.loss, h.lse, g->p.dtype, g->p.cols, 0, g->p.rows,
                       &h.o, tune_poison(g->p.dtype), &cpu);
    for (int64_t j = 0; k == 0 && grad && j < g->p.cols; j++) rowmax = fmax(rowmax, fabs(tune_load(h.dx, g->p.dtype, j)));
    const uint64_t want = k == 1 || k == 2, want_rows = k >= 3;
    if (co.bad != want || co.bad_sums != want_rows || (uint64_t)cpu.bad != want || (uint64_t)cpu.bad_sums != want_rows) {
      snprintf(err, errlen, "step %d: the GPU check found %llu bad elements and %llu bad rows, the CPU %lld and %lld; want %llu"
               " and %llu", k, (unsigned long long)co.bad, (unsigned long long)co.bad_sums, (long long)cpu.bad,
               (long long)cpu.bad_sums, (unsigned long long)want, (unsigned long long)want_rows);
      ce_host_free(&h);
      return 1;
    }
  }
  ce_host_free(&h);
  return r ? (cu_msg(g, "selftest", r, err, errlen), 1) : 0;
}

/* attention_softmax's inputs on the host for the CPU rule: the scores and output, and the key
** lengths, slopes and bias tensor as the GPU drew them (read back, not recomputed). */
typedef struct AttnHost {
  void *x, *y;
  int *lengths;
  float *slopes, *bias;
  tune_AttnRef o;
} AttnHost;

static void attn_host_free(AttnHost *h) { free(h->x), free(h->y), free(h->lengths), free(h->slopes), free(h->bias); }

static CUresult attn_host_read(tune_Gpu *g, AttnHost *h)
{
  const size_t heads = (size_t)g->aparams.h, batches = (size_t)(g->p.rows / g->aparams.q) / heads;
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  const size_t nbias = g->tbias ? 4 * (size_t)(g->aparams.q * g->p.cols) : 0;
  if (!h->x && !((h->x = malloc(g->bytes)) && (h->y = malloc(g->bytes)) && (h->lengths = malloc(4 * batches)) &&
                 (h->slopes = malloc(4 * heads)) && (h->bias = malloc(nbias ? nbias : 4))))
    return r;
  if ((r = wait(g, 20.)) || (r = g->drv.cuMemcpyDtoH(h->x, g->in, g->bytes)) || (r = g->drv.cuMemcpyDtoH(h->y, g->out, g->bytes)) ||
      (r = g->drv.cuMemcpyDtoH(h->lengths, g->lengths, 4 * batches)) || (r = g->drv.cuMemcpyDtoH(h->slopes, g->slopes, 4 * heads)) ||
      (nbias && (r = g->drv.cuMemcpyDtoH(h->bias, g->tbias, nbias))))
    return r;
  h->o = (tune_AttnRef){ g->aparams, g->p.mask, h->lengths, g->aparams.slopes ? h->slopes : NULL, nbias ? h->bias : NULL };
  return CUDA_SUCCESS;
}

/* Whether row r's visible scores before any softcap and bias, scale x, are all within 64: the
** fill's ordinary rows. In its rows of |x| ~ 1000 and 1e4 a float32 score may carry 2^-11 of
** absolute error (an inexact scale, a bias), and the rule rightly lets 2^-12 of an output pass. */
static int ordinary_row(tune_Gpu *g, const AttnHost *h, int64_t r, long long lo, long long hi)
{
  for (long long c = lo; c < hi; c++)
    if (!(fabs(g->aparams.scale * tune_load(h->x, g->p.dtype, r * g->p.cols + c)) <= 64.)) return 0;
  return 1;
}

/* An element of the output that a row's mask hides ({-1, -1} when none is), and one it shows: the
** middle of the first ordinary row that sees keys, else of the first that does. */
static void attn_elements(tune_Gpu *g, const AttnHost *h, int64_t hidden[2], int64_t shown[2])
{
  long long lo, hi;
  int64_t first[2] = { -1, -1 };
  hidden[0] = hidden[1] = shown[0] = shown[1] = -1;
  for (int64_t r = 0; r < g->p.rows && (hidden[0] < 0 || shown[0] < 0); r++) {
    am_range(g->p.mask, &g->aparams, h->lengths, g->p.cols, r, &lo, &hi);
    if (hidden[0] < 0 && (lo > 0 || hi < g->p.cols)) hidden[0] = r, hidden[1] = hi < g->p.cols ? hi : lo - 1;
    if (first[0] < 0 && hi > lo) first[0] = r, first[1] = (lo + hi) / 2;
    if (shown[0] < 0 && hi > lo && ordinary_row(g, h, r, lo, hi)) shown[0] = r, shown[1] = (lo + hi) / 2;
  }
  if (shown[0] < 0) shown[0] = first[0], shown[1] = first[1];
}

/* attention_softmax's check (after a verified run) and the CPU's (tune_check_rows_attn) on the
** whole problem must agree: on the outputs as they are, then with one visible element moved by 8
** ulps of its dtype and 2^-12 of itself, then poisoned, then with it restored and a masked one set
** to the smallest positive value of the dtype. */
static int selftest_attn(tune_Gpu *g, char *err, size_t errlen)
{
  const int es = gen_dtype_size(g->p.dtype);
  int64_t hidden[2], shown[2];
  uint32_t bits[2] = { 0, 0 }, tiny = 1;
  AttnHost h = { 0 };
  CheckOut co;
  CUresult r = attn_host_read(g, &h);
  if (!r) attn_elements(g, &h, hidden, shown);
  const int64_t at = r ? 0 : shown[0] * g->p.cols + shown[1];
  const double v = r ? 0. : tune_load(h.y, g->p.dtype, at);
  for (int k = 0; k < 4 && !r; k++) {
    if (k == 1) tune_store_elem(bits, g->p.dtype, 0, v + 8 * tune_ulp(v, g->p.dtype) + fabs(v) * 0x1p-12 + 0x1p-100), r = poke(g, at, bits);
    if (k == 2) bits[0] = tune_poison(g->p.dtype), r = poke(g, at, bits);
    if (k == 3) {
      if (hidden[0] < 0) break;   /* mask none: nothing hidden */
      tune_store_elem(bits, g->p.dtype, 0, v);
      if (!(r = poke(g, at, bits))) r = poke(g, hidden[0] * g->p.cols + hidden[1], &tiny);
    }
    if (!r) r = run_check(g, &co);
    if (!r) r = attn_host_read(g, &h);
    if (r) break;
    tune_Check cpu = { .first_bad = -1 };
    tune_check_rows_attn(h.x, h.y, g->p.dtype, g->p.cols, 0, g->p.rows, &h.o, tune_poison(g->p.dtype), &cpu);
    const uint64_t want = k > 0;
    if (co.bad != want || (uint64_t)cpu.bad != want) {
      snprintf(err, errlen, "step %d: the GPU check found %llu bad elements, the CPU %lld; want %llu (%d bytes an element)", k,
               (unsigned long long)co.bad, (long long)cpu.bad, (unsigned long long)want, es);
      attn_host_free(&h);
      return 1;
    }
  }
  attn_host_free(&h);
  return r ? (cu_msg(g, "selftest", r, err, errlen), 1) : 0;
}

/* attention_softmax_backward's inputs on the host: y, dx, key lengths (AttnHost's x, y: in and
** out), and the scores and dy. */
typedef struct AttnBwHost {
  AttnHost a;
  void *x, *dy;
} AttnBwHost;

static void attn_bw_host_free(AttnBwHost *h) { attn_host_free(&h->a), free(h->x), free(h->dy); }

static CUresult attn_bw_host_read(tune_Gpu *g, AttnBwHost *h)
{
  CUresult r = attn_host_read(g, &h->a);
  if (!r && !h->x && !((h->x = malloc(g->bytes)) && (h->dy = malloc(g->bytes)))) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) r = g->drv.cuMemcpyDtoH(h->x, g->ax, g->bytes);
  if (!r) r = g->drv.cuMemcpyDtoH(h->dy, g->in2, g->bytes);
  return r;
}

/* The visible element of an ordinary row whose dx is largest in magnitude (its bound is the
** narrowest relative to it), else `shown`'s: a row that sees one key has dx 0 throughout, which
** no planted move can leave within its bound. -1 if no row sees anything. */
static int64_t attn_bw_shown(tune_Gpu *g, const AttnBwHost *h, const int64_t shown[2])
{
  long long lo, hi;
  int64_t at = shown[0] < 0 ? -1 : shown[0] * g->p.cols + shown[1];
  double big = 0.;
  for (int64_t r = 0; r < g->p.rows; r++) {
    am_range(g->p.mask, &g->aparams, h->a.lengths, g->p.cols, r, &lo, &hi);
    if (hi - lo < 2 || !ordinary_row(g, &h->a, r, lo, hi)) continue;
    for (long long c = lo; c < hi; c++) {
      const double v = fabs(tune_load(h->a.y, g->p.dtype, r * g->p.cols + c));
      if (v > big) big = v, at = r * g->p.cols + c;
    }
  }
  return at;
}

/* Step k (1..3) of an attention selftest on output element `at` of value v: 1 moved to `moved`,
** 2 poisoned, 3 restored and the masked element `hidden` (row, col) set to the dtype's smallest
** positive value; 1 when step 3 finds no masked element, else 0 with *r the pokes' result. */
static int spoil(tune_Gpu *g, int k, int64_t at, double v, double moved, const int64_t hidden[2], CUresult *r)
{
  uint32_t bits[2] = { 0, 0 }, tiny = 1;
  if (k == 3 && hidden[0] < 0) return 1;
  if (k == 2) bits[0] = tune_poison(g->p.dtype);
  else tune_store_elem(bits, g->p.dtype, 0, k == 1 ? moved : v);
  *r = poke(g, at, bits);
  if (k == 3 && !*r) *r = poke(g, hidden[0] * g->p.cols + hidden[1], &tiny);
  return 0;
}

/* attention_softmax_backward's check (after a verified run) and the CPU's
** (tune_check_rows_attn_bw) on the whole problem must agree: on dx as it is, then with one
** visible element moved by a quarter of itself and of its dy and 8 ulps of its dtype, then
** poisoned, then with it restored and a masked one set to the smallest positive value of the
** dtype. */
static int selftest_attn_bw(tune_Gpu *g, char *err, size_t errlen)
{
  int64_t hidden[2], shown[2], at = -1;
  AttnBwHost h = { 0 };
  CheckOut co;
  CUresult r = attn_bw_host_read(g, &h);
  if (!r) attn_elements(g, &h.a, hidden, shown), at = attn_bw_shown(g, &h, shown);
  const double v = at < 0 ? 0. : tune_load(h.a.y, g->p.dtype, at);
  /* a quarter of dy too: a one-key row's dx is 0, its bound a few ulps of dy (under a softcap) */
  const double dy = at < 0 ? 0. : tune_load(h.dy, g->p.dtype, at);
  const double moved = v + fabs(v) * 0.25 + 8 * tune_ulp(v, g->p.dtype) + fabs(dy) * 0.25;
  for (int k = 0; k < 4 && !r; k++) {
    /* nothing visible to move, or (mask none) nothing hidden */
    if (k > 0 && (at < 0 || spoil(g, k, at, v, moved, hidden, &r))) break;
    if (!r) r = run_check(g, &co);
    if (!r) r = attn_bw_host_read(g, &h);
    if (r) break;
    tune_Check cpu = { .first_bad = -1 };
    tune_check_rows_attn_bw(h.x, h.a.x, h.dy, h.a.y, g->p.dtype, g->p.cols, 0, g->p.rows, &h.a.o, tune_poison(g->p.dtype), &cpu);
    const uint64_t want = k > 0;
    if (co.bad != want || (uint64_t)cpu.bad != want) {
      snprintf(err, errlen, "step %d: the GPU check found %llu bad elements, the CPU %lld; want %llu", k, (unsigned long long)co.bad,
               (long long)cpu.bad, (unsigned long long)want);
      attn_bw_host_free(&h);
      return 1;
    }
  }
  attn_bw_host_free(&h);
  return r ? (cu_msg(g, "selftest", r, err, errlen), 1) : 0;
}

/* The GPU check against the CPU reference on the whole (small) problem, before and after one
** element of the output is moved by 8 ulps of its dtype and 2^-12 of itself (past any float32
** error bound), then set to the poison. */
int tune_gpu_selftest(tune_Gpu *g, int slot, char *err, size_t errlen)
{
  const size_t n = g->bytes;
  const int64_t mid = g->p.cols / 2;   /* in row 0: never one of fill's special rows */
  void *x = malloc(n), *y = malloc(n), *dy = malloc(n);
  tune_Trial t;
  CheckOut co[3];
  tune_Check cpu[3];
  double v = 0;
  int rc = 1;
  memset(cpu, 0, sizeof cpu);
  memset(&t, 0, sizeof t);
  if (!x || !y || !dy) snprintf(err, errlen, "out of memory");
  else if (gpu_verify(g, slot, &t)) snprintf(err, errlen, "verify: %s", t.reason);
  else if (g->ce) rc = selftest_ce(g, err, errlen);
  else if (g->attn_bw) rc = selftest_attn_bw(g, err, errlen);
  else if (g->attn) rc = selftest_attn(g, err, errlen);
  else {
    for (int k = 0; k < 3; k++) {
      CUresult r = CUDA_SUCCESS;
      if (k == 1) {   /* y holds the output read back at step 0 */
        v = tune_load(y, g->p.dtype, mid);
        uint32_t bits[2];
        /* a backward output's bound is relative to dy - sum, not to itself: moved by a quarter */
        tune_store_elem(bits, g->p.dtype, 0, v + 8 * tune_ulp(v, g->p.dtype) + fabs(v) * (g->bw ? 0.25 : 0x1p-12));
        r = poke(g, mid, bits);
      } else if (k == 2) {
        const uint32_t p = tune_poison(g->p.dtype);
        r = poke(g, mid, &p);
      }
      if (!r) r = run_check(g, &co[k]);
      if (!r) r = g->drv.cuMemcpyDtoH(x, g->in, n);
      if (!r) r = g->drv.cuMemcpyDtoH(y, g->out, n);
      if (!r && g->bw) r = g->drv.cuMemcpyDtoH(dy, g->in2, n);
      if (r) {
        cu_msg(g, "selftest", r, err, errlen);
        break;
      }
      cpu[k].first_bad = -1;
      if (g->bw) tune_check_rows_bw(x, dy, y, g->p.dtype, g->p.op, g->p.cols, 0, g->p.rows, tune_poison(g->p.dtype), &cpu[k]);
      else tune_check_rows(x, y, g->p.dtype, g->p.op, g->p.cols, 0, g->p.rows, tune_poison(g->p.dtype), &cpu[k]);
      const uint64_t want = k == 0 ? 0 : 1;
      if (co[k].bad != want || (uint64_t)cpu[k].bad != want || co[k].bad_sums != (uint64_t)cpu[k].bad_sums) {
        snprintf(err, errlen, "step %d: GPU check says %llu bad (%llu sums), CPU says %lld bad (%lld sums), want %llu;"
                 " element %lld was %.6g, now reads %.6g", k, (unsigned long long)co[k].bad,
                 (unsigned long long)co[k].bad_sums, (long long)cpu[k].bad, (long long)cpu[k].bad_sums,
                 (unsigned long long)want, (long long)mid, v, tune_load(y, g->p.dtype, mid));
        break;
      }
      if (k == 2) rc = 0;
    }
  }
  free(x);
  free(y);
  free(dy);
  return rc;
}

/* n launches of go(g, arg), each timed alone by events with L2 flushed before it. */
static CUresult timed_runs(tune_Gpu *g, CUresult (*go)(tune_Gpu *, void *), void *arg, int n, double *us)
{
  tune_Driver *d = &g->drv;
  for (int done = 0; done < n;) {
    const int m = n - done < MAX_REPS ? n - done : MAX_REPS;
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < m && !r; i++) {
      r = d->cuMemsetD32Async(g->flush, (unsigned)i, FLUSH_BYTES / 4, g->stream);
      if (!r) r = d->cuEventRecord(g->ev[2 * i], g->stream);
      if (!r) r = go(g, arg);
      if (!r) r = d->cuEventRecord(g->ev[2 * i + 1], g->stream);
    }
    if (!r) r = wait(g, 60.);
    for (int i = 0; i < m && !r; i++) {
      float ms;
      r = d->cuEventElapsedTime(&ms, g->ev[2 * i], g->ev[2 * i + 1]);
      us[done + i] = ms * 1e3;
    }
    if (r) return r;
    done += m;
  }
  return CUDA_SUCCESS;
}

/* n launches of go(g, arg), each timed alone by events with L2 flushed before it; under a key
** padding mask by the lengths the tuner times by, with tensors drawn for them (no NaN where they
** see: a NaN row does more work), set once until fresh_input sets verification's again. */
static CUresult timed(tune_Gpu *g, CUresult (*go)(tune_Gpu *, void *), void *arg, int n, double *us)
{
  CUresult r = CUDA_SUCCESS;
  if (g->attn && (g->p.mask & GEN_MASK_PADDING) && !g->timing_set) {
    r = attn_lengths(g, 1);
    if (!r) r = fill_tensors(g, next_seed(g));
    g->timing_set = !r;
  }
  return r ? r : timed_runs(g, go, arg, n, us);
}

/* The floor (gen_Op): a copy of the tensor; for the backward ops out = in + in2 (two reads, a
** write); for the loss-only op a read of the tensor and a float a row written. */
static CUresult go_copy(tune_Gpu *g, void *arg)
{
  (void)arg;
  long long n = g->p.rows * g->p.cols, rows = g->p.rows;
  const long long nv = n * gen_dtype_size(g->p.dtype) / 16;
  if (g->op->floor == GEN_FLOOR_COPY) return g->drv.cuMemcpyDtoDAsync(g->out, g->in, g->bytes, g->stream);
  if (g->op->floor == GEN_FLOOR_MASKED || g->op->floor == GEN_FLOOR_MASKED_BW) {
    void *args[] = { &g->in, &g->out, &rows, &g->aparams }, *args_bw[] = { &g->ax, &g->in, &g->in2, &g->out, &rows, &g->aparams };
    /* a block a part of 16 KB of a row (attn_aux.cu's FSPAN), up to 2^24 blocks that loop over the rest */
    const long long parts = rows * ((g->p.cols * gen_dtype_size(g->p.dtype) + 16383) / 16384);
    return g->drv.cuLaunchKernel(g->floor, (unsigned)(parts < (1ll << 24) ? parts : 1ll << 24), 1, 1, 256, 1, 1, 0, g->stream,
                                 g->attn_bw ? args_bw : args, NULL);
  }
  if (g->op->floor == GEN_FLOOR_READ) {
    long long n16 = nv;
    void *args[] = { &g->in, &g->loss, &rows, &n16 };
    return g->drv.cuLaunchKernel(g->floor, aux_grid(g), 1, 1, 256, 1, 1, 0, g->stream, args, NULL);
  }
  void *args[] = { &g->in, &g->in2, &g->out, &n };
  return g->drv.cuLaunchKernel(g->floor, (unsigned)(nv / 1024 + 1), 1, 1, 256, 1, 1, 0, g->stream, args, NULL);
}

static CUresult go_slot(tune_Gpu *g, void *arg)
{
  return launch_slot(g, arg);
}

static int gpu_time(void *ud, int slot, int n, double *us, char *err, size_t errlen)
{
  tune_Gpu *g = ud;
  CUresult r = slot < 0 ? timed(g, go_copy, NULL, n, us) : timed(g, go_slot, &g->slots[slot], n, us);
  if (!r) return TUNE_EOK;
  tune_Trial t;
  snprintf(t.config, sizeof t.config, "%s", slot < 0 ? "copy" : "timing");
  int rc = run_failed(g, "timing", r, &t);
  snprintf(err, errlen, "%s", rc == TUNE_EFATAL ? g->err : t.reason);
  return slot < 0 ? TUNE_EFATAL : rc;
}

/* ---- for the bench command and the runtime tests ---- */

void tune_gpu_buffers(tune_Gpu *g, CUdeviceptr *in, CUdeviceptr *out, CUstream *s)
{
  *in = g->in, *out = g->out, *s = g->stream;
}

CUdeviceptr tune_gpu_in2(tune_Gpu *g)
{
  return g->in2;
}

CUdeviceptr tune_gpu_attn_x(tune_Gpu *g)
{
  return g->ax;
}

void tune_ce_defaults(tune_CeOptions *o)
{
  memset(o, 0, sizeof *o);
  o->ignore = -100;
  o->labels64 = 1;
}

int tune_ce_check(const tune_CeOptions *o, char *err, size_t errlen)
{
  const struct { const char *name; float v; } f[] = { { "label smoothing", o->smoothing }, { "z-loss", o->zloss },
                                                      { "softcap", o->softcap } };
  for (size_t i = 0; i < sizeof f / sizeof *f; i++)
    if (!isfinite(f[i].v) || f[i].v < 0.f)
      return snprintf(err, errlen, "bad %s %g: expected a finite number >= 0", f[i].name, f[i].v), 2;
  if (o->smoothing > 1.f) return snprintf(err, errlen, "bad label smoothing %g: expected 0 to 1", o->smoothing), 2;
  if (o->smoothing > 0.f && o->weight)
    return snprintf(err, errlen, "label smoothing %g with class weights is not supported (as the library refuses it)", o->smoothing), 2;
  return 0;
}

void tune_gpu_attn_options(tune_Gpu *g, const tune_AttnOptions *o)
{
  g->aopt = *o;
}

void tune_gpu_ce_options(tune_Gpu *g, const tune_CeOptions *o)
{
  g->params.ignore = o->ignore;
  g->params.smoothing = o->smoothing;
  g->params.zloss = o->zloss;
  g->params.softcap = g->softcap = o->softcap;
  g->params.labels64 = o->labels64;
  g->use_weight = o->weight;
  if (g->ready) g->params.weight = o->weight ? g->weight : 0;
}

int tune_gpu_ce_scale(tune_Gpu *g, float scale, char *err, size_t errlen)
{
  CUresult r = g->drv.cuMemcpyHtoDAsync(g->scale, &scale, 4, g->stream);
  if (!r) r = wait(g, 20.);
  g->params.scale = g->scale;
  return r ? (cu_msg(g, "scale", r, err, errlen), 1) : 0;
}

int tune_gpu_ce_labels(tune_Gpu *g, const int64_t *labels, char *err, size_t errlen)
{
  const int64_t rows = g->p.rows;
  free(g->own_labels);
  g->own_labels = NULL;
  if (!labels) return 0;
  if (!(g->own_labels = malloc((size_t)rows * 8))) return snprintf(err, errlen, "out of memory"), 1;
  for (int64_t i = 0; i < rows; i++)
    if (g->params.labels64) ((int64_t *)g->own_labels)[i] = labels[i];
    else ((int *)g->own_labels)[i] = (int)labels[i];
  return 0;
}

int tune_gpu_ce_flag(tune_Gpu *g, int *flag, char *err, size_t errlen)
{
  CUresult r = wait(g, 20.);
  if (!r) r = g->drv.cuMemcpyDtoH(flag, g->flag, 4);
  if (!r) r = g->drv.cuMemsetD32Async(g->flag, 0, 1, g->stream);
  if (!r) r = wait(g, 20.);
  return r ? (cu_msg(g, "flag", r, err, errlen), 1) : 0;
}

const tune_Driver *tune_gpu_driver(const tune_Gpu *g)
{
  return &g->drv;
}

int tune_gpu_fill(tune_Gpu *g, char *err, size_t errlen)
{
  CUresult r = fresh_input(g);
  if (!r) r = wait(g, 20.);
  return r ? (cu_msg(g, "fill", r, err, errlen), 1) : 0;
}

int tune_gpu_check(tune_Gpu *g, CUdeviceptr x, CUdeviceptr y, tune_Check *c, char *err, size_t errlen)
{
  CheckOut co;
  float e, dev;
  CUresult r = wait(g, 20.);
  if (!r) r = check_buffers(g, x, y, &co);
  if (r) return cu_msg(g, "check", r, err, errlen), 1;
  memcpy(&e, &co.max_err, 4);
  memcpy(&dev, &co.max_sumdev, 4);
  c->checked = g->p.rows * g->p.cols;
  c->bad = (int64_t)co.bad;
  c->bad_sums = (int64_t)co.bad_sums;
  c->first_bad = co.bad ? (int64_t)co.first_bad : -1;
  c->max_err = e;
  c->max_sumdev = dev;
  return 0;
}

typedef struct Call { tune_Call fn; void *ud; } Call;

static CUresult go_call(tune_Gpu *g, void *arg)
{
  const Call *c = arg;
  return c->fn(c->ud, g->in, g->out, g->stream);
}

int tune_gpu_time_call(tune_Gpu *g, tune_Call fn, void *ud, int n, double *us, char *err, size_t errlen)
{
  Call c = { fn, ud };
  CUresult r = fn ? timed(g, go_call, &c, n, us) : timed(g, go_copy, NULL, n, us);
  return r ? (cu_msg(g, "timing", r, err, errlen), 1) : 0;
}

static void gpu_unload(void *ud, int slot)
{
  tune_Gpu *g = ud;
  unload_slot(g, &g->slots[slot]);
  g->slots[slot].cubin = NULL;
}

static int gpu_compile(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen)
{
  tune_Gpu *g = ud;
  if (g->ptx_arch) return gen_compile_ptx(k->source, "softmax.cu", g->ptx_arch, c, err, errlen);
  return cache_compile(g->cubins, k->source, "softmax.cu", g->dev.arch, c, err, errlen);
}

tune_Backend tune_gpu_backend(tune_Gpu *g)
{
  tune_Backend b = { g, gpu_compile, gpu_load, gpu_verify, gpu_time, gpu_unload };
  return b;
}

void tune_gpu_close(tune_Gpu *g)
{
  if (!g) return;
  teardown(g);
  tune_green_close(&g->green);
  gen_cubin_free(&g->aux);
  free(g->own_labels);
  free(g->slots);
  tune_driver_unload(&g->drv);
  free(g);
}
