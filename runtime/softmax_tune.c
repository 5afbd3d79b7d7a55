/*
** softmax_tune.c — the runtime library (include/softmax_tune.h), a dispatcher: a call's width
** picks its width class (gen_width_class), an in-memory table maps (dtype, op, kinds, alignment,
** class) to a loaded function, and the call launches it with its own rows and cols. Only a
** class met for the first time goes further: the cache (SQLite), then the untuned rule or the
** tuner, and NVRTC, once per class.
*/
#include "softmax_tune.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "background.h"
#include "cache.h"
#include "cudrv.h"
#include "gen.h"
#include "kset.h"
#include "reverify.h"
#include "tune.h"
#include "attn_mask.h"   /* after tune.h: AttnParams */
#include "untuned.h"
#include "vocab.h"

typedef struct Memo {
  int used, dtype, op, unaligned;
  int64_t hi;               /* the width class, by its widest width: the key with the above */
  int band;                 /* the row band (kset_band): the key's last part */
  int64_t rows, cols;       /* the problem the class was first resolved for */
  CUmodule mod;
  CUfunction fn;
  CUfunction count;         /* cross-entropy: st_ce_count, the mean's factor (the dtype's Steps) */
  CUfunction reduce;        /* cross-entropy: st_ce_reduce, the reduced loss */
  CUfunction scale;         /* cross-entropy: st_ce_scale, the gradient times grad_output */
  gen_Launch launch;
  int resident;             /* blocks resident at once, for cooperative grids */
  char config[256];
  int untuned;              /* n: the n-th problem served untuned (st_untuned, or st_untuned_attention's list); 0: tuned */
  AttnParams attn;          /* attention: the launch options of the problem the class was first resolved for */
  bg_Job *job;              /* the class's own kernel, compiling in the background while a stand-in runs */
  CUmodule stand_in;        /* the stand-in's module once replaced, kept: a launch of it may be in flight */
} Memo;

/* The cross-entropy steps of a dtype (templates/ce_steps.cu): one module whatever the class. */
typedef struct Steps {
  CUmodule mod;
  CUfunction count, reduce, scale;
  CUfunction vp[VOCAB_NSTEPS];   /* vocab-parallel's (ce_vocab.cu); NULL in a kernel set built before them */
} Steps;

/* A zeroed workspace for cooperative kernels, one per stream: kernels on one stream run in
** order, so they can share it; kernels on two streams may run at once, so they cannot. */
typedef struct Workspace {
  CUstream stream;
  CUdeviceptr ptr;
  size_t size;
  CUdeviceptr scratch;      /* 256 bytes, zeroed, for small results passed between kernels: float 0 the
                            ** gradient's factor, float 1 the predicted grad_output (0: 1; pred_at) */
} Workspace;

struct st_ctx {
  tune_Driver drv;
  tune_Device dev;
  CUcontext cu;
  gen_State *gen;
  cache_Db *db;             /* NULL until a cache file exists */
  char path[4096];
  cache_Key base;           /* the key's GPU, driver, NVRTC and templates fields */
  st_miss miss;
  int no_pdl;               /* SOFTMAX_TUNE_NO_PDL set: no programmatic dependent launch */
  int stale_said;           /* the default table's staleness was said */
  void (*log)(void *, const char *);
  void *log_ud;
  pthread_mutex_t mu;       /* guards memo, gen, db */
  Memo *memo;
  int cap, n;
  Workspace *ws;            /* guarded by mu too */
  int nws;
  int nuntuned, nuntuned_attn;   /* memo entries with untuned set (the attention ops' counted apart), guarded by mu */
  st_stats stats;           /* guarded by mu */
  Steps steps[GEN_NDTYPE];  /* the cross-entropy steps of each dtype, loaded once (guarded by mu) */
  const kset_Record *set;   /* the kernel set (kset_get): its records, of arch set_arch used (NULL: none) */
  int nset, set_arch;
  const unsigned char *set_base;
  bg_Worker *bg;            /* compiles kernels off the call path (background.h); NULL until a stand-in runs */
};

static _Thread_local char last_error[1024];

static st_status fail(st_status s, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return s;
}

static void say(st_ctx *c, const char *fmt, ...)
{
  char msg[2048];
  va_list ap;
  if (!c->log) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  c->log(c->log_ud, msg);
}

const char *st_error(const st_ctx *ctx)
{
  (void)ctx;
  return last_error;
}

const char *st_version(void)
{
  return "0.6.0";   /* 0.6: st_wait, the kernel set's stand-ins */
}

/* Whether environment variable name is set to something other than "" or "0". */
static int env_set(const char *name)
{
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

static st_miss miss_policy(const st_options *o)
{
  const char *env = getenv("SOFTMAX_TUNE_MISS");
  if (o && o->miss != ST_MISS_DEFAULT) return o->miss;
  if (env && strcmp(env, "error") == 0) return ST_MISS_ERROR;
  if (env && strcmp(env, "tune") == 0) return ST_MISS_TUNE;
  return ST_MISS_HEURISTIC;
}

/* Open the cache if its file exists (or make it, when create); a missing file is no error. */
static st_status open_cache(st_ctx *c, int create)
{
  char err[1024];
  if (c->db) return ST_OK;
  int rc = cache_open(&c->db, c->path, create, err, sizeof err);
  if (rc == CACHE_MISS) return ST_OK;
  return rc ? fail(ST_ECACHE, "%s", err) : ST_OK;
}

/* The kernel set's records for this GPU (an arch of the set its cubins run on), when there is a
** set (kset_get) and it is of these templates. */
static void open_set(st_ctx *c)
{
  const kset_Set *k = kset_get(NULL);
  c->set_arch = k ? kset_arch_for(k->r, (int)k->h->count, c->dev.arch) : 0;
  if (!c->set_arch || strncmp(k->h->templates, c->base.templates, sizeof k->h->templates)) return;
  c->set = k->r, c->nset = (int)k->h->count, c->set_base = k->base;
}

st_status st_open(st_ctx **ctx, int device, const char *cache_path)
{
  return st_open_ex(ctx, device, cache_path, NULL);
}

st_status st_open_ex(st_ctx **ctx, int device, const char *path, const st_options *o)
{
  char err[1024];
  st_ctx *c;
  CUresult r;
  gen_Problem p = { 0 };
  st_status s = ST_OK;
  if (!ctx) return fail(ST_EINVAL, "st_open: ctx is NULL");
  *ctx = NULL;
  if (o && (o->miss < ST_MISS_DEFAULT || o->miss > ST_MISS_ERROR)) return fail(ST_EINVAL, "st_open: bad miss policy %d", o->miss);
  if (!(c = calloc(1, sizeof *c))) return fail(ST_ENOMEM, "st_open: out of memory");
  pthread_mutex_init(&c->mu, NULL);
  c->miss = miss_policy(o);
  c->no_pdl = env_set("SOFTMAX_TUNE_NO_PDL");
  c->log = o ? o->log : NULL;
  c->log_ud = o ? o->log_ud : NULL;
  if (tune_driver_load(&c->drv, err, sizeof err) || tune_device(&c->drv, device, &c->dev, err, sizeof err))
    s = fail(ST_ENODEV, "%s", err);
  else if ((r = c->drv.cuDevicePrimaryCtxRetain(&c->cu, c->dev.dev)) != CUDA_SUCCESS)
    s = fail(ST_ECUDA, "cannot get the primary context of GPU %d: %s", device, tune_cu_error(&c->drv, r, err, sizeof err));
  else if (cache_path(path, 0, c->path, sizeof c->path, err, sizeof err))
    s = fail(ST_ECACHE, "%s", err);
  else if (gen_open(&c->gen, NULL, err, sizeof err) || tune_key(c->gen, &c->dev, &p, &c->base, err, sizeof err))
    s = fail(ST_ECOMPILE, "%s", err);
  else
    s = open_cache(c, c->miss == ST_MISS_TUNE);
  if (s == ST_OK) open_set(c);
  if (s != ST_OK) {
    st_close(c);
    return s;
  }
  *ctx = c;
  return ST_OK;
}

void st_close(st_ctx *c)
{
  if (!c) return;
  bg_stop(c->bg);   /* before the jobs are freed: the one in hand is finished first */
  for (int i = 0; i < c->cap; i++) bg_job_free(c->memo[i].job);
  if (c->cu) {
    c->drv.cuCtxPushCurrent(c->cu);
    for (int i = 0; i < c->cap; i++) {
      if (c->memo[i].used && c->memo[i].mod) c->drv.cuModuleUnload(c->memo[i].mod);
      if (c->memo[i].stand_in) c->drv.cuModuleUnload(c->memo[i].stand_in);
    }
    for (int i = 0; i < GEN_NDTYPE; i++)
      if (c->steps[i].mod) c->drv.cuModuleUnload(c->steps[i].mod);
    c->drv.cuCtxPopCurrent(NULL);
    c->drv.cuDevicePrimaryCtxRelease(c->dev.dev);
  }
  for (int i = 0; c->cu && i < c->nws; i++) c->drv.cuMemFree(c->ws[i].ptr), c->drv.cuMemFree(c->ws[i].scratch);
  free(c->ws);
  free(c->memo);
  cache_close(c->db);
  gen_close(c->gen);
  if (c->drv.lib) tune_driver_unload(&c->drv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* ---- the memo: open addressing over (dtype, op, unaligned, width class) ---- */

static uint64_t hash(int dtype, int op, int unaligned, int64_t hi, int band)
{
  uint64_t h = (uint64_t)hi * 0xc2b2ae3d27d4eb4full;
  h ^= (uint64_t)(((op * 4 + dtype) * 2 + unaligned) * 4 + band) * 0x165667b19e3779f9ull;
  return h ^ h >> 29;
}

static Memo *find(st_ctx *c, int dtype, int op, int unaligned, int64_t hi, int band)
{
  if (!c->cap) return NULL;
  for (uint64_t i = hash(dtype, op, unaligned, hi, band);; i++) {
    Memo *m = &c->memo[i & (uint64_t)(c->cap - 1)];
    if (!m->used) return m;
    if (m->hi == hi && m->band == band && m->dtype == dtype && m->op == op && m->unaligned == unaligned) return m;
  }
}

/* A free slot for a new entry, growing the table to stay at most half full. */
static Memo *slot_for(st_ctx *c, int dtype, int op, int unaligned, int64_t hi, int band)
{
  if (2 * (c->n + 1) > c->cap) {
    int cap = c->cap ? 2 * c->cap : 64;
    Memo *old = c->memo, *neu = calloc((size_t)cap, sizeof *neu);
    if (!neu) return NULL;
    int oldcap = c->cap;
    c->memo = neu;
    c->cap = cap;
    for (int i = 0; i < oldcap; i++)
      if (old[i].used) *find(c, old[i].dtype, old[i].op, old[i].unaligned, old[i].hi, old[i].band) = old[i];
    free(old);
  }
  return find(c, dtype, op, unaligned, hi, band);
}

/* ---- resolving a problem to a loaded function ---- */

static st_status steps(st_ctx *c, int dtype, Steps *out);

static st_status load(st_ctx *c, Memo *m, const void *cubin, const char *name, const gen_Launch *l, const char *config)
{
  char err[512];
  Steps st = { 0 };
  if (gen_op(m->op % GEN_NOP)->params == 1) {   /* cross-entropy: the dtype's steps too */
    st_status s = steps(c, m->dtype, &st);
    if (s) return s;
    m->count = st.count, m->reduce = st.reduce, m->scale = st.scale;
  }
  c->stats.loads++;
  CUresult r = c->drv.cuModuleLoadData(&m->mod, cubin);
  if (!r) r = c->drv.cuModuleGetFunction(&m->fn, m->mod, name);
  if (!r) r = tune_func_setup(&c->drv, m->fn, l);
  if (!r && l->coop) r = tune_resident(&c->drv, m->fn, l, c->dev.sms, &m->resident);   /* grid cap */
  if (!r && l->coop && m->resident < l->blocks_per_row) r = CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  if (r) {
    if (m->mod) c->drv.cuModuleUnload(m->mod);
    m->mod = NULL;
    return fail(ST_ECUDA, "loading the kernel of %s: %s", config, tune_cu_error(&c->drv, r, err, sizeof err));
  }
  m->launch = *l;
  snprintf(m->config, sizeof m->config, "%s", config);
  return ST_OK;
}

/* Whether kernel `name` is p's: a softcap's kernel is a source of its own (ce.cu, attn.cu, attn_bw.cu). */
static int variant_of(const gen_Problem *p, const char *name) { return gen_capped_name(name) == (p->capped != 0); }

static st_status compile_config(st_ctx *c, Memo *m, const gen_Problem *p, const char *config);

/* A cached entry's kernel; the other softcap variant of an entry than p's (tuned with or without
** one), or a bias tensor of another type than float32 (the tuner's), is its config compiled for p. */
static st_status from_entry(st_ctx *c, Memo *m, const gen_Problem *p, cache_Entry *e)
{
  st_status s = variant_of(p, e->kernel) && !p->bias_type ? load(c, m, e->cubin, e->kernel, &e->launch, e->config)
                                                          : compile_config(c, m, p, e->config);
  cache_entry_free(e);
  return s;
}

/* Render and compile config for p, then load it. */
static st_status compile_config(st_ctx *c, Memo *m, const gen_Problem *p, const char *config)
{
  gen_Kernel k;
  gen_Cubin cb;
  char err[1024], kept[4096];
  if (gen_render(c->gen, p, config, &k)) return fail(ST_ECOMPILE, "%s", gen_error(c->gen));
  cache_cubin_dir(NULL, kept, sizeof kept);   /* a source compiled before, by any process, is read back */
  int rc = cache_compile(kept, k.source, "softmax.cu", p->arch, &cb, err, sizeof err);
  if (!rc && !cb.kept) c->stats.compiles++;
  st_status s = rc ? fail(ST_ECOMPILE, "%s", err) : load(c, m, cb.data, k.name, &k.launch, k.config);
  gen_cubin_free(&cb);
  gen_kernel_free(&k);
  return s;
}

/* The kernel set's stand-in `sub` for p loaded, and p's untuned kernel (chosen for key) queued
** to be chosen, rendered and compiled by the context's worker (m->job): nothing of the rule,
** the generator or NVRTC on the call path. 0, or 1 (nothing loaded or queued: said, and the
** caller compiles the kernel on this call). */
static int stand_in(st_ctx *c, Memo *m, const gen_Problem *p, const gen_Problem *key, int unaligned,
                    const kset_Record *sub)
{
  gen_Launch l;
  char err[256];
  bg_Job *j = calloc(1, sizeof *j);
  if (!j) return say(c, "softmax-tune: no stand-in for %s: out of memory; its kernel compiles on this call", gen_op_name(p->op)), 1;
  *j = (bg_Job){ .p = *p, .key = *key, .unaligned = unaligned, .base = c->base };
  cache_cubin_dir(NULL, j->kept, sizeof j->kept);
  kset_launch(sub, &l);
  if (load(c, m, c->set_base + sub->offset, sub->name, &l, sub->config)) {
    say(c, "softmax-tune: the stand-in %s did not load: %s; its kernel compiles on this call", sub->name, st_error(c));
    return free(j), 1;
  }
  if (bg_submit(&c->bg, j, err, sizeof err)) {
    c->drv.cuModuleUnload(m->mod);
    m->mod = NULL;
    say(c, "softmax-tune: no background compile for %s (%s); its kernel compiles on this call", gen_op_name(p->op), err);
    return free(j), 1;
  }
  m->job = j;
  return 0;
}

/* m's kernel, compiled in the background, loaded in place of its stand-in (kept loaded until
** st_close: a launch of it may be in flight). A failure is said, and the stand-in stays. */
static void take(st_ctx *c, Memo *m)
{
  bg_Job *j = m->job;
  const Memo was = *m;
  st_status s = j->rc ? fail(ST_ECOMPILE, "%s", j->err) : ST_OK;
  m->job = NULL;
  c->stats.compiles += !j->rc && !j->cb.kept;
  if (s == ST_OK) s = load(c, m, j->cb.data, j->k.name, &j->k.launch, j->k.config);
  if (s == ST_OK) m->stand_in = was.mod;
  else {
    say(c, "softmax-tune: the kernel %s did not compile in the background: %s; its stand-in stays", j->k.config, st_error(c));
    *m = was, m->job = NULL;
  }
  bg_job_free(j);
}

/* The module of the steps into st: the kernel set's, else compiled (kept cubins: once a machine). */
static CUresult load_steps(st_ctx *c, int dtype, Steps *st, char *err, size_t errlen)
{
  const kset_Record *r = c->set ? kset_find(c->set, c->nset, c->set_arch, dtype, GEN_CE, 0, 0, 0, 0, KSET_STEPS) : NULL;
  gen_Problem p = { .rows = 1, .cols = 2, .dtype = dtype, .op = GEN_CE };
  gen_Cubin cb = { 0 };
  char *src = NULL, kept[4096];
  tune_device_limits(&c->dev, &p);
  if (!r && gen_aux(c->gen, &p, "ce_steps", &src)) return snprintf(err, errlen, "%s", gen_error(c->gen)), CUDA_ERROR_INVALID_SOURCE;
  cache_cubin_dir(NULL, kept, sizeof kept);
  if (!r && cache_compile(kept, src, "ce_steps.cu", p.arch, &cb, err, errlen)) return free(src), CUDA_ERROR_INVALID_SOURCE;
  free(src);
  c->stats.compiles += !r && !cb.kept;
  c->stats.loads++;
  CUresult e = c->drv.cuModuleLoadData(&st->mod, r ? (const void *)(c->set_base + r->offset) : cb.data);
  gen_cubin_free(&cb);
  if (!e) e = c->drv.cuModuleGetFunction(&st->count, st->mod, "st_ce_count");
  if (!e) e = c->drv.cuModuleGetFunction(&st->reduce, st->mod, "st_ce_reduce");
  if (!e) e = c->drv.cuModuleGetFunction(&st->scale, st->mod, "st_ce_scale");
  for (int i = 0; !e && i < VOCAB_NSTEPS; i++)
    if (c->drv.cuModuleGetFunction(&st->vp[i], st->mod, vocab_kernel[i])) st->vp[i] = NULL;
  if (e) tune_cu_error(&c->drv, e, err, errlen);
  return e;
}

/* The cross-entropy steps of dtype (templates/ce_steps.cu), loaded once a context. */
static st_status steps(st_ctx *c, int dtype, Steps *out)
{
  Steps *st = &c->steps[dtype];
  char err[1024];
  if (!st->mod && load_steps(c, dtype, st, err, sizeof err)) {
    if (st->mod) c->drv.cuModuleUnload(st->mod);
    memset(st, 0, sizeof *st);
    return fail(ST_ECOMPILE, "the cross-entropy steps of %s: %s", gen_dtype_name(dtype), err);
  }
  *out = *st;
  return ST_OK;
}

/* Tune p now with the GPU backend, store the run, and load the winner. */
static st_status tune_now(st_ctx *c, Memo *m, const gen_Problem *p, const cache_Key *k)
{
  char err[1024];
  tune_Gpu *gpu = NULL;
  tune_Options o;
  tune_Result r;
  int64_t run;
  char **list;
  int n;
  st_status s = ST_OK;
  say(c, "softmax-tune: tuning %lldx%lld %s %s now (miss policy tune)", (long long)p->rows, (long long)p->cols,
      gen_dtype_name(p->dtype), gen_op_name(p->op));
  c->stats.tunes++;
  if ((s = open_cache(c, 1))) return s;
  if (!c->db) return fail(ST_ECACHE, "no cache to store the tuning in at %s", c->path);
  if (gen_space(c->gen, p, &list, &n)) return fail(ST_ECOMPILE, "%s", gen_error(c->gen));
  gen_free_list(list, n);
  if (tune_gpu_open(&gpu, c->dev.ordinal, err, sizeof err) || tune_gpu_prepare(gpu, c->gen, p, n, err, sizeof err)) {
    tune_gpu_close(gpu);
    return fail(ST_ECUDA, "tuning: %s", err);
  }
  tune_default_options(&o);
  tune_Backend b = tune_gpu_backend(gpu);
  gen_Problem q = *p;
  q.bias_type = 0;   /* the tuner times a float32 bias tensor; p's type is compiled with the winner's config */
  if (tune_sweep(c->gen, &q, &b, &o, &r, err, sizeof err)) s = fail(ST_ECUDA, "tuning: %s", err);
  else if (r.winner < 0) s = fail(ST_ECOMPILE, "tuning: no config passed for this shape");
  else if (tune_store(c->db, k, &r, &run, err, sizeof err)) s = fail(ST_ECACHE, "%s", err);
  tune_gpu_close(gpu);
  if (s == ST_OK && p->bias_type) s = compile_config(c, m, p, r.kernel.config);
  else if (s == ST_OK) s = load(c, m, r.cubin.data, r.kernel.name, &r.kernel.launch, r.kernel.config);
  tune_result_free(&r);
  return s;
}

/* An entry made under another driver or NVRTC, or imported from a bundle and not retimed, is
** verified again, on its own shape, before its first use: CACHE_OK to use it; else it is freed (failed: gone from the cache, a miss). */
static int still_good(st_ctx *c, const gen_Problem *p, const cache_Key *k, cache_Entry *e)
{
  char err[1024], made[64];
  gen_Problem q = *p;
  cache_Key kk = *k;
  if (!tune_stale(k, e)) return CACHE_OK;
  q.rows = kk.rows = e->key.rows;   /* its own shape: another of its class may have found it */
  q.cols = kk.cols = e->key.cols;
  /* driver 0: imported from a bundle and not timed here */
  if (e->key.driver) snprintf(made, sizeof made, "was tuned under driver %d, NVRTC %d", e->key.driver, e->key.nvrtc);
  else snprintf(made, sizeof made, "came from a bundle");
  int rc = tune_gpu_reverify(c->dev.ordinal, c->gen, &q, c->db, &kk, e, err, sizeof err);
  say(c, "softmax-tune: the kernel of %lldx%lld %s %s %s: verified again, %s%s%s", (long long)e->key.rows,
      (long long)e->key.cols, gen_dtype_name(e->key.dtype), gen_op_name(e->key.op), made,
      rc == CACHE_OK ? "passed" : "not used", err[0] ? ": " : "", err);
  if (rc != CACHE_OK) cache_entry_free(e);
  return rc;
}

/* The kernel set's record for p's key (its class: m's), NULL when the set lacks it (its bias
** tensors' classes are float32's). */
static const kset_Record *in_set(const st_ctx *c, const Memo *m, const gen_Problem *p)
{
  if (!c->set || m->unaligned || p->bias_type) return NULL;
  return kset_find(c->set, c->nset, c->set_arch, p->dtype, p->op, p->mask, p->bias, p->capped != 0, m->band, m->hi);
}

/* No tuned kernel: the kernel set's (loaded, nothing compiled), else the nearest tuned problems'
** config adapted (untuned.c) and compiled; said once a class. Either is chosen for the memo key's
** problem, as the set's builder chooses (the band's rows, the class's widest row), so the first
** shape of a key a process meets does not decide the kernel of the others. */
static st_status untuned(st_ctx *c, Memo *m, const gen_Problem *p, int unaligned)
{
  gen_Choice ch = { .note = "" };
  char err[1024];
  gen_Problem key;
  kset_key_problem(p, &key);   /* m's band and class */
  key.bias_type = 0;           /* a config is the float32 tensor's */
  const kset_Record *r = in_set(c, m, p);
  const kset_Record *sub = r || !c->set ? NULL : kset_stand_in(c->set, c->nset, c->set_arch, p);
  m->untuned = !unaligned;     /* tuning would not change an unaligned call's kernel */
  if (sub && stand_in(c, m, p, &key, unaligned, sub) == 0) {
    snprintf(ch.config, sizeof ch.config, "%s", sub->config);
    snprintf(ch.source, sizeof ch.source, "the kernel set's stand-in for this kind (every width), while the rule's kernel compiles in the background");
  } else if (r) {
    snprintf(ch.config, sizeof ch.config, "%s", r->config);
    snprintf(ch.source, sizeof ch.source, "the kernel set (%s)", r->source);
  } else if (untuned_choose(c->gen, c->db, &c->base, &key, unaligned, &ch, err, sizeof err)) {
    return fail(ST_ECOMPILE, "%s", err);
  }
  const char *note = ch.note[0] && !c->stale_said++ ? ch.note : "";   /* a stale table: said once */
  say(c, "softmax-tune: no tuned kernel for %lldx%lld %s %s%s; using %s, from %s (tune with: softmax-tune --shape %lldx%lld --dtype %s --op %s)%s%s",
      (long long)p->rows, (long long)p->cols, gen_dtype_name(p->dtype), gen_op_name(p->op),
      unaligned ? " with input and output differently aligned" : "", ch.config, ch.source, (long long)p->rows,
      (long long)p->cols, gen_dtype_name(p->dtype), gen_op_name(p->op), *note ? "; " : "", note);
  if (m->job) return ST_OK;
  if (!r) return compile_config(c, m, p, ch.config);
  gen_Launch l;
  kset_launch(r, &l);
  return load(c, m, c->set_base + r->offset, r->name, &l, r->config);
}

/* Whether a memo op (memo_op) is a softcap's kernel. */
static int memo_capped(int code)
{
  return code / GEN_NOP / GEN_NBIAS / GEN_NMASK / 4;
}

/* The row band of a call (the memo key's last part): its dtype, memo op, rows and class's widest row. */
static int band_of(int dtype, int code, int64_t rows, int64_t hi)
{
  return kset_band(code % GEN_NOP, dtype, memo_capped(code), rows, hi);   /* the memo op's generator op */
}

/* The memo's op: the generator's, and past GEN_NOP attention_softmax's kinds and bias type and
** a softcap's kernel (capped: cross-entropy's and attention's); memo_kinds takes them back into a
** problem. The bias type and capped pick a kernel source, not a config: twins (listed_twin). */
static int memo_op(int op, int mask, int bias, int btype, int capped)
{
  return op + GEN_NOP * (((capped * 4 + btype) * GEN_NMASK + mask) * GEN_NBIAS + bias);
}
static void memo_kinds(int code, gen_Problem *p)
{
  const int v = code / GEN_NOP / GEN_NBIAS / GEN_NMASK;
  p->op = code % GEN_NOP, p->bias = code / GEN_NOP % GEN_NBIAS;
  p->mask = code / GEN_NOP / GEN_NBIAS % GEN_NMASK, p->bias_type = v % 4, p->capped = memo_capped(code);
}

static st_status resolve_kind(st_ctx *c, Memo *m, const gen_Problem *q, int unaligned, int64_t lo);

/* The cache (this shape, else the class's entry nearest it), then the miss policy. A bias tensor
** not of float32 gets the float32 one's config (what the cache, set, rule and tuner hold, timed
** and checked with that type) compiled for its type. */
static st_status resolve(st_ctx *c, Memo *m, int dtype, int code, int unaligned, int64_t rows, int64_t cols, int64_t lo)
{
  gen_Problem p = { .rows = rows, .cols = cols, .dtype = dtype };
  memo_kinds(code, &p);
  tune_device_limits(&c->dev, &p);
  return resolve_kind(c, m, &p, unaligned, lo);
}

static st_status resolve_kind(st_ctx *c, Memo *m, const gen_Problem *q, int unaligned, int64_t lo)
{
  gen_Problem p = *q, f32 = *q;
  const int64_t rows = p.rows, cols = p.cols;
  const int dtype = p.dtype, op = p.op;
  cache_Key k = c->base;
  cache_Entry e;
  int rc = CACHE_MISS;
  k.dtype = dtype, k.op = op, k.mask = p.mask, k.bias = p.bias, k.rows = rows, k.cols = cols;
  f32.bias_type = 0;   /* what an entry was tuned and is verified again with */
  c->stats.classes++;
  if (!unaligned && open_cache(c, 0) == ST_OK && c->db) {
    c->stats.cache_reads++;
    if ((rc = cache_get(c->db, &k, &e)) == CACHE_OK && (rc = still_good(c, &f32, &k, &e)) == CACHE_OK)
      return from_entry(c, m, &p, &e);
    if (rc == CACHE_CORRUPT) say(c, "softmax-tune: %s; not using it", cache_error(c->db));
    /* rows and cols are kernel arguments: a kernel tuned for another shape of the class runs these */
    c->stats.cache_reads++;
    if ((rc = cache_similar(c->db, &k, lo, m->hi, &e)) == CACHE_OK && (rc = still_good(c, &f32, &k, &e)) == CACHE_OK) {
      say(c, "softmax-tune: %lldx%lld %s %s uses the kernel tuned for %lldx%lld", (long long)rows, (long long)cols,
          gen_dtype_name(dtype), gen_op_name(op), (long long)e.key.rows, (long long)e.key.cols);
      return from_entry(c, m, &p, &e);
    }
  }
  if (unaligned || c->miss == ST_MISS_HEURISTIC) return untuned(c, m, &p, unaligned);
  if (c->miss == ST_MISS_TUNE) return tune_now(c, m, &p, &k);
  return fail(ST_EMISS, "no tuned kernel for %lldx%lld %s %s on %s in %s (miss policy error); tune it with "
              "softmax-tune --shape %lldx%lld --dtype %s --op %s", (long long)rows, (long long)cols, gen_dtype_name(dtype),
              gen_op_name(op), c->dev.name, c->path, (long long)rows, (long long)cols, gen_dtype_name(dtype), gen_op_name(op));
}

static st_status check_args(st_ctx *c, int dtype, int op, int64_t rows, int64_t cols)
{
  if (dtype < ST_F32 || dtype > ST_BF16) return fail(ST_EINVAL, "st_softmax: bad dtype %d (ST_F32, ST_F16, ST_BF16)", dtype);
  if (op < ST_SOFTMAX || op > ST_LOG_SOFTMAX) return fail(ST_EINVAL, "st_softmax: bad op %d", op);
  if (rows < 1 || cols < 1) return fail(ST_EINVAL, "st_softmax: rows and cols must be >= 1, got %lldx%lld", (long long)rows, (long long)cols);
  if (cols > 0x7fffffff || rows > INT64_MAX / 8 / cols)
    return fail(ST_EINVAL, "st_softmax: shape %lldx%lld is too large", (long long)rows, (long long)cols);
  if (!c) return fail(ST_EINVAL, "st_softmax: ctx is NULL");
  return ST_OK;
}

/* Whether a twin of memo op `code` (its class with another bias type or softcap kernel: memo_op)
** is listed untuned already: a class is listed once, whatever kernel sources it took. */
static int listed_twin(st_ctx *c, int dtype, int code, int unaligned, int64_t hi, int band)
{
  gen_Problem k;
  memo_kinds(code, &k);
  for (int v = 0; v < 8; v++) {
    const int twin = memo_op(k.op, k.mask, k.bias, v % 4, v / 4);
    const Memo *m = twin != code ? find(c, dtype, twin, unaligned, hi, band) : NULL;
    if (m && m->used && m->untuned > 0) return 1;
  }
  return 0;
}

/* The memo entry's function and launch for a problem's width class, resolving the class the
** first time (attn: an attention problem's launch options, kept with it; NULL for the other ops). */
static st_status lookup(st_ctx *c, int dtype, int op, int unaligned, int64_t rows, int64_t cols, const AttnParams *attn,
                        Memo *out)
{
  st_status s = ST_OK;
  int64_t lo, hi;
  gen_width_class(cols, &lo, &hi);
  pthread_mutex_lock(&c->mu);
  c->stats.calls++;
  const int band = band_of(dtype, op, rows, hi);
  Memo *m = find(c, dtype, op, unaligned, hi, band);
  if (m && m->used && m->job && bg_done(m->job) && !c->drv.cuCtxPushCurrent(c->cu)) {   /* compiled in the background */
    take(c, m);
    c->drv.cuCtxPopCurrent(NULL);
  }
  if (!m || !m->used) {
    Memo fresh = { .used = 1, .dtype = dtype, .op = op, .unaligned = unaligned, .hi = hi, .band = band, .rows = rows,
                   .cols = cols, .attn = attn ? *attn : (AttnParams){ 0 } };
    CUresult r = c->drv.cuCtxPushCurrent(c->cu);
    s = r ? fail(ST_ECUDA, "cannot use the GPU's context") : resolve(c, &fresh, dtype, op, unaligned, rows, cols, lo);
    if (!r) c->drv.cuCtxPopCurrent(NULL);
    if (s == ST_OK && !(m = slot_for(c, dtype, op, unaligned, hi, band))) s = fail(ST_ENOMEM, "out of memory");
    if (s == ST_OK) {
      *m = fresh;
      c->n++;
      if (m->untuned) m->untuned = listed_twin(c, dtype, op, unaligned, hi, band) ? 0 : attn ? ++c->nuntuned_attn : ++c->nuntuned;
    }
  }
  if (s == ST_OK) *out = *m;
  pthread_mutex_unlock(&c->mu);
  return s;
}

/* Make the context current on this thread for a launch (*pushed: whether it had to be pushed);
** leave() restores the caller's. */
static CUresult enter(st_ctx *c, int *pushed)
{
  CUcontext cur = NULL;
  *pushed = c->drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != c->cu;
  return *pushed ? c->drv.cuCtxPushCurrent(c->cu) : CUDA_SUCCESS;
}

static void leave(st_ctx *c, int pushed)
{
  if (pushed) c->drv.cuCtxPopCurrent(NULL);
}

/* The stream's workspace of at least n bytes, made and zeroed (in stream order) on first use;
** a larger need gets a new one and keeps the old until st_close, as kernels may still use it. */
static CUresult workspace(st_ctx *c, CUstream s, size_t n, CUdeviceptr *out, CUdeviceptr *scratch)
{
  CUresult r = CUDA_SUCCESS;
  Workspace *w = NULL;
  pthread_mutex_lock(&c->mu);
  for (int i = c->nws - 1; i >= 0 && !w; i--)
    if (c->ws[i].stream == s && c->ws[i].size >= n) w = &c->ws[i];
  if (!w) {
    Workspace *grown = realloc(c->ws, sizeof *grown * (size_t)(c->nws + 1));
    if (!grown) r = CUDA_ERROR_OUT_OF_MEMORY;
    else {
      c->ws = grown;
      w = &c->ws[c->nws];
      w->stream = s;
      w->size = n < (1u << 20) ? 1u << 20 : n;
      w->scratch = 0;
      r = c->drv.cuMemAlloc(&w->ptr, w->size);
      if (!r) r = c->drv.cuMemAlloc(&w->scratch, 256);
      if (!r) r = c->drv.cuMemsetD8Async(w->ptr, 0, w->size, s);
      if (!r) r = c->drv.cuMemsetD8Async(w->scratch, 0, 256, s);
      if (!r) c->nws++;
      else if (w->ptr) c->drv.cuMemFree(w->ptr);
    }
  }
  if (!r) *out = w->ptr;
  if (!r && scratch) *scratch = w->scratch;
  pthread_mutex_unlock(&c->mu);
  return r;
}

/* Launch problem (dtype, gen op) on in (and in2, the backward ops' dy) into out: fn names the
** API call in messages. */
static st_status run(st_ctx *c, const char *fn, int dtype, int op, uintptr_t in, uintptr_t in2, uintptr_t out, int64_t rows,
                     int64_t cols, struct CUstream_st *stream)
{
  const int es = dtype == ST_F32 ? 4 : 2, two = gen_op_inputs(op) == 2;
  Memo m;
  char err[512];
  st_status s;
  if (!in || !out || (two && !in2)) return fail(ST_EINVAL, "%s: a tensor pointer is NULL", fn);
  if ((in | in2 | out) % (unsigned)es) return fail(ST_EINVAL, "%s: pointers not aligned to the %d-byte elements", fn, es);
  if ((s = lookup(c, dtype, op, ((in ^ out) | (two ? in2 ^ out : 0)) % 16 != 0, rows, cols, NULL, &m))) return s;
  CUdeviceptr ws = 0;
  int push;
  CUresult r = enter(c, &push);
  tune_Args a = { { (CUdeviceptr)in, two ? (CUdeviceptr)in2 : (CUdeviceptr)out, (CUdeviceptr)out }, rows, 0, NULL, cols };
  if (!r && m.launch.coop) r = workspace(c, (CUstream)stream, tune_workspace(&m.launch, m.resident), &ws, NULL);
  a.ws = ws;
  if (!r) r = tune_launch(&c->drv, m.fn, &m.launch, &a, m.resident, (CUstream)stream);
  leave(c, push);
  if (r) return fail(ST_ECUDA, "%s launch (%s): %s", fn, m.config, tune_cu_error(&c->drv, r, err, sizeof err));
  return ST_OK;
}

st_status st_softmax(st_ctx *c, st_dtype dtype, st_op op, const void *in, void *out, int64_t rows, int64_t cols,
                     struct CUstream_st *stream)
{
  st_status s = check_args(c, dtype, op, rows, cols);
  return s ? s : run(c, "st_softmax", dtype, op, (uintptr_t)in, 0, (uintptr_t)out, rows, cols, stream);
}

/* The backward ops are the generator's ops after the forward ones, in the same order. */
st_status st_softmax_backward(st_ctx *c, st_dtype dtype, st_op op, const void *y, const void *dy, void *dx, int64_t rows,
                              int64_t cols, struct CUstream_st *stream)
{
  st_status s = check_args(c, dtype, op, rows, cols);
  return s ? s : run(c, "st_softmax_backward", dtype, GEN_SOFTMAX_BW + op, (uintptr_t)y, (uintptr_t)dy, (uintptr_t)dx, rows,
                     cols, stream);
}

/* The config string of the kernel problem (dtype, gen op) launches. */
static st_status config_of(st_ctx *c, st_dtype dtype, st_op op, int gen_op, int64_t rows, int64_t cols, char *out,
                           int outlen)
{
  Memo m;
  st_status s = check_args(c, dtype, op, rows, cols);
  if (!s) s = lookup(c, dtype, gen_op, 0, rows, cols, NULL, &m);
  if (!s && out && outlen > 0) snprintf(out, (size_t)outlen, "%s", m.config);
  return s;
}

st_status st_config(st_ctx *c, st_dtype dtype, st_op op, int64_t rows, int64_t cols, char *out, int outlen)
{
  return config_of(c, dtype, op, (int)op, rows, cols, out, outlen);
}

st_status st_config_backward(st_ctx *c, st_dtype dtype, st_op op, int64_t rows, int64_t cols, char *out, int outlen)
{
  return config_of(c, dtype, op, GEN_SOFTMAX_BW + (int)op, rows, cols, out, outlen);
}

/* ---- cross-entropy ---- */

void st_ce_defaults(st_ce_options *o)
{
  memset(o, 0, sizeof *o);
  o->ignore_index = -100;
  o->reduction = ST_REDUCE_MEAN;
}

static st_status check_ce(st_ctx *c, st_dtype dtype, const void *logits, const void *labels, st_index lt, const void *grad,
                          const float *loss, const float *lse, int64_t rows, int64_t cols, const st_ce_options *o)
{
  const int es = dtype == ST_F32 ? 4 : 2;
  const int64_t stride = o->row_stride ? o->row_stride : cols;
  st_status s = check_args(c, dtype, ST_SOFTMAX, rows, cols);
  if (s) return s;
  if (cols < 2) return fail(ST_EINVAL, "st_cross_entropy: cols must be >= 2 (classes), got %lld", (long long)cols);
  if (!logits || !labels || !loss || !lse) return fail(ST_EINVAL, "st_cross_entropy: a tensor pointer is NULL");
  if (lt != ST_I32 && lt != ST_I64) return fail(ST_EINVAL, "st_cross_entropy: bad label type %d (ST_I32, ST_I64)", lt);
  if (stride < cols) return fail(ST_EINVAL, "st_cross_entropy: row_stride %lld is less than cols %lld", (long long)stride, (long long)cols);
  if (o->reduction < ST_REDUCE_NONE || o->reduction > ST_REDUCE_MEAN)
    return fail(ST_EINVAL, "st_cross_entropy: bad reduction %d", o->reduction);
  if (!(o->label_smoothing >= 0.f && o->label_smoothing <= 1.f))
    return fail(ST_EINVAL, "st_cross_entropy: label_smoothing must be in [0, 1], got %g", o->label_smoothing);
  if (o->label_smoothing > 0.f && o->weight)
    return fail(ST_EINVAL, "st_cross_entropy: label_smoothing with class weights is not supported");
  if (!(o->softcap >= 0.f) || !(o->z_loss >= 0.f) || o->softcap == INFINITY || o->z_loss == INFINITY)
    return fail(ST_EINVAL, "st_cross_entropy: softcap and z_loss must be finite and >= 0, got %g and %g", o->softcap, o->z_loss);
  if (((uintptr_t)logits | (uintptr_t)grad) % (unsigned)es || ((uintptr_t)labels % (lt == ST_I64 ? 8u : 4u)) ||
      ((uintptr_t)loss | (uintptr_t)lse | (uintptr_t)o->weight) % 4u)
    return fail(ST_EINVAL, "st_cross_entropy: pointers not aligned to their elements");
  if (grad && grad == logits && stride != cols)
    return fail(ST_EINVAL, "st_cross_entropy: the gradient in place of the logits needs row_stride == cols");
  if (o->reduced && (o->reduction == ST_REDUCE_NONE || (uintptr_t)o->reduced % (uintptr_t)(o->reduced_in_dtype ? es : 4)))
    return fail(ST_EINVAL, "st_cross_entropy: reduced needs reduction sum or mean and a pointer aligned to its type");
  return ST_OK;
}

/* The stream's predicted grad_output for st_ce_count and st_ce_scale: a float of its scratch, or 0
** (none: 1) for float16, where 65536 times a sum's gradient can overflow and no rescale undoes it. */
static CUdeviceptr pred_at(int dtype, CUdeviceptr scratch) { return dtype == ST_F16 ? 0 : scratch + 4; }

/* The gradient's factor into the stream's scratch float: 1 / the rows not ignored (weighted) for a
** mean, 1 for a sum; with used (o->grad_scale), times the stream's predicted grad_output
** (pred_at), kept in *used. */
static CUresult grad_factor(st_ctx *c, const Memo *m, const void *labels, int64_t rows, int mean, float *used, int dtype,
                            CeParams *p, CUstream s)
{
  CUdeviceptr ws, scratch;
  CUresult r = workspace(c, s, 0, &ws, &scratch);
  long long n = rows;
  CUdeviceptr pred = used ? pred_at(dtype, scratch) : 0;
  void *args[] = { (void *)&labels, &n, p, &scratch, &pred, &used, &mean };
  if (!r) r = c->drv.cuLaunchKernel(m->count, 1, 1, 1, 1024, 1, 1, 0, s, args, NULL);
  p->scale = scratch;
  return r;
}

/* Whether launches may use programmatic dependent launch: sm_90 and up, not SOFTMAX_TUNE_NO_PDL. */
static int pdl(const st_ctx *c) { return c->dev.arch >= 90 && !c->no_pdl; }

/* *reduced = the rows' losses reduced as torch does (st_ce_reduce: one block, in the logits'
** dtype when elem), launched to start early on sm_90+ (it waits for the loss kernel itself). */
static CUresult reduce_loss(st_ctx *c, const Memo *m, const float *loss, const void *labels, int64_t rows, CeParams *p,
                            int mean, int elem, void *reduced, CUstream s)
{
  long long n = rows;
  void *args[] = { (void *)&loss, (void *)&labels, &n, p, &mean, &elem, &reduced };
  CUlaunchAttribute attr;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 1024, cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s;
  memset(&attr, 0, sizeof attr);   /* it waits for the loss kernel itself (griddepcontrol.wait) */
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl(c);
  return c->drv.cuLaunchKernelEx(&cfg, m->reduce, args, NULL);
}

st_status st_cross_entropy(st_ctx *c, st_dtype dtype, const void *logits, const void *labels, st_index lt, void *grad,
                           float *loss, float *lse, int64_t rows, int64_t cols, const st_ce_options *opt,
                           struct CUstream_st *stream)
{
  st_ce_options o;
  Memo m;
  char err[512];
  st_status s;
  if (opt) o = *opt;
  else st_ce_defaults(&o);
  if ((s = check_ce(c, dtype, logits, labels, lt, grad, loss, lse, rows, cols, &o))) return s;
  const int es = dtype == ST_F32 ? 4 : 2, op = grad ? GEN_CE : GEN_CE_LOSS;
  const int64_t stride = o.row_stride ? o.row_stride : cols;
  const int unaligned = grad && ((((uintptr_t)logits ^ (uintptr_t)grad) % 16) || ((stride - cols) * es) % 16);
  if ((s = lookup(c, dtype, memo_op(op, 0, 0, 0, o.softcap > 0.f), unaligned, rows, cols, NULL, &m))) return s;
  CeParams p = { cols, stride, o.ignore_index, (uintptr_t)o.weight, 0, (uintptr_t)o.bad_label, o.label_smoothing, o.z_loss,
                 o.softcap, lt == ST_I64 };
  tune_Args a = { { (CUdeviceptr)logits, (CUdeviceptr)labels, (CUdeviceptr)grad, (CUdeviceptr)loss, (CUdeviceptr)lse }, rows, 0,
                  &p, cols };
  int push;
  CUresult r = enter(c, &push);
  const int mean = o.reduction == ST_REDUCE_MEAN;
  float *used = grad && o.reduction != ST_REDUCE_NONE ? o.grad_scale : NULL;
  if (!r && grad && (mean || used)) r = grad_factor(c, &m, labels, rows, mean, used, dtype, &p, (CUstream)stream);
  if (!r) r = tune_launch(&c->drv, m.fn, &m.launch, &a, m.resident, (CUstream)stream);
  if (!r && o.reduced)
    r = reduce_loss(c, &m, loss, labels, rows, &p, mean, o.reduced_in_dtype != 0, o.reduced, (CUstream)stream);
  leave(c, push);
  if (r) return fail(ST_ECUDA, "st_cross_entropy launch (%s): %s", m.config, tune_cu_error(&c->drv, r, err, sizeof err));
  return ST_OK;
}

/* The memo entry of a cross-entropy problem of cols' width class with a gradient that ran on
** this context (either alignment's kernel, with or without a softcap: each has the steps), 0
** when none did. */
static int trained(st_ctx *c, int dtype, int64_t rows, int64_t cols, Memo *out)
{
  pthread_mutex_lock(&c->mu);
  Memo *m = NULL;
  int64_t lo, hi;
  gen_width_class(cols, &lo, &hi);
  const int band = band_of(dtype, GEN_CE, rows, hi);
  for (int v = 0; v < 4 && !(m && m->used); v++) m = find(c, dtype, memo_op(GEN_CE, 0, 0, 0, v / 2), v % 2, hi, band);
  const int found = m && m->used;
  if (found) *out = *m;
  pthread_mutex_unlock(&c->mu);
  return found;
}

st_status st_cross_entropy_scale(st_ctx *c, st_dtype dtype, void *grad, const void *grad_output, const float *grad_scale,
                                 int flags, int64_t rows, int64_t cols, struct CUstream_st *stream)
{
  Memo m;
  char err[512];
  if (!c || !grad || !grad_output) return fail(ST_EINVAL, "st_cross_entropy_scale: ctx, grad or grad_output is NULL");
  if (dtype < ST_F32 || dtype > ST_BF16) return fail(ST_EINVAL, "st_cross_entropy_scale: bad dtype %d", dtype);
  if (!trained(c, dtype, rows, cols, &m))
    return fail(ST_EINVAL, "st_cross_entropy_scale: no st_cross_entropy with a gradient of %lldx%lld ran on this context",
                (long long)rows, (long long)cols);
  const int64_t n = rows * cols, per_sm = 8;
  const unsigned blocks = (unsigned)(n / 256 + 1 < (int64_t)c->dev.sms * per_sm ? n / 256 + 1 : (int64_t)c->dev.sms * per_sm);
  long long nrows = rows, ncols = cols;
  CUdeviceptr ws, scratch, pred = 0;
  int push;
  CUresult r = enter(c, &push);
  if (!r && grad_scale && !(r = workspace(c, (CUstream)stream, 0, &ws, &scratch))) pred = pred_at(dtype, scratch);
  void *args[] = { &grad, (void *)&grad_output, &nrows, &ncols, &flags, (void *)&grad_scale, &pred };
  if (!r) r = c->drv.cuLaunchKernel(m.scale, blocks, 1, 1, 256, 1, 1, 0, (CUstream)stream, args, NULL);
  leave(c, push);
  if (r) return fail(ST_ECUDA, "st_cross_entropy_scale launch: %s", tune_cu_error(&c->drv, r, err, sizeof err));
  return ST_OK;
}

st_status st_config_cross_entropy(st_ctx *c, st_dtype dtype, int grad, int64_t rows, int64_t cols, char *out, int outlen)
{
  return config_of(c, dtype, ST_SOFTMAX, grad ? GEN_CE : GEN_CE_LOSS, rows, cols, out, outlen);
}

/* ---- vocab-parallel cross-entropy's row steps (templates/ce_vocab.cu, runtime/vocab.c) ---- */

st_status st_vocab_parallel_step(st_ctx *c, st_dtype dtype, st_vocab_step step, const st_vocab_args *a, struct CUstream_st *stream)
{
  VpParams v;
  Steps st;
  char err[512];
  if (dtype < ST_F32 || dtype > ST_BF16) return fail(ST_EINVAL, "st_vocab_parallel_step: bad dtype %d", dtype);
  if (vocab_params(step, dtype == ST_F32 ? 4 : 2, a, &v, err, sizeof err)) return fail(ST_EINVAL, "%s", err);
  if (!c) return fail(ST_EINVAL, "st_vocab_parallel_step: ctx is NULL");
  pthread_mutex_lock(&c->mu);
  st_status s = steps(c, dtype, &st);
  pthread_mutex_unlock(&c->mu);
  if (s) return s;
  if (!st.vp[step])
    return fail(ST_ECOMPILE, "st_vocab_parallel_step: the kernel set's steps of %s lack %s (built before it: build the set again)",
                gen_dtype_name(dtype), vocab_kernel[step]);
  int push;
  void *args[] = { &v };
  CUresult r = enter(c, &push);
  if (!r) r = c->drv.cuLaunchKernel(st.vp[step], vocab_blocks(step, a, c->dev.sms), 1, 1, 256, 1, 1, 0, (CUstream)stream, args, NULL);
  leave(c, push);
  if (r) return fail(ST_ECUDA, "st_vocab_parallel_step %s launch: %s", vocab_kernel[step], tune_cu_error(&c->drv, r, err, sizeof err));
  return ST_OK;
}

/* ---- attention_softmax ---- */

void st_attn_defaults(st_attn_options *o)
{
  memset(o, 0, sizeof *o);
  o->scale = 1.f;
  o->causal_offset = ST_ATTN_OFFSET_AUTO;
  o->window = -1;
}

/* The API call of an attention op, for messages. */
static const char *attn_fn(int op) { return op == GEN_ATTN ? "st_attention_softmax" : "st_attention_softmax_backward"; }

/* The options (NULL: the defaults) of attention op `op` checked, as a mask kind, a bias kind (the
** backward's none: ALiBi does not change the gradient, its slopes are ignored) and the kernels'
** launch block (pointers set). */
static st_status check_attn(st_ctx *c, st_dtype dtype, int op, const st_attn_options *opt, int64_t B, int64_t H, int64_t Q,
                            int64_t K, gen_Problem *p, AttnParams *a)
{
  char err[512];
  st_attn_options defaults;
  const st_attn_options *o = opt ? opt : (st_attn_defaults(&defaults), &defaults);
  const char *fn = attn_fn(op);
  tune_AttnOptions t = { Q, H, o->causal_offset == ST_ATTN_OFFSET_AUTO ? TUNE_ATTN_AUTO : o->causal_offset, o->window, o->scale,
                         o->softcap };
  if (B < 1 || H < 1 || Q < 1 || K < 1 || K > 0x7fffffff || B > INT64_MAX / 8 / H / Q / K)
    return fail(ST_EINVAL, "%s: bad shape %lldx%lldx%lldx%lld (B, H, Q, K >= 1, K < 2^31)", fn, (long long)B, (long long)H,
                (long long)Q, (long long)K);
  memset(p, 0, sizeof *p);
  p->rows = B * H * Q, p->cols = K, p->dtype = dtype, p->op = op;
  p->mask = (o->causal ? GEN_MASK_CAUSAL : 0) | (o->window >= 0 ? GEN_MASK_WINDOW : 0) | (o->key_lengths ? GEN_MASK_PADDING : 0);
  p->bias = op != GEN_ATTN ? GEN_BIAS_NONE : o->bias ? GEN_BIAS_TENSOR : o->alibi_slopes ? GEN_BIAS_ALIBI : GEN_BIAS_NONE;
  p->capped = o->softcap > 0.f;   /* the softcap's kernel (a source of its own), and the backward reads x */
  st_status s = check_args(c, dtype, ST_SOFTMAX, p->rows, K);
  if (s) return s;
  if (tune_attn_check(p, &t, err, sizeof err)) return fail(ST_EINVAL, "%s: %s", fn, err);
  if (p->bias == GEN_BIAS_TENSOR && (o->bias_type < ST_F32 || o->bias_type > ST_ATTN_BIAS_BOOL))
    return fail(ST_EINVAL, "%s: bad bias_type %d: expected ST_F32, ST_F16, ST_BF16 or ST_ATTN_BIAS_BOOL", fn, o->bias_type);
  const unsigned bsize = p->bias != GEN_BIAS_TENSOR || o->bias_type == ST_F32 ? 4 : o->bias_type == ST_ATTN_BIAS_BOOL ? 1 : 2;
  if ((uintptr_t)o->key_lengths % 4 || (uintptr_t)o->alibi_slopes % 4 || (uintptr_t)o->bias % bsize)
    return fail(ST_EINVAL, "%s: key_lengths, alibi_slopes or bias not aligned to its elements (4, 4, %u bytes)", fn, bsize);
  if (p->bias == GEN_BIAS_TENSOR && o->alibi_slopes)
    return fail(ST_EINVAL, "%s: alibi_slopes and a bias tensor: one bias kind at a time", fn);
  if (p->bias == GEN_BIAS_TENSOR && (o->bias_stride_b < 0 || o->bias_stride_h < 0 || o->bias_stride_q < 0))
    return fail(ST_EINVAL, "%s: bad bias strides %lld, %lld, %lld: expected >= 0 (0: broadcast)", fn,
                (long long)o->bias_stride_b, (long long)o->bias_stride_h, (long long)o->bias_stride_q);
  tune_attn_params(p, &t, a);
  a->key_lengths = (uintptr_t)o->key_lengths, a->slopes = p->bias == GEN_BIAS_ALIBI ? (uintptr_t)o->alibi_slopes : 0;
  if (p->bias == GEN_BIAS_TENSOR) {
    a->bias = (uintptr_t)o->bias, a->bias_sb = o->bias_stride_b, a->bias_sh = o->bias_stride_h, a->bias_sq = o->bias_stride_q;
    p->bias_type = o->bias_type, a->order = am_order(a->bias_sb, a->bias_sh, a->bias_sq, B, H);
  }
  return ST_OK;
}

/* Launch attention problem p with block a on the n tensors of buf (gen_Op's order; 0 for an
** input the kernel does not read, which is not checked), the last one the output: unaligned when
** any tensor it reads differs from the output in alignment mod 16. */
static st_status run_attn(st_ctx *c, const gen_Problem *p, const AttnParams *a, const uintptr_t *buf, int n,
                          struct CUstream_st *stream)
{
  const int es = p->dtype == ST_F32 ? 4 : 2;
  const char *fn = attn_fn(p->op);
  uintptr_t odd = 0;
  Memo m;
  char err[512];
  st_status s;
  tune_Args args = { { 0 }, p->rows, 0, a, p->cols };
  for (int i = 0; i < n; i++) {
    if (buf[i] % (unsigned)es) return fail(ST_EINVAL, "%s: pointers not aligned to the %d-byte elements", fn, es);
    if (buf[i]) odd |= buf[i] ^ buf[n - 1];
    args.buf[i] = (CUdeviceptr)buf[i];
  }
  if ((s = lookup(c, p->dtype, memo_op(p->op, p->mask, p->bias, p->bias_type, p->capped), odd % 16 != 0, p->rows, p->cols, a,
                  &m)))
    return s;
  int push;
  CUresult r = enter(c, &push);
  if (!r) r = tune_launch(&c->drv, m.fn, &m.launch, &args, m.resident, (CUstream)stream);
  leave(c, push);
  if (r) return fail(ST_ECUDA, "%s launch (%s): %s", fn, m.config, tune_cu_error(&c->drv, r, err, sizeof err));
  return ST_OK;
}

st_status st_attention_softmax(st_ctx *c, st_dtype dtype, const st_attn_options *o, const void *x, void *y, int64_t B,
                               int64_t H, int64_t Q, int64_t K, struct CUstream_st *stream)
{
  gen_Problem p;
  AttnParams a;
  st_status s = check_attn(c, dtype, GEN_ATTN, o, B, H, Q, K, &p, &a);
  if (s) return s;
  if (!x || !y) return fail(ST_EINVAL, "st_attention_softmax: a tensor pointer is NULL");
  const uintptr_t buf[] = { (uintptr_t)x, (uintptr_t)y };
  return run_attn(c, &p, &a, buf, 2, stream);
}

st_status st_attention_softmax_backward(st_ctx *c, st_dtype dtype, const st_attn_options *o, const void *x, const void *y,
                                        const void *dy, void *dx, int64_t B, int64_t H, int64_t Q, int64_t K,
                                        struct CUstream_st *stream)
{
  gen_Problem p;
  AttnParams a;
  st_status s = check_attn(c, dtype, GEN_ATTN_BW, o, B, H, Q, K, &p, &a);
  if (s) return s;
  if (!y || !dy || !dx) return fail(ST_EINVAL, "st_attention_softmax_backward: a tensor pointer is NULL");
  if (a.softcap > 0.f && !x)
    return fail(ST_EINVAL, "st_attention_softmax_backward: x (the scores) is NULL with softcap %g: the gradient needs it", a.softcap);
  const uintptr_t buf[] = { a.softcap > 0.f ? (uintptr_t)x : 0, (uintptr_t)y, (uintptr_t)dy, (uintptr_t)dx };
  return run_attn(c, &p, &a, buf, 4, stream);
}

/* The config of attention op `op` for these options. */
static st_status config_attn(st_ctx *c, st_dtype dtype, int op, const st_attn_options *o, int64_t B, int64_t H, int64_t Q,
                             int64_t K, char *out, int outlen)
{
  gen_Problem p;
  AttnParams a;
  Memo m;
  st_status s = check_attn(c, dtype, op, o, B, H, Q, K, &p, &a);
  if (!s) s = lookup(c, dtype, memo_op(op, p.mask, p.bias, p.bias_type, p.capped), 0, p.rows, K, &a, &m);
  if (!s && out && outlen > 0) snprintf(out, (size_t)outlen, "%s", m.config);
  return s;
}

st_status st_config_attention(st_ctx *c, st_dtype dtype, const st_attn_options *o, int64_t B, int64_t H, int64_t Q, int64_t K,
                              char *out, int outlen)
{
  return config_attn(c, dtype, GEN_ATTN, o, B, H, Q, K, out, outlen);
}

st_status st_config_attention_backward(st_ctx *c, st_dtype dtype, const st_attn_options *o, int64_t B, int64_t H, int64_t Q,
                                       int64_t K, char *out, int outlen)
{
  return config_attn(c, dtype, GEN_ATTN_BW, o, B, H, Q, K, out, outlen);
}

st_status st_wait(st_ctx *c)
{
  if (!c) return fail(ST_EINVAL, "st_wait: ctx is NULL");
  pthread_mutex_lock(&c->mu);
  CUresult r = c->drv.cuCtxPushCurrent(c->cu);
  for (int i = 0; !r && i < c->cap; i++)
    if (c->memo[i].used && c->memo[i].job) {
      bg_wait(c->bg, c->memo[i].job);
      take(c, &c->memo[i]);
    }
  if (!r) c->drv.cuCtxPopCurrent(NULL);
  pthread_mutex_unlock(&c->mu);
  return r ? fail(ST_ECUDA, "st_wait: cannot use the GPU's context") : ST_OK;
}

st_status st_get_stats(st_ctx *c, st_stats *out)
{
  if (!c || !out) return fail(ST_EINVAL, "st_get_stats: %s is NULL", !c ? "ctx" : "out");
  pthread_mutex_lock(&c->mu);
  *out = c->stats;
  pthread_mutex_unlock(&c->mu);
  return ST_OK;
}

/* Memo entry m of a softmax or cross-entropy op as st_untuned lists it. */
static st_problem problem_of(const Memo *m)
{
  const int op = m->op % GEN_NOP, ce = op == GEN_CE || op == GEN_CE_LOSS, bw = !ce && op >= GEN_SOFTMAX_BW;   /* as st_softmax_backward numbers them */
  return (st_problem){ m->rows, m->cols, (st_dtype)m->dtype, ce ? ST_SOFTMAX : (st_op)(op - (bw ? GEN_SOFTMAX_BW : 0)), bw,
                       ce ? (op == GEN_CE ? ST_KIND_CE : ST_KIND_CE_LOSS) : ST_KIND_SOFTMAX };
}

/* Memo entry m of an attention op (its kinds in its memo op: memo_op) as st_untuned_attention lists it. */
static st_attn_problem attn_problem_of(const Memo *m)
{
  const AttnParams *a = &m->attn;
  gen_Problem k;
  memo_kinds(m->op, &k);
  return (st_attn_problem){ .B = m->rows / a->h / a->q, .H = a->h, .Q = a->q, .K = m->cols, .causal_offset = a->offset,
                            .window = a->window, .scale = a->scale, .softcap = a->softcap, .dtype = (st_dtype)m->dtype,
                            .backward = k.op == GEN_ATTN_BW, .mask = k.mask, .bias = k.bias };
}

/* The untuned problems of one list (attn: the attention ops', into st_attn_problem out[]; else
** st_problem out[]), each at its number; how many there are, or -1 (fn names the call). */
static int untuned_list(st_ctx *c, int attn, void *out, int cap, const char *fn)
{
  if (!c || cap < 0 || (cap > 0 && !out))
    return fail(ST_EINVAL, "%s: %s", fn, !c ? "ctx is NULL" : cap < 0 ? "cap < 0" : "out is NULL"), -1;
  pthread_mutex_lock(&c->mu);
  const int n = attn ? c->nuntuned_attn : c->nuntuned;
  for (int i = 0; i < c->cap; i++) {
    const Memo *m = &c->memo[i];
    if (!m->used || !m->untuned || m->untuned > cap || (m->attn.q > 0) != attn) continue;   /* attention entries hold Q */
    if (attn) ((st_attn_problem *)out)[m->untuned - 1] = attn_problem_of(m);
    else ((st_problem *)out)[m->untuned - 1] = problem_of(m);
  }
  pthread_mutex_unlock(&c->mu);
  return n;
}

int st_untuned(st_ctx *c, st_problem *out, int cap)
{
  return untuned_list(c, 0, out, cap, "st_untuned");
}

int st_untuned_attention(st_ctx *c, st_attn_problem *out, int cap)
{
  return untuned_list(c, 1, out, cap, "st_untuned_attention");
}
