/*
** gen.h — the generator: a problem and a config string go in, CUDA source comes out (Lua
** templates in templates/), and NVRTC turns source into a cubin. Needs no GPU.
**
** Every function returns 0 on success. On failure it returns nonzero and leaves a one-line
** message: in the state (gen_error) for functions taking a gen_State, else in err[errlen].
*/
#ifndef GEN_H
#define GEN_H

#include <stddef.h>
#include <stdint.h>

enum { GEN_F32, GEN_F16, GEN_BF16, GEN_NDTYPE };
/* backward ops: dx from the forward's output y and the gradient dy (two inputs); cross-entropy
** ops: loss and lse per row (and for GEN_CE the logits' gradient) from logits and labels;
** attention_softmax: softmax of masked, biased, scaled scores (templates/attn.cu), and its backward
** (templates/attn_bw.cu) */
enum { GEN_SOFTMAX, GEN_LOG_SOFTMAX, GEN_SOFTMAX_BW, GEN_LOG_SOFTMAX_BW, GEN_CE, GEN_CE_LOSS, GEN_ATTN, GEN_ATTN_BW, GEN_NOP };

/* attention_softmax's mask and bias kinds: template knobs, part of its problem and cache key
** (as templates/attn_mask.h numbers them). A mask kind is a set of bits: causal 1, window 2,
** padding 4 (padding_causal_window 7). */
enum { GEN_MASK_NONE, GEN_MASK_CAUSAL, GEN_MASK_WINDOW, GEN_MASK_CAUSAL_WINDOW, GEN_MASK_PADDING, GEN_MASK_PADDING_CAUSAL,
       GEN_MASK_PADDING_WINDOW, GEN_MASK_PADDING_CAUSAL_WINDOW, GEN_NMASK };
enum { GEN_BIAS_NONE, GEN_BIAS_ALIBI, GEN_BIAS_TENSOR, GEN_NBIAS };

/* The floor an op is timed against: a copy of its tensor, a kernel reading two tensors and
** writing a third (st_add), or one reading the tensor and writing a float a row (st_read_rows).
** GEN_FLOOR_MASKED (attention_softmax): a copy over the mask's pattern, reading the visible
** elements and writing every one (st_attn_floor); GEN_FLOOR_MASKED_BW (its backward): the visible
** elements of y and dy (and x under a softcap) read, every one of dx written (st_attn_bw_floor). */
enum { GEN_FLOOR_COPY, GEN_FLOOR_ADD, GEN_FLOOR_READ, GEN_FLOOR_MASKED, GEN_FLOOR_MASKED_BW };

/* What an op is, for every layer: the tensors it moves, its kernels' arguments, the tuner's fill
** and check kernels (templates/aux.cu) and its floor. A kernel is called as
** f(buf[0], ..., buf[nbufs-1], rows, workspace[, params]): softmax (in, out), the backward
** ops (y, dy, dx), cross-entropy (logits, labels, dx, loss, lse) with a CeParams block
** (templates/ce_params.h), attention_softmax (x, y) with an AttnParams block (attn_params.h), its
** backward (x, y, dy, dx) with one too (x read only under a softcap). */
typedef struct gen_Op {
  const char *name;
  int reads, writes;        /* rows x cols tensors of the dtype read and written */
  int row_bytes;            /* bytes moved per row besides them (labels, loss, lse) */
  int nbufs;                /* pointer arguments before rows */
  int params;               /* a parameter block by value after the workspace: 1 CeParams, 2 AttnParams */
  const char *fill, *check; /* the tuner's kernels */
  int floor;                /* GEN_FLOOR_* */
  const char *floor_text;   /* the floor, in words */
} gen_Op;

typedef struct gen_Problem {
  int64_t rows, cols;
  int dtype, op;
  int arch;                 /* compute capability, 90 for sm_90 */
  /* device limits; 0 takes the arch's defaults from templates/space.lua */
  int sms, smem_block, cluster;
  int full;                 /* gen_space lists the full grid (to check pruning), not the space */
  int mask, bias;           /* attention_softmax: GEN_MASK_*, GEN_BIAS_* (0 for the other ops) */
  int bias_type;            /* bias tensor: its elements (0 float32, 1 float16, 2 bfloat16, 3 bool: st_dtype
                            ** and ST_ATTN_BIAS_BOOL), a kernel source each; not in configs or cache
                            ** keys (the tuner times float32) */
  int64_t visible;          /* attention ops: elements of each input its kernels read (0: all), for
                            ** gen_problem_bytes */
  int capped;               /* a softcap: the kernel of it, a source of its own (ce.cu, attn.cu and
                            ** attn_bw.cu render one entry point, named ..._cap; configs and cache keys
                            ** do not name it); attention_softmax_backward reads x too (gen_problem_bytes) */
  const char *only;         /* a config string: gen_space lists that config alone (NULL: not) */
  int any_width;            /* a stand-in: one kernel for every width (the class 1..2^31-1; vec=1 then), which
                            ** the kernel set holds for kinds it has no classes of (docs/kernel-set.md) */
} gen_Problem;

/* Whether a kernel's entry point is a softcap's (st_cross_entropy_cap, st_attention_softmax_cap, ...:
** a source of its own, gen_Problem.capped). A cached entry names its kernel, so this says how it
** was tuned. */
int gen_capped_name(const char *name);

/* The width class of a row of `cols` elements: the widths [lo, hi] one kernel serves (its knobs
** sized for hi, its vectors for lo; the kernel takes its width at run time). Widths up to 64
** are classes of one (narrow rows, where a row ends in its last vector and sector matters);
** above, each octave (2^k, 2^(k+1)] is cut into 8 classes of 2^(k-3) widths, so a class's widths
** differ by less than 12.5%. templates/space.lua holds the same rule and refuses a problem whose
** class differs from it, so the rule is part of the templates' hash (cache keys). */
void gen_width_class(int64_t cols, int64_t *lo, int64_t *hi);

/* How a kernel (its arguments: gen_Op) is launched: grid = ceil(rows/rows_per_block) *
** blocks_per_row blocks of `threads`, in clusters of `cluster` blocks when nonzero, with `smem`
** dynamic shared bytes. coop: a cooperative launch whose grid is capped at the blocks resident
** at once, with a workspace of 8 bytes of counters for each of ws_groups groups (zeroed before
** the first launch; the kernel leaves them zeroed), then `workspace` bytes per group of
** blocks_per_row blocks. coop 2 (xchg=claim): the grid is every resident block, not whole
** groups; the kernel's blocks claim parts of any row and share the first group's workspace. */
typedef struct gen_Launch {
  int threads, rows_per_block, blocks_per_row, cluster, smem, coop, workspace, ws_groups;
  int op;                   /* the problem's op: its gen_Op says how the kernel is called */
} gen_Launch;

typedef struct gen_Kernel {
  char *source;
  char name[64];            /* the extern "C" kernel in source */
  char config[256];         /* canonical config string */
  gen_Launch launch;
} gen_Kernel;

typedef struct gen_Cubin {
  void *data;
  size_t size;
  char *log;                /* NVRTC's log, kept even on success */
  char *ptx;                /* the PTX the cubin was assembled from */
  char options[256];        /* the options compiled with, space separated */
  int regs, stack, spill_stores, spill_loads;   /* from ptxas -v; -1 when not reported */
  double ms;                /* compile time */
  int kept;                 /* 1: read from a kept file (cache_compile), without log or PTX */
} gen_Cubin;

typedef struct gen_State gen_State;

/* dir: a templates folder to use instead of the ones built into the binary (NULL). */
int gen_open(gen_State **g, const char *dir, char *err, size_t errlen);
void gen_close(gen_State *g);
const char *gen_error(const gen_State *g);

int gen_space(gen_State *g, const gen_Problem *p, char ***configs, int *n);
void gen_free_list(char **list, int n);
int gen_canon(gen_State *g, const gen_Problem *p, const char *config, char *out, size_t outlen);
int gen_render(gen_State *g, const gen_Problem *p, const char *config, gen_Kernel *k);
/* A config chosen without measuring; unaligned: input and output differ in alignment mod 16. */
int gen_heuristic(gen_State *g, const gen_Problem *p, int unaligned, char *out, size_t outlen);
/* A kernel for a shape nobody tuned (templates/untuned.lua, docs/untuned.md): the nearest of the
** user's tuned entries and the default table's (its text, or NULL) adapted to p, else the
** heuristic. hash: these templates' fingerprint, to report a stale table. */
typedef struct gen_Tuned {
  int64_t rows, cols;
  int dtype, op;
  const char *config;
} gen_Tuned;
typedef struct gen_Choice {
  char config[256];
  char source[512];         /* where it came from: a table entry, a user entry, a rule */
  char note[512];           /* "" or what the caller should report (a stale table) */
} gen_Choice;
int gen_untuned(gen_State *g, const gen_Problem *p, int unaligned, const char *table, const char *table_name,
                const char *hash, const gen_Tuned *user, int nuser, gen_Choice *out);
/* The default table built in for arch (templates/defaults/sm_XX.tsv), or read from the templates
** folder; 0 with *text NULL when there is none. *text is malloc'ed. */
int gen_default_table(gen_State *g, int arch, char **text, char *name, size_t namelen);
int gen_aux(gen_State *g, const gen_Problem *p, const char *name, char **source);
void gen_kernel_free(gen_Kernel *k);
/* All template sources with their names, for a fingerprint of the generator. */
int gen_sources(gen_State *g, char **text, size_t *len);
/* One line per knob: name, values, what it does. */
int gen_knobs(gen_State *g, char **text);

/* NVRTC; safe to call from several threads at once. arch as in gen_Problem. */
int gen_compile(const char *source, const char *name, int arch, gen_Cubin *out, char *err, size_t errlen);
/* As gen_compile, but without the line table (a third of the bytes): the kernel set's cubins. */
int gen_compile_lean(const char *source, const char *name, int arch, gen_Cubin *out, char *err, size_t errlen);
/* As gen_compile, but PTX for the virtual arch compute_<arch>: data is the PTX text (its NUL
** counted in size), which the driver compiles for whatever GPU loads it; no ptxas counts. */
int gen_compile_ptx(const char *source, const char *name, int arch, gen_Cubin *out, char *err, size_t errlen);
void gen_cubin_free(gen_Cubin *c);
/* The options gen_compile gives NVRTC for arch, space separated (part of a kept cubin's key). */
void gen_compile_options(int arch, char *text, size_t n);
int gen_nvrtc_version(int *major, int *minor);
/* The name NVRTC compiles `name` under: a fixed absolute one (/softmax-tune/name) that puts no
** directory of the host in the cubin's line table (part of a kept cubin's key). */
void gen_source_name(const char *name, char *out, size_t n);

/* What the templates cannot say of a problem (every gen_ function taking one checks it): a
** cross-entropy over one class, whose loss and gradient are 0 whatever the logits (a caller's
** mistake; torch's own does not catch it). 0 if p is fine, else 1 with err. */
int gen_check_problem(const gen_Problem *p, char *err, size_t errlen);

/* Parsing shared by the CLI and the library; err names the bad value. */
int gen_parse_shape(const char *s, int64_t *rows, int64_t *cols, char *err, size_t errlen);
int gen_parse_dtype(const char *s);       /* -1 if unknown */
int gen_parse_op(const char *s);          /* -1 if unknown */
int gen_parse_arch(const char *s);        /* "sm_90" or "90" -> 90; -1 if malformed */
const char *gen_dtype_name(int dtype);
const char *gen_op_name(int op);
int gen_dtype_size(int dtype);
/* The descriptor of op (NULL when unknown). */
const gen_Op *gen_op(int op);
/* Input tensors of op: 1 (forward, cross-entropy), 2 (backward: y and dy). */
int gen_op_inputs(int op);
/* Bytes op moves through DRAM for rows x cols of dtype: its tensors read and written, and the
** per-row bytes (labels, loss, lse). */
int64_t gen_op_bytes(int op, int64_t rows, int64_t cols, int dtype);
/* As gen_op_bytes for p, but an attention problem with p->visible set reads only those elements
** of each input (and the backward's x too when p->capped). */
int64_t gen_problem_bytes(const gen_Problem *p);

/* attention_softmax or its backward (mask and bias kinds, an AttnParams block). */
int gen_op_is_attn(int op);
/* attention_softmax's mask and bias kinds by name (none, causal, window, causal_window, padding,
** padding_causal, padding_window, padding_causal_window, also as its parts joined by '+' in any
** order: causal+window, causal+padding; none, alibi, tensor): -1 if unknown. */
int gen_parse_mask(const char *s);
int gen_parse_bias(const char *s);
const char *gen_mask_name(int mask);
const char *gen_bias_name(int bias);
/* The op as the cache keys it: its name, and for the attention ops ":mask:bias" after it
** (attention_softmax:causal:alibi, attention_softmax_backward:causal:none); and back (1 if s is
** no op's key). */
void gen_op_key(int op, int mask, int bias, char *out, size_t n);
int gen_parse_op_key(const char *s, int *op, int *mask, int *bias);

#endif
