/*
** tune.h — the sweep: every config of the space is compiled (a pool of threads, while the GPU
** measures earlier ones), loaded, pruned on occupancy, spills and launch errors, verified
** against a float64 reference, and timed; the finalists are timed again, interleaved with the
** copy floor, before the winner is named. A backend does the device work: the GPU one in
** gpu.c, or a scripted fake in the tests.
*/
#ifndef TUNE_H
#define TUNE_H

#include <signal.h>
#include <stdint.h>

#include "cache.h"
#include "attn_params.h"
#include "ce_params.h"
#include "cudrv.h"
#include "gen.h"
#include "ref.h"

enum { TUNE_PENDING, TUNE_OK, TUNE_PRUNED, TUNE_FAILED };
/* Backend return codes: this config cannot run or is wrong (go on), or the device is lost. */
enum { TUNE_EOK = 0, TUNE_ECONFIG = 1, TUNE_EFATAL = 2 };

typedef struct tune_Trial {
  char config[256];
  int status;               /* TUNE_OK, TUNE_PRUNED, TUNE_FAILED */
  char reason[256];
  int regs, local_bytes, smem, blocks_sm;
  double occupancy;         /* resident threads / the SM's maximum */
  double compile_ms;
  int kept;                 /* the cubin was read back from the kept folder, not compiled */
  double us, gbps, frac;    /* median time, GB/s (read + write), copy time / this time */
  double max_err;           /* largest |out - ref| in ulps of the dtype at ref (templates/verify.h) */
  int finalist;
} tune_Trial;

typedef struct tune_Backend {
  void *ud;
  /* Compile a kernel; called from several threads at once. */
  int (*compile)(void *ud, const gen_Kernel *k, gen_Cubin *c, char *err, size_t errlen);
  /* Load into slot; fill regs, local_bytes, smem, blocks_sm, occupancy; TUNE_ECONFIG with
  ** t->reason when the config cannot run here. */
  int (*load)(void *ud, int slot, const gen_Kernel *k, const gen_Cubin *c, tune_Trial *t);
  /* Run on fresh random inputs and check every element; TUNE_ECONFIG with t->reason if wrong. */
  int (*verify)(void *ud, int slot, tune_Trial *t);
  /* n launches, each timed alone with L2 flushed before it, into us[]; slot -1 times the copy. */
  int (*time)(void *ud, int slot, int n, double *us, char *err, size_t errlen);
  void (*unload)(void *ud, int slot);
} tune_Backend;

#define TUNE_MAX_REPS 1024

typedef struct tune_Options {
  int threads;              /* compile threads; 0 = one per core */
  double budget_ms;         /* device time to spend timing one config (first round) */
  int min_reps, max_reps;   /* first-round repetitions, at most TUNE_MAX_REPS */
  double margin;            /* finalists: within this fraction of the best */
  int max_finalists;
  int rounds;               /* interleaved re-timing rounds */
  double warmup_ms;         /* > 0: the copy run this long (wall) before the first config, while the
                            ** first compiles run, so that the first configs meet the GPU at its clocks */
  int keep;                 /* > 0: the fast sweep: only the keep best-ranked configs and each
                            ** family's best-ranked (fast.c); 0: every config of the space */
  int siblings;             /* fast sweep: after the first round, up to this many xchg/hint
                            ** siblings of its three leaders, compiled and timed too */
  /* fast sweep: the config an untuned call of p runs (untuned.h's untuned_sweep_config), timed
  ** too when the picks lack it, so that a tune never keeps a slower kernel than no tune; 0 when it
  ** wrote one. NULL: the picks alone. */
  int (*untuned)(gen_State *g, const gen_Problem *p, char *config, size_t n);
  volatile sig_atomic_t *cancel;   /* set (by a signal handler) to stop between configs */
  /* After each config (done of total); t is its trial. */
  void (*progress)(void *ud, int done, int total, const tune_Trial *t, const tune_Trial *best);
  void *progress_ud;
} tune_Options;

typedef struct tune_Result {
  tune_Trial *trials;
  int ntrials;
  int winner;               /* index into trials, -1 when nothing passed */
  gen_Kernel kernel;        /* the winner's */
  gen_Cubin cubin;
  double copy_us;           /* the copy floor, median of the interleaved rounds */
  int64_t bytes;            /* read + written per call */
  double seconds;
  int space;                /* configs in the space; ntrials of them were swept */
  int verified, pruned, failed;
  int cancelled;
} tune_Result;

/* The full sweep: every config of the space, each timed for 30 ms. */
void tune_default_options(tune_Options *o);
/* The fast sweep (the command's default): the 48 best-ranked configs and each family's best,
** worst-ranked first, after a 200 ms warm-up, each timed for 4 ms, then up to 8 finalists
** re-timed interleaved with the copy. */
void tune_fast_options(tune_Options *o);
/* Sweep the space of p. 0 on success (even with no winner); else err says why it stopped. */
int tune_sweep(gen_State *g, const gen_Problem *p, const tune_Backend *b, const tune_Options *o, tune_Result *r,
               char *err, size_t errlen);
void tune_result_free(tune_Result *r);
/* The median of v[0..n) (sorts v). */
double tune_median(double *v, int n);
/* Indices of the best n OK trials, fastest first; returns how many. */
int tune_top(const tune_Result *r, int *idx, int n);

/* ---- the fast sweep's pick (fast.c) ---- */
/* Indices into list[0..n) of the configs the fast sweep keeps, best-ranked first: the keep
** best and the best of each family; returns how many, -1 out of memory. */
int tune_fast_pick(const gen_Problem *p, char **list, int n, int keep, int *idx);
/* list cut to those picks in the reverse order, worst-ranked first, so that the likeliest winners
** are timed last, on a GPU long at its clocks (the others freed), *n their number; nothing changes
** when keep is 0 or covers the list, or p is the full grid or one config. */
int tune_fast_list(const gen_Problem *p, char **list, int *n, int keep, char *err, size_t errlen);
/* p's configs as the sweep times them: its space (gen_space), cut by tune_fast_list to o->keep
** picks, and then o->untuned's config last when the picks lack it; *space: the space's size. */
int tune_fast_space(gen_State *g, const gen_Problem *p, const tune_Options *o, char ***list, int *n, int *space,
                    char *err, size_t errlen);
/* The fast sweep's second round: indices into all[0..nall) of configs not in have[0..nhave)
** that differ from one of the leaders in the xchg or hint knob (or both) alone, at most max, in
** leader order; returns how many. */
int tune_fast_siblings(char *const *leaders, int nl, char *const *all, int nall, char *const *have, int nhave, int *out,
                       int max);

/* The generator's fingerprint (SHA-256 of its templates, as cache_Key.templates) and the NVRTC
** version (as cache_Key.nvrtc). */
int tune_templates_hash(gen_State *g, char out[65], int *nvrtc, char *err, size_t errlen);
/* The cache key for problem p on dev, with the generator's fingerprint and NVRTC version. */
int tune_key(gen_State *g, const tune_Device *dev, const gen_Problem *p, cache_Key *k, char *err, size_t errlen);
/* A trial as the log keeps it. */
void tune_trial_record(const tune_Trial *s, cache_Trial *t);
/* Log the run and store its winner, in one transaction; *run gets the run id. */
int tune_store(cache_Db *db, const cache_Key *k, const tune_Result *r, int64_t *run, char *err, size_t errlen);

/* ---- the GPU backend (gpu.c) ---- */
typedef struct tune_Gpu tune_Gpu;
/* Driver, device `ordinal` and its facts; no context yet. */
int tune_gpu_open(tune_Gpu **g, int ordinal, char *err, size_t errlen);
const tune_Device *tune_gpu_device(const tune_Gpu *g);
/* Run every kernel, the floor's copy too, on `sms` of the GPU's SMs (a green context; the
** count is rounded up to the GPU's step, 8 on Hopper), and say so in its device's SM count:
** a GPU with more bandwidth per SM, for benchmarks (--sms). Before tune_gpu_prepare. */
int tune_gpu_limit_sms(tune_Gpu *g, int sms, char *err, size_t errlen);
/* Context, buffers for p and the fill and check kernels; up to nslots loaded configs.
** Returns 2 when the problem does not fit in the GPU's free memory. */
int tune_gpu_prepare(tune_Gpu *g, gen_State *gen, const gen_Problem *p, int nslots, char *err, size_t errlen);
tune_Backend tune_gpu_backend(tune_Gpu *g);
/* Another architecture's kernels on this GPU (tests/test_arch_ptx.c): the backend compiles PTX
** for compute_<arch> (gen_compile_ptx), which the driver compiles for this GPU at load, and
** loads configs that spill here too (this GPU's register use says nothing of that arch's). */
void tune_gpu_ptx(tune_Gpu *g, int arch);
/* Configs whose kernels hold more than `bytes` of local memory a thread (a stack frame: spills)
** are refused, not timed (0 refuses any). The default, TUNE_MAX_LOCAL: on an H200 the tuner
** found cross-entropy kernels 3-20% faster at 9 of 9 widths where it may time such configs,
** none slower on 9 other problems (docs/design/local-memory.md). */
#define TUNE_MAX_LOCAL 128
void tune_gpu_max_local(tune_Gpu *g, int bytes);
/* For the GPU tests: slot verified, and the check kernel agreeing with the CPU float64
** reference on the whole problem, also after an output element is spoiled or left unwritten. */
int tune_gpu_selftest(tune_Gpu *g, int slot, char *err, size_t errlen);

/* For the bench command and the runtime tests: the prepared buffers, a fresh random input
** (output poisoned), the check kernel over any input/output pair of the problem's shape, and
** n calls of fn timed as the sweep times configs (fn NULL: the copy floor, or the backward ops'
** two-read-one-write floor). */
typedef CUresult (*tune_Call)(void *ud, CUdeviceptr in, CUdeviceptr out, CUstream s);
void tune_gpu_buffers(tune_Gpu *g, CUdeviceptr *in, CUdeviceptr *out, CUstream *s);
/* The backward ops' second input (dy; in is y, out dx), filled with in; 0 for the forward ops. */
CUdeviceptr tune_gpu_in2(tune_Gpu *g);
/* attention_softmax_backward's scores x (its third input, read under a softcap). */
CUdeviceptr tune_gpu_attn_x(tune_Gpu *g);
/* The op's kernel arguments over the prepared buffers (a cross-entropy op's params included). */
void tune_gpu_args(tune_Gpu *g, tune_Args *a);
/* The cross-entropy options kernels are verified and timed with: launch arguments (CeParams),
** not knobs, so one tuned kernel serves them all. ignore_index (rows labelled so: no loss, no
** gradient; fill labels one row in 16 so), label smoothing, z-loss, softcap (0: none), class
** weights (drawn at random), int64 labels (else int32). */
typedef struct tune_CeOptions {
  int64_t ignore;
  float smoothing, zloss, softcap;
  int weight, labels64;
} tune_CeOptions;
/* torch's defaults: ignore_index -100, int64 labels, nothing else. */
void tune_ce_defaults(tune_CeOptions *o);
/* 0 if o is valid (finite, >= 0, smoothing in [0, 1] and not with weights), else 2 with a
** one-line err naming the bad value. */
int tune_ce_check(const tune_CeOptions *o, char *err, size_t errlen);
/* Set them (before tune_gpu_prepare, or between runs); the gradient's scale stays 1. */
void tune_gpu_ce_options(tune_Gpu *g, const tune_CeOptions *o);
/* For the GPU tests (after tune_gpu_prepare): the gradient's scale, a float the kernels read
** (1: none); labels of the host's own [rows] instead of fill's from the next fill on (in the
** options' width, so set the options first; NULL: fill's again); and the flag a bad label
** sets, read and cleared. */
int tune_gpu_ce_scale(tune_Gpu *g, float scale, char *err, size_t errlen);
int tune_gpu_ce_labels(tune_Gpu *g, const int64_t *labels, char *err, size_t errlen);
int tune_gpu_ce_flag(tune_Gpu *g, int *flag, char *err, size_t errlen);
/* attention_softmax's launch arguments (AttnParams; its mask and bias kinds are the problem's):
** the scores [B, H, Q, K] as rows = B*H*Q of K; the causal offset (TUNE_ATTN_AUTO: K - Q);
** the window's left width (-1: none; the window kinds need one >= 0); scale and softcap (0:
** none). The tuner draws key lengths and ALiBi slopes (attn_mask.h's am_fill_*). */
#define TUNE_ATTN_AUTO INT64_MIN
typedef struct tune_AttnOptions {
  int64_t q, h, offset, window;
  float scale, softcap;
} tune_AttnOptions;
/* Q = H = 1, offset K - Q, no window, scale 1, no softcap. */
void tune_attn_defaults(tune_AttnOptions *o);
/* 0 if o fits the problem p (Q and H dividing its rows, a window for the window kinds and only
** for them, finite scale, finite softcap >= 0, offset within +-2^40), else 2 with a one-line err
** naming the bad value. */
int tune_attn_check(const gen_Problem *p, const tune_AttnOptions *o, char *err, size_t errlen);
/* The launch block of o for problem p (pointers 0), and the score elements p's kernels read:
** the visible ones, by the key lengths the tuner times by for padding (gen_Problem.visible). */
void tune_attn_params(const gen_Problem *p, const tune_AttnOptions *o, AttnParams *a);
int64_t tune_attn_visible(const gen_Problem *p, const AttnParams *a);
/* Set them (before tune_gpu_prepare). */
void tune_gpu_attn_options(tune_Gpu *g, const tune_AttnOptions *o);
const tune_Driver *tune_gpu_driver(const tune_Gpu *g);
int tune_gpu_fill(tune_Gpu *g, char *err, size_t errlen);
int tune_gpu_check(tune_Gpu *g, CUdeviceptr x, CUdeviceptr y, tune_Check *c, char *err, size_t errlen);
int tune_gpu_time_call(tune_Gpu *g, tune_Call fn, void *ud, int n, double *us, char *err, size_t errlen);
void tune_gpu_close(tune_Gpu *g);

#endif
