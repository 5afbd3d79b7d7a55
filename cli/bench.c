/*
** bench.c — softmax-tune bench: the cached winner (or, with SOFTMAX_TUNE_MISS set, what that
** miss policy gives: heuristic, the untuned kernel), launched through the runtime library
** (st_softmax, or st_softmax_backward), against the copy floor (for the backward ops the
** two-read-one-write floor; for the attention ops the masked floors), timed as the tuner times (CUDA events, L2 flushed before each
** launch, median), after checking its output once against float64.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "softmax_tune.h"
#include "tune.h"

typedef struct Bench {
  st_ctx *ctx;
  gen_Problem p;
  CUdeviceptr dy;           /* backward ops: the second input */
  tune_Args ce;             /* cross-entropy ops: the tuner's buffers */
  st_reduction reduction;   /* cross-entropy: sum to check (the tuner's scale 1), mean to time */
  char err[1024];
} Bench;

/* The library called with the tuner's buffers and options (its CeParams), so its check holds. */
static st_status call_ce(Bench *b, CUstream s)
{
  st_ce_options o;
  const CUdeviceptr *t = b->ce.buf;
  const CeParams *p = b->ce.params;
  st_ce_defaults(&o);
  o.reduction = b->reduction;
  o.ignore_index = p->ignore;
  o.label_smoothing = p->smoothing;
  o.z_loss = p->zloss;
  o.softcap = p->softcap;
  o.weight = (const float *)(uintptr_t)p->weight;
  o.bad_label = (int *)(uintptr_t)p->flag;
  return st_cross_entropy(b->ctx, (st_dtype)b->p.dtype, (const void *)t[0], (const void *)t[1], p->labels64 ? ST_I64 : ST_I32,
                          b->p.op == GEN_CE ? (void *)t[2] : NULL, (float *)t[3], (float *)t[4], b->p.rows, b->p.cols, &o,
                          (struct CUstream_st *)s);
}

/* attention_softmax's library options from the tuner's block (its key lengths and slopes). */
static const AttnParams *attn_options(const Bench *b, st_attn_options *o)
{
  const AttnParams *p = b->ce.params;
  st_attn_defaults(o);
  o->scale = p->scale, o->softcap = p->softcap, o->causal_offset = p->offset, o->window = p->window;
  o->causal = (b->p.mask & GEN_MASK_CAUSAL) != 0;
  o->key_lengths = (const int *)(uintptr_t)p->key_lengths, o->alibi_slopes = (const float *)(uintptr_t)p->slopes;
  o->bias = (const float *)(uintptr_t)p->bias;
  o->bias_stride_b = p->bias_sb, o->bias_stride_h = p->bias_sh, o->bias_stride_q = p->bias_sq;
  return p;
}

static st_status call_attn(Bench *b, CUdeviceptr in, CUdeviceptr out, CUstream s)
{
  st_attn_options o;
  const AttnParams *p = attn_options(b, &o);
  const int64_t B = b->p.rows / p->q / p->h;
  if (b->p.op == GEN_ATTN_BW)   /* in is y; the scores x are the tuner's third buffer */
    return st_attention_softmax_backward(b->ctx, (st_dtype)b->p.dtype, &o, (const void *)b->ce.buf[0], (const void *)in,
                                         (const void *)b->dy, (void *)out, B, p->h, p->q, b->p.cols, (struct CUstream_st *)s);
  return st_attention_softmax(b->ctx, (st_dtype)b->p.dtype, &o, (const void *)in, (void *)out, B, p->h, p->q, b->p.cols,
                              (struct CUstream_st *)s);
}

static CUresult call(void *ud, CUdeviceptr in, CUdeviceptr out, CUstream s)
{
  Bench *b = ud;
  if (gen_op_is_attn(b->p.op)) {
    st_status rc = call_attn(b, in, out, s);
    if (rc) snprintf(b->err, sizeof b->err, "%s", st_error(b->ctx));
    return rc ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
  }
  const int bw = gen_op_inputs(b->p.op) == 2;
  const st_op op = (st_op)(bw ? b->p.op - GEN_SOFTMAX_BW : b->p.op);
  st_status rc = gen_op(b->p.op)->params ? call_ce(b, s) : bw ? st_softmax_backward(b->ctx, (st_dtype)b->p.dtype, op, (const void *)in, (const void *)b->dy, (void *)out,
                                          b->p.rows, b->p.cols, (struct CUstream_st *)s)
                    : st_softmax(b->ctx, (st_dtype)b->p.dtype, op, (const void *)in, (void *)out, b->p.rows, b->p.cols,
                                 (struct CUstream_st *)s);
  if (rc) snprintf(b->err, sizeof b->err, "%s", st_error(b->ctx));
  return rc ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

/* The config st_attention_softmax (or its backward) takes for the bench's problem. */
static st_status attn_config(Bench *b, char *config, int n)
{
  st_attn_options o;
  const AttnParams *p = attn_options(b, &o);
  return (b->p.op == GEN_ATTN_BW ? st_config_attention_backward : st_config_attention)(
      b->ctx, (st_dtype)b->p.dtype, &o, b->p.rows / p->q / p->h, p->h, p->q, b->p.cols, config, n);
}

/* Rounds of one copy and one softmax each, alternating which goes first; medians. */
static int measure(tune_Gpu *gpu, Bench *b, int rounds, double *copy_us, double *us, char *err, size_t errlen)
{
  double *c = malloc(sizeof *c * (size_t)rounds), *s = malloc(sizeof *s * (size_t)rounds), w[3];
  int rc = !c || !s;
  rc = rc || tune_gpu_time_call(gpu, call, b, 3, w, err, errlen) || tune_gpu_time_call(gpu, NULL, NULL, 3, w, err, errlen);
  for (int k = 0; k < rounds && !rc; k++) {
    if (k % 2) rc = tune_gpu_time_call(gpu, NULL, NULL, 1, &c[k], err, errlen) || tune_gpu_time_call(gpu, call, b, 1, &s[k], err, errlen);
    else rc = tune_gpu_time_call(gpu, call, b, 1, &s[k], err, errlen) || tune_gpu_time_call(gpu, NULL, NULL, 1, &c[k], err, errlen);
  }
  if (!rc) {
    *copy_us = tune_median(c, rounds);
    *us = tune_median(s, rounds);
  }
  free(c), free(s);
  return rc;
}

int cli_bench(cli_Options *o)
{
  tune_Gpu *gpu = NULL;
  gen_State *g = NULL;
  Bench b = { 0 };
  const char *miss = getenv("SOFTMAX_TUNE_MISS");   /* set: its policy (heuristic: the untuned kernel) */
  st_options so = { miss && *miss ? ST_MISS_DEFAULT : ST_MISS_ERROR, NULL, NULL };
  tune_Check chk = { 0 };
  CUdeviceptr in, out;
  CUstream s;
  char config[256] = "";
  double copy_us = 0, us = 0;
  int rc = 2;
  if (!o->shape) return cli_fail("bench needs --shape RxC"), 2;
  if (tune_gpu_open(&gpu, o->gpu, o->err, sizeof o->err)) goto done;
  tune_gpu_ce_options(gpu, &o->ce);
  tune_gpu_attn_options(gpu, &o->attn);
  rc = 1;
  cli_problem(o, &b.p);
  tune_device_limits(tune_gpu_device(gpu), &b.p);
  if (gen_open(&g, NULL, o->err, sizeof o->err)) goto done;
  if ((rc = tune_gpu_prepare(gpu, g, &b.p, 1, o->err, sizeof o->err))) goto done;
  rc = 1;
  const int bw = gen_op_inputs(b.p.op) == 2;
  const st_op op = (st_op)(bw ? b.p.op - GEN_SOFTMAX_BW : b.p.op);
  const int ce = gen_op(b.p.op)->params == 1;
  tune_gpu_buffers(gpu, &in, &out, &s);
  b.dy = tune_gpu_in2(gpu);
  tune_gpu_args(gpu, &b.ce);
  if (gen_op_is_attn(b.p.op)) {
    const AttnParams *a = b.ce.params;
    b.p.visible = tune_attn_visible(&b.p, a);
    b.p.capped = a->softcap > 0.f;
  }
  if (st_open_ex(&b.ctx, o->gpu, o->cache, &so) ||
      (gen_op_is_attn(b.p.op) ? attn_config(&b, config, sizeof config)
       : ce ? st_config_cross_entropy(b.ctx, b.p.dtype, b.p.op == GEN_CE, b.p.rows, b.p.cols, config, sizeof config)
          : (bw ? st_config_backward : st_config)(b.ctx, b.p.dtype, op, b.p.rows, b.p.cols, config, sizeof config))) {
    snprintf(o->err, sizeof o->err, "%s", st_error(b.ctx));
    goto done;
  }
  b.reduction = ST_REDUCE_SUM;
  if (tune_gpu_fill(gpu, o->err, sizeof o->err)) goto done;
  if (call(&b, in, out, s) || tune_gpu_check(gpu, in, out, &chk, o->err, sizeof o->err)) {
    if (b.err[0]) snprintf(o->err, sizeof o->err, "%s", b.err);
    goto done;
  }
  if (chk.bad || chk.bad_sums) {
    snprintf(o->err, sizeof o->err, "the cached kernel is WRONG here: %lld elements and %lld row sums out of tolerance",
             (long long)chk.bad, (long long)chk.bad_sums);
    goto done;
  }
  b.reduction = ST_REDUCE_MEAN;   /* timed as a training step calls it: the mean's factor included */
  if (measure(gpu, &b, o->reps > 0 ? o->reps : 100, &copy_us, &us, o->err, sizeof o->err)) goto done;
  const double bytes = (double)gen_problem_bytes(&b.p);
  printf("%s, %lldx%lld %s %s: %s\n", tune_gpu_device(gpu)->name, (long long)b.p.rows, (long long)b.p.cols,
         gen_dtype_name(b.p.dtype), gen_op_name(b.p.op), config);
  cli_print_ce(&b.p, &o->ce);
  cli_print_attn(&b.p, &o->attn);
  printf("verified against float64 (max err %.2g ulp)\n", chk.max_err);
  printf("%-12s %10s %9s %8s\n", "", "us", "GB/s", "of copy");
  printf("%-12s %10.2f %9.1f %8.3f\n", gen_op_is_attn(b.p.op) ? "masked floor" : b.dy ? "add floor" : b.p.op == GEN_CE_LOSS ? "read floor" : "copy", copy_us,
         bytes / copy_us / 1e3, 1.0);
  printf("%-12s %10.2f %9.1f %8.3f\n", "softmax-tune", us, bytes / us / 1e3, copy_us / us);
  rc = 0;
done:
  if (rc) cli_fail("%s", o->err);
  st_close(b.ctx);
  gen_close(g);
  tune_gpu_close(gpu);
  return rc;
}
