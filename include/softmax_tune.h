/*
** softmax_tune.h — the runtime library: softmax and log_softmax, and their backward, over the
** last dimension of a rows x cols tensor on an NVIDIA GPU, with the kernel softmax-tune tuned for that GPU and
** shape (loaded from its cache, checksum verified), or, for shapes not tuned, a heuristic
** kernel, a tuning run, or an error (the miss policy).
**
** Works in the device's primary context, so it shares memory and streams with the CUDA
** runtime and PyTorch. Thread-safe: several host threads may call st_softmax on one context.
** Several GPUs: an st_ctx per device (several on one device are fine too); each call makes its
** device's context current for itself, whatever context the calling thread has current.
** Nothing prints and nothing exits: functions return a status and st_error() says why.
** C99 and C++.
*/
#ifndef SOFTMAX_TUNE_H
#define SOFTMAX_TUNE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_ctx st_ctx;
struct CUstream_st;         /* a CUstream or cudaStream_t; NULL is the default stream */

typedef enum st_dtype { ST_F32 = 0, ST_F16 = 1, ST_BF16 = 2 } st_dtype;
typedef enum st_op { ST_SOFTMAX = 0, ST_LOG_SOFTMAX = 1 } st_op;

typedef enum st_status {
  ST_OK = 0,
  ST_EINVAL = 1,            /* a bad argument: dtype, op, sizes, pointers */
  ST_ENODEV = 2,            /* no driver, or no such GPU */
  ST_ECUDA = 3,             /* the driver failed (launch, load, memory) */
  ST_EMISS = 4,             /* miss policy "error" and the shape is not in the cache */
  ST_ECACHE = 5,            /* the cache could not be opened or written */
  ST_ECOMPILE = 6,          /* generating or compiling a kernel failed */
  ST_ENOMEM = 7
} st_status;

/* What st_softmax does for a shape the cache lacks. */
typedef enum st_miss {
  ST_MISS_DEFAULT = 0,      /* $SOFTMAX_TUNE_MISS (error, heuristic or tune), else heuristic */
  ST_MISS_HEURISTIC = 1,    /* compile a rule-based config with NVRTC (said once via log) */
  ST_MISS_TUNE = 2,         /* tune now, store the winner in the cache, use it */
  ST_MISS_ERROR = 3         /* fail with ST_EMISS */
} st_miss;

typedef struct st_options {
  st_miss miss;
  /* Called with one line of text for notable events (a heuristic kernel used, a tuning run,
  ** a corrupt cache entry skipped); NULL for silence. May be called from any thread. */
  void (*log)(void *ud, const char *message);
  void *log_ud;
} st_options;

/* Open device `device` (an ordinal) with the cache at `cache_path`, or NULL for the default:
** $SOFTMAX_TUNE_CACHE, else $XDG_CACHE_HOME/softmax-tune/cache.db, else
** ~/.cache/softmax-tune/cache.db. On failure *ctx is NULL and st_error(NULL) says why. */
st_status st_open(st_ctx **ctx, int device, const char *cache_path);
st_status st_open_ex(st_ctx **ctx, int device, const char *cache_path, const st_options *options);
/* Close ctx: a kernel compiling in the background (st_wait) is finished first, the queued ones
** dropped. Close every context (or st_wait) before the process exits: exit() while the
** context's thread is inside NVRTC can crash the process (NVRTC's teardown runs under it). The
** Python package waits at exit. */
void st_close(st_ctx *ctx);

/* out = softmax (or log_softmax) of in over each row of cols elements; in and out are device
** pointers to rows*cols elements of dtype, in == out is allowed; enqueued on stream. Kernels
** take rows and cols at run time; one serves a width class (widths within 12.5% of each other,
** each width up to 32 alone): the first call of a (dtype, op, class) loads its kernel, any later
** call of the class, whatever its rows and cols, is a look-up and a launch. */
st_status st_softmax(st_ctx *ctx, st_dtype dtype, st_op op, const void *in, void *out, int64_t rows, int64_t cols,
                     struct CUstream_st *stream);

/* The config string of the kernel st_softmax uses for this problem (loading it if needed). */
st_status st_config(st_ctx *ctx, st_dtype dtype, st_op op, int64_t rows, int64_t cols, char *out, int outlen);

/* The backward of st_softmax over each row of cols elements, from its output y and the gradient
** dy (device pointers to rows*cols elements of dtype) into dx:
**   op ST_SOFTMAX:     dx = y * (dy - sum(dy * y))
**   op ST_LOG_SOFTMAX: dx = dy - exp(y) * sum(dy)
** float32 math; dx may alias dy (or y). Same cache look-up and miss policy as st_softmax (its
** own entries: softmax-tune --op softmax_backward / log_softmax_backward); enqueued on stream. */
st_status st_softmax_backward(st_ctx *ctx, st_dtype dtype, st_op op, const void *y, const void *dy, void *dx, int64_t rows,
                              int64_t cols, struct CUstream_st *stream);

/* The config string of the kernel st_softmax_backward uses for this problem. */
st_status st_config_backward(st_ctx *ctx, st_dtype dtype, st_op op, int64_t rows, int64_t cols, char *out, int outlen);

/* ---- cross-entropy over rows of logits (an LLM head's loss), in one kernel ---- */

typedef enum st_reduction { ST_REDUCE_NONE = 0, ST_REDUCE_SUM = 1, ST_REDUCE_MEAN = 2 } st_reduction;
typedef enum st_index { ST_I32 = 0, ST_I64 = 1 } st_index;

typedef struct st_ce_options {
  int64_t ignore_index;     /* rows with this label: loss 0, gradient 0 (default -100) */
  st_reduction reduction;   /* whose gradient grad is: each row's loss (none), their sum, or their
                            ** mean over the rows not ignored, weighted by their label's weight
                            ** (torch's mean; the default) */
  float label_smoothing;    /* eps in [0, 1]; not together with weight */
  float z_loss;             /* z_loss * lse^2 added to each row's loss (PaLM) */
  float softcap;            /* > 0: logits become softcap * tanh(x / softcap) first (Gemma 2) */
  const float *weight;      /* device float[cols]: class weights, or NULL */
  int64_t row_stride;       /* elements from one row of logits to the next; 0: cols */
  int *bad_label;           /* int the GPU can write (device memory, or mapped pinned host memory),
                            ** or NULL: set to 1 when a label is outside [0, cols) and not
                            ** ignore_index (that row's loss is NaN in any case) */
  void *reduced;            /* device float (or dtype, below), or NULL: the rows' losses reduced as
                            ** `reduction` says (sum or mean, torch's; summed in double in a fixed
                            ** order), by one more small kernel after the loss kernel */
  int reduced_in_dtype;     /* nonzero: *reduced is written in dtype (the logits'), not float32 */
  float *grad_scale;        /* device float, or NULL: with a gradient and reduction sum or mean, the
                            ** gradient is written times the grad_output this stream's last
                            ** st_cross_entropy_scale saw (1 before any, and for float16), and that
                            ** factor is kept here for st_cross_entropy_scale: a steady grad_output
                            ** (gradient accumulation's 1/k, a loss scale) then costs no pass */
} st_ce_options;

/* The defaults: ignore_index -100, reduction mean, nothing else. */
void st_ce_defaults(st_ce_options *o);

/* Per row of logits [rows x cols, dtype, row_stride apart] and its label (labels: device int32 or
** int64 [rows]): loss[row] = (1 - eps) w (lse - z[y]) + eps (lse - mean(z)) + z_loss lse^2 and
** lse[row] = log(sum(exp(z))) (float32 device arrays [rows]), z the softcapped logits; and, when
** grad is not NULL, the gradient of the reduction's loss with respect to the logits into grad
** [rows x cols, dtype, contiguous], in the same kernel: the logits read once, the gradient written
** once. grad may be the logits themselves (in place) when row_stride is cols. grad NULL: the loss
** only (op cross_entropy_loss). float32 math. The sum or mean of the losses goes to o->reduced
** when it is set, else it is the caller's. Same cache and miss policy as st_softmax (softmax-tune --op
** cross_entropy / cross_entropy_loss); enqueued on stream. o NULL: the defaults. */
st_status st_cross_entropy(st_ctx *ctx, st_dtype dtype, const void *logits, const void *labels, st_index label_type,
                           void *grad, float *loss, float *lse, int64_t rows, int64_t cols, const st_ce_options *o,
                           struct CUstream_st *stream);

/* The backward's step after st_cross_entropy wrote a gradient: grad [rows x cols, dtype, contiguous]
** *= grad_output (device, dtype): one scalar (flags 0) or one value a row (flags 1: reduction
** none); flags | ST_GO_FLOAT32: grad_output is float32 (a float32 loss's, as under torch.autocast),
** multiplied unrounded. grad_scale: the forward's o->grad_scale (the factor its gradient was
** written with; NULL: 1). A scalar equal to it costs no pass (1 without grad_scale), else grad is
** multiplied by grad_output / *grad_scale; with grad_scale, the scalar becomes the stream's
** prediction for the next st_cross_entropy (where it lies in [2^-24, 2^24], else 1). No host
** sync. The same problem must have run through st_cross_entropy with a gradient on this context
** (its kernel's module holds this one). Enqueued on stream. */
#define ST_GO_FLOAT32 2
st_status st_cross_entropy_scale(st_ctx *ctx, st_dtype dtype, void *grad, const void *grad_output, const float *grad_scale,
                                 int flags, int64_t rows, int64_t cols, struct CUstream_st *stream);

/* The config string of the kernel st_cross_entropy uses for this problem (grad: 1 with the
** gradient, 0 loss only). */
st_status st_config_cross_entropy(st_ctx *ctx, st_dtype dtype, int grad, int64_t rows, int64_t cols, char *out, int outlen);

/* ---- vocab-parallel cross-entropy: the row steps of one rank's shard of the classes ----
** The classes split over ranks (python/softmax_tune/vocab_parallel.py; docs/linear-cross-entropy.md):
** this rank holds logits [rows x cols] (contiguous) of classes [start, start + cols) of total, labels
** the global classes. A call runs: st_cross_entropy loss-only on the shard (labels 0; label
** smoothing 1 when there is smoothing), ST_VOCAB_STATS, an all-gather of stats over the ranks,
** ST_VOCAB_LOSS; for the gradient ST_VOCAB_WEIGHTS, st_cross_entropy with a gradient (reduction
** sum; no smoothing: class weights w, labels lab, rows in blocks of at most cols; smoothing:
** smoothing 1, labels 0, then ST_VOCAB_RESCALE), ST_VOCAB_FIX. One thread a row (RESCALE: a block),
** enqueued on stream. */
typedef enum st_vocab_step {
  ST_VOCAB_STATS,           /* lse_local, loss_local -> stats [rows][k] (k = 2, 3 with smoothing); bad_label */
  ST_VOCAB_LOSS,            /* stats gathered [world][rows][k] -> lse, loss (double [rows]; NaN: a bad label) */
  ST_VOCAB_WEIGHTS,         /* lse, sg -> a, w, saved, and lab (no smoothing) or delta (smoothing) */
  ST_VOCAB_RESCALE,         /* grad = grad w + delta (times the softcap's derivative at logits) */
  ST_VOCAB_FIX              /* grad's elements at the row's own class and its label, from saved */
} st_vocab_step;

typedef struct st_vocab_args {
  int64_t rows, cols;       /* N, and this shard's classes */
  int64_t start, total;     /* the shard: classes [start, start + cols) of total */
  int64_t world;            /* ranks (ST_VOCAB_LOSS) */
  int64_t ignore_index;
  float label_smoothing, z_loss, softcap;
  st_index label_type;
  const float *weight;      /* device float [total] class weights, or NULL */
  int *bad_label;           /* as st_ce_options' (a bad label: outside [0, total)), or NULL */
  const void *logits, *labels;
  void *grad;               /* [rows x cols], dtype (RESCALE, FIX); may be logits (not under RESCALE with a softcap) */
  const float *lse_local, *loss_local;
  float *stats;
  double *lse, *loss;
  const double *sg;         /* the loss's gradient factor: [1], or [rows] when sg_rows */
  int64_t sg_rows;
  float *w, *delta;
  double *a;
  float *saved;             /* [2][rows] */
  int *lab;
} st_vocab_args;

st_status st_vocab_parallel_step(st_ctx *ctx, st_dtype dtype, st_vocab_step step, const st_vocab_args *a,
                                 struct CUstream_st *stream);

/* ---- attention_softmax: the softmax of attention scores, scaled, capped, biased and masked ---- */

#define ST_ATTN_OFFSET_AUTO INT64_MIN   /* causal_offset: K - Q */

typedef struct st_attn_options {
  float scale;              /* scores are scale * x first (default 1); finite */
  float softcap;            /* > 0: then softcap * tanh(z / softcap) (Gemma 2); 0: none (default) */
  int causal;               /* query q sees keys k <= q + causal_offset only */
  int64_t causal_offset;    /* the diagonal's offset; ST_ATTN_OFFSET_AUTO (default): K - Q, so the last
                            ** query sees every key (chunked prefill, decoding with a KV cache) */
  int64_t window;           /* >= 0: and keys k >= q + causal_offset - window only (a sliding window's
                            ** left width, with or without causal); -1: none (default) */
  const int *key_lengths;   /* device int32 [B]: batch b sees keys [0, key_lengths[b]) (clamped to
                            ** [0, K]), with causal or window too: their keys below it; NULL: none
                            ** (default) */
  const float *alibi_slopes;   /* device float [H]: -slope[h] * |q + causal_offset - k| added (ALiBi);
                               ** NULL: none (default) */
  const void *bias;         /* device tensor of bias_type added to the scores after the softcap (not
                            ** with alibi_slopes): element (b, h, q, k) at bias[b * bias_stride_b + h *
                            ** bias_stride_h + q * bias_stride_q + k], strides in elements, 0 to
                            ** broadcast; read only where the mask leaves k visible; -inf masks.
                            ** An additive mask goes here too, or a bool one. Broadcast over batches
                            ** or heads, it is read from DRAM about once (rows sharing it run
                            ** together). NULL: none (default) */
  int64_t bias_stride_b, bias_stride_h, bias_stride_q;
  int bias_type;            /* its elements: ST_F32 (default), ST_F16, ST_BF16, or ST_ATTN_BIAS_BOOL
                            ** (bytes: nonzero seen, 0 masked; torch's bool attn_mask). 0.4.0 */
} st_attn_options;

#define ST_ATTN_BIAS_BOOL 3

/* The defaults: scale 1, nothing else. */
void st_attn_defaults(st_attn_options *o);

/* y = softmax over the last dim of mask(bias + softcap(scale * x)) for scores x [B, H, Q, K] (device
** pointers to B*H*Q*K elements of dtype, contiguous; y may be x). Masked scores are not read and
** their outputs are 0; a query row that sees no key (or only scores of -inf) is all zeros (torch
** gives NaN there); a NaN or +inf score makes its row NaN. float32 math. The mask kind (none,
** causal, window, causal and window, each with key padding or not) and the bias kind (none, ALiBi,
** a tensor) choose the kernel: each is tuned and cached apart (softmax-tune --op
** attention_softmax --mask ... --alibi | --bias-tensor; a shapes line: st_attn_problem);
** scale, softcap, offset, window and the pointers are launch arguments. Same cache and miss policy
** as st_softmax; a shape not tuned gets a rule's kernel (its tuned kernels for other shapes are not
** adapted yet), and miss policy tune tunes it with Q = H = 1 and these options' kinds. o NULL:
** the defaults. Enqueued on stream. */
st_status st_attention_softmax(st_ctx *ctx, st_dtype dtype, const st_attn_options *o, const void *x, void *y, int64_t B,
                               int64_t H, int64_t Q, int64_t K, struct CUstream_st *stream);

/* The config string of the kernel st_attention_softmax uses for this problem. */
st_status st_config_attention(st_ctx *ctx, st_dtype dtype, const st_attn_options *o, int64_t B, int64_t H, int64_t Q,
                              int64_t K, char *out, int outlen);

/* The backward of st_attention_softmax: dx = k * y * (dy - sum(dy * y)), the sum over each query
** row's visible keys, k = scale, times 1 - tanh(scale * x / softcap)^2 under a softcap. y is the
** forward's output, dy the gradient of the loss by y, dx may be y or dy; x is the forward's scores,
** read only under a softcap (NULL without one). Same options as the forward's: masked elements of
** y, dy (and x) are not read and their dx is 0 whatever dy holds there; alibi_slopes is ignored (a
** bias does not change the gradient: the backward has no bias kind). The mask kind chooses the
** kernel, tuned and cached apart (softmax-tune --op attention_softmax_backward --mask ...); the
** rest as st_attention_softmax. Enqueued on stream. */
st_status st_attention_softmax_backward(st_ctx *ctx, st_dtype dtype, const st_attn_options *o, const void *x, const void *y,
                                        const void *dy, void *dx, int64_t B, int64_t H, int64_t Q, int64_t K,
                                        struct CUstream_st *stream);

/* The config string of the kernel st_attention_softmax_backward uses for this problem. */
st_status st_config_attention_backward(st_ctx *ctx, st_dtype dtype, const st_attn_options *o, int64_t B, int64_t H, int64_t Q,
                                       int64_t K, char *out, int outlen);

/* Which call a problem is of: the softmax ops (st_softmax, st_softmax_backward: op and backward
** say which), or st_cross_entropy with a gradient (cross_entropy) or without (cross_entropy_loss). */
typedef enum st_kind { ST_KIND_SOFTMAX = 0, ST_KIND_CE = 1, ST_KIND_CE_LOSS = 2 } st_kind;

/* A problem this context ran without a tuned kernel (st_untuned). As a line of a shapes file
** for `softmax-tune --shapes FILE`: "ROWSxCOLS dtype op", dtype f32, f16 or bf16, op softmax,
** log_softmax, softmax_backward or log_softmax_backward (backward: st_softmax_backward's), or
** cross_entropy or cross_entropy_loss (kind; op and backward are then 0). kind came last: the
** struct's size is what it was without it. */
typedef struct st_problem {
  int64_t rows, cols;
  st_dtype dtype;
  st_op op;
  int backward;
  int kind;                 /* st_kind */
} st_problem;

/* The problems st_softmax, st_softmax_backward and st_cross_entropy served on this context without a
** tuned kernel (the untuned path, ST_MISS_HEURISTIC: a rule-based config compiled on first use), one
** for each width class (the first shape of it met: tuning it serves the class), in the order
** first met: the first cap of them into out (out may be NULL when cap is 0). Returns how many
** there are in all (more than cap: call again with a larger array), or -1 (ctx NULL, cap < 0, or
** out NULL with cap > 0; st_error says which). A call with differently aligned
** input and output pointers is not listed: its vector-free kernel is never a tuned one. A
** cross-entropy class called with and without a softcap is listed once (one config, two
** kernels). The attention calls' problems are st_untuned_attention's. */
int st_untuned(st_ctx *ctx, st_problem *out, int cap);

/* An attention problem this context ran without a tuned kernel (st_untuned_attention): the first
** call of its width class and kinds, with its launch options (those that change what is timed). As
** a line of a shapes file for `softmax-tune --shapes FILE`: "BxHxQxK dtype op mask=M bias=B", op
** attention_softmax or attention_softmax_backward (backward), M none, causal, window, causal_window,
** padding, padding_causal, padding_window or padding_causal_window (mask's bits: 1 causal, 2
** window, 4 key padding), B none, alibi or tensor (bias: 0, 1, 2), then window=W where window >=
** 0, offset=D where causal_offset is not K - Q, scale=S where scale is not 1, softcap=C where
** softcap > 0. */
typedef struct st_attn_problem {
  int64_t B, H, Q, K;
  int64_t causal_offset;    /* as the kernel used it: K - Q for ST_ATTN_OFFSET_AUTO */
  int64_t window;           /* -1: none */
  float scale, softcap;
  st_dtype dtype;
  int backward;             /* 1: st_attention_softmax_backward's */
  int mask;                 /* causal 1 | window 2 | key padding 4 (key_lengths) */
  int bias;                 /* 0 none, 1 ALiBi, 2 a tensor; the backward's is 0 */
} st_attn_problem;

/* The problems st_attention_softmax and st_attention_softmax_backward served on this context
** without a tuned kernel, as st_untuned lists the others' (one a width class and pair of kinds,
** in the order first met; a bias tensor met in several types, bias_type, is listed once: its
** kernels share the float32 tensor's config): the first cap into out; how many there are, or -1. */
int st_untuned_attention(st_ctx *ctx, st_attn_problem *out, int cap);

/* Wait for the kernels being compiled in the background and put them in use. A class of an
** attention kind the kernel set holds no classes of (ALiBi, a bias tensor, a softcap) runs the
** set's stand-in for that kind on its first calls (correct, slower: one kernel of every width)
** while its own kernel compiles on a thread of the context; later calls take it once ready.
** Benchmarks call this before timing; others need not. Blocks the context's calls meanwhile. */
st_status st_wait(st_ctx *ctx);

/* What a context has done since st_open: how often a call reached past the in-memory table
** (a width class met for the first time) and what that cost. A call whose width class the
** context has met before costs a hash look-up and a launch, nothing of the rest. */
typedef struct st_stats {
  int64_t calls;            /* launches asked for, every op (config look-ups included) */
  int64_t classes;          /* width classes resolved: the calls that went past the in-memory table */
  int64_t cache_reads;      /* look-ups in the cache file (SQLite) */
  int64_t compiles;         /* kernels compiled with NVRTC (a kept cubin read back is not one) */
  int64_t loads;            /* cubins loaded into the GPU's context */
  int64_t tunes;            /* tuning runs (miss policy tune) */
} st_stats;

st_status st_get_stats(st_ctx *ctx, st_stats *out);

/* The message of the last failed call in this thread; ctx may be NULL. */
const char *st_error(const st_ctx *ctx);
const char *st_version(void);

#ifdef __cplusplus
}
#endif

#endif
