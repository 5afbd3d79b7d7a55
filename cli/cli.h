/*
** cli.h — the softmax-tune command's pieces: parsed options and one function per command.
*/
#ifndef CLI_H
#define CLI_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cache.h"
#include "cudrv.h"
#include "gen.h"
#include "tune.h"

#define CLI_VERSION "0.1.0"

enum { CLI_FAST = 1, CLI_FULL = 2 };

/* The ops, as --op and a shapes file name them, for messages. */
#define CLI_OPS "softmax, log_softmax, softmax_backward, log_softmax_backward, cross_entropy, cross_entropy_loss, attention_softmax, attention_softmax_backward"

typedef struct cli_Options {
  const char *command;
  const char *shape, *config, *output, *cache, *templates;
  const char *gpu_model;      /* --gpu-model: cache list/show/clear/export filter */
  int64_t rows, cols;
  int gpu, dtype, op, arch;
  long run;
  int reps;                   /* bench: timing rounds */
  int sms;                    /* --sms: tune on that many of the GPU's SMs (0: all) */
  int max_local;              /* --max-local: local memory a timed config may hold, bytes a thread; -1: not given */
  int force, quiet, log, help, version;
  int full;                   /* --space full: the full grid instead of the pruned space */
  int sweep;                  /* --sweep: 0 not given (tuning: fast), CLI_FAST, CLI_FULL (every config) */
  int format;                 /* 't' table, 'j' JSON, 'c' CSV */
  const char *gpus;           /* --gpu all or a list (0,1,3): a batch */
  const char *shapes;         /* --shapes FILE */
  const char *dtypes, *ops;   /* --dtype, --op lists (with a comma) */
  const char *grid;           /* pretune --grid FILE */
  int from_cache, unaligned;  /* pretune --from-cache, explain --unaligned */
  int with_host, retime;      /* cache export --with-host, cache import --retime */
  const char *restamp;        /* pretune --restamp DIR: the templates the table was made with */
  int add;                    /* pretune --add: the new entries join the table FILE, its others kept */
  int keep_configs;           /* pretune --restamp DIR --keep-configs: kernels may differ, configs carried */
  int gpu_set;                /* --gpu was given */
  const char *build;          /* kernels --build ARCHS: make a kernel set for them */
  int jobs;                   /* kernels --build: compile processes (0: one a core) */
  int64_t widest;             /* kernels --build: classes up to this width only (0: the set's own) */
  int all;                    /* kernels --build --all: every attention dtype and kind too */
  tune_CeOptions ce;          /* --ignore-index ... --labels: the cross-entropy ops' launch options */
  const char *ce_flag;        /* the first of those given, NULL if none */
  int softcap_set;            /* --softcap given: cross-entropy's or attention_softmax's */
  int mask, bias;             /* --mask, --alibi: attention_softmax's kinds (GEN_MASK_*, GEN_BIAS_*) */
  tune_AttnOptions attn;      /* its launch options (--window, --scale, --offset; Q and H of --shape BxHxQxK) */
  const char *attn_flag;      /* the first attention option given, NULL if none */
  const char *attn_arg;       /* the first of them that is a launch argument (needs a shape), NULL if none */
  char **args;                /* words after the options (cache's verb) */
  int nargs;
  char err[1024];
} cli_Options;

void cli_fail(const char *fmt, ...);

/* log.c: the cache filter from --shape, --dtype, --op and --gpu-model; the existing cache
** opened, or the status to exit with after saying why not (a missing one on stdout). */
void cli_filter(const cli_Options *o, cache_Key *f);
int cli_open_cache(cli_Options *o, cache_Db **db, char *path, size_t n);

/* dtype and op as given, or the defaults (f32, softmax); -1 in the options means not given. */
static inline int cli_dtype(const cli_Options *o) { return o->dtype < 0 ? GEN_F32 : o->dtype; }
static inline int cli_op(const cli_Options *o) { return o->op < 0 ? GEN_SOFTMAX : o->op; }

/* The one problem of the options (rows, cols, dtype, op, kinds); the rest zero. */
static inline void cli_problem(const cli_Options *o, gen_Problem *p)
{
  memset(p, 0, sizeof *p);
  p->rows = o->rows, p->cols = o->cols, p->dtype = cli_dtype(o), p->op = cli_op(o);
  p->mask = o->mask, p->bias = o->bias;
  p->capped = o->ce.softcap > 0.f;   /* the softcap's kernel (cross-entropy's or attention's: main.c checks the op) */
}

/* The op of key k as the cache names it (attention_softmax with its kinds), in buf. */
static inline const char *cli_key_op(const cache_Key *k, char *buf, size_t n)
{
  gen_op_key(k->op, k->mask, k->bias, buf, n);
  return buf;
}

/* attention_softmax's options, one line (nothing for the other ops). */
void cli_print_attn(const gen_Problem *p, const tune_AttnOptions *a);

/* What an op's runs are timed against, for log and report: "copy floor", or the op's floor named. */
static inline void cli_floor_name(int op, char *out, size_t n)
{
  const gen_Op *d = gen_op(op);
  if (!d || d->floor == GEN_FLOOR_COPY) snprintf(out, n, "copy floor");
  else snprintf(out, n, "floor (%s)", d->floor_text);
}

int cli_tune(cli_Options *o);
void cli_print_gpu(const tune_Device *d);
/* A cross-entropy problem's options, one line (nothing for the other ops). */
void cli_print_ce(const gen_Problem *p, const tune_CeOptions *ce);
/* The sweep's options for o: the fast sweep, or --sweep full's (or --space full's) whole one. */
void cli_sweep_options(const cli_Options *o, tune_Options *opt);

/* A list of problems, on one GPU or several (batch.c); lists parsed in list.c. */
int cli_batch(cli_Options *o);
/* pretune --restamp DIR -o TABLE (restamp.c) */
int cli_restamp(cli_Options *o);

/* A default table (templates/defaults/sm_XX.tsv) read whole, its lines cut in place, and its
** header's values (NULL or 0 where a line is missing); restamp.c. */
#define CLI_TABLE_LINES 4096
typedef struct cli_Table {
  char *text;
  char *lines[CLI_TABLE_LINES];
  int n, arch, sms;
  const char *gpu, *hash, *made;
} cli_Table;
/* 0, or the exit status after saying why (2 not a table, 1 unreadable); free(t->text) after. */
int cli_read_table(const char *path, cli_Table *t);
/* An entry line (dtype op rows cols frac config) as a problem of arch: 0, or 1 with why. */
int cli_table_entry(const char *line, int arch, gen_Problem *p, double *frac, char config[256], char *why, size_t n);
/* The templates hash of g (the cache key's): 0, or 1 with err. */
int cli_templates_hash(gen_State *g, char hash[65], char *err, size_t errlen);
int cli_is_batch(const cli_Options *o);
struct tune_Unit;
/* The list on these units (GPUs, or fakes in the tests), stored at path, each problem tuned with its
** attention options attn[i] (NULL: the defaults); the exit status. */
int cli_run_batch(const cli_Options *o, const struct tune_Unit *units, int nunits, const gen_Problem *list,
                  const tune_AttnOptions *attn, int n, const char *path);
/* The list of o (--shape, --dtype and --op lists, or --shapes FILE), malloc'ed: the problems and,
** one each, their attention options (the defaults for the other ops); 0, or 1 with err. */
int cli_problems(const cli_Options *o, gen_Problem **out, tune_AttnOptions **attn, int *n, char *err, size_t errlen);
/* A problem of a list as a --shapes line reads: "RxC dtype op", or for the attention ops "BxHxQxK
** dtype op mask=M bias=B" and the launch options not at their defaults (window=W offset=D scale=S
** softcap=C); in buf. */
const char *cli_problem_line(const gen_Problem *p, const tune_AttnOptions *a, char *buf, size_t n);
/* attention's BxHxQxK: rows B*H*Q and cols K, H and Q into a; 0, or 1 with err. */
int cli_parse_attn_shape(const char *shape, int64_t *rows, int64_t *cols, tune_AttnOptions *a, char *err, size_t errlen);
/* An attention option, as a flag (--mask, --window, --offset, --scale) or a shapes line (mask=, bias=,
** window=, offset=, scale=, softcap=) names it, into the kinds and a; 0, or 1 with err naming it. */
int cli_parse_attn(const char *name, const char *value, int *mask, int *bias, tune_AttnOptions *a, char *err, size_t errlen);
/* p as the generator and, for the attention ops, a and their kinds allow it (the backward: no bias); 0, or 1 with err. */
int cli_check_problem(const gen_Problem *p, const tune_AttnOptions *a, char *err, size_t errlen);
/* A whole decimal number (a sign allowed) in 64 bits; a finite float (no blanks either): 0, or -1. */
int cli_parse_int64(const char *s, int64_t *v);
int cli_parse_float(const char *s, float *v);
/* The bytes an attention problem's kernels move, by the scores a leaves visible (tune.c). */
void cli_attn_bytes(gen_Problem *p, const tune_AttnOptions *a);
int cli_parse_dtypes(const char *s, int *out, char *err, size_t errlen);
int cli_parse_ops(const char *s, int *out, char *err, size_t errlen);
/* --gpu: "all" (*n = 0) or distinct ordinals into ord[64]. */
int cli_parse_gpus(const char *s, int *ord, int *n, char *err, size_t errlen);
int cli_explain(cli_Options *o);   /* untuned.c */
int cli_pretune(cli_Options *o);
int cli_space(cli_Options *o);
int cli_emit(cli_Options *o);
int cli_compile(cli_Options *o);
/* Write data to path through a temporary file and a rename: all of it or nothing (generate.c). */
int cli_write_atomic(const char *path, const void *data, size_t n, char *err, size_t errlen);
/* The kernel set: `kernels --build ARCHS -o FILE` makes one, `kernels` lists the built-in one (kernels.c). */
int cli_kernels(cli_Options *o);
int cli_knobs(cli_Options *o);
int cli_log(cli_Options *o);
int cli_cache(cli_Options *o);
int cli_bench(cli_Options *o);
int cli_report(cli_Options *o);
int cli_cache_export(cli_Options *o);
int cli_cache_import(cli_Options *o);

/* Before tune answers with e (made under another driver or NVRTC than k's): verify it again.
** 0 use it, -1 it failed (tune again), 1 an error (said). */
int cli_reverify(cli_Options *o, gen_State *g, const gen_Problem *p, cache_Db *db, const cache_Key *k, const cache_Entry *e);

#endif
