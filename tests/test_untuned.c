/*
** test_untuned.c — the untuned path without a GPU (templates/untuned.lua through gen_untuned):
** the built-in default table parses and was made for these templates; a stale table is said;
** thousands of random problems of every dtype and op, aligned or not, on arches with and
** without a table (and the sm_90 table on other arches), with and without the user's entries,
** each get a config the space's rules accept (gen_canon), before sm_90 none of Hopper's
** families (xchg=dsmem, hold=ring); a bad table is an error.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "check.h"
#include "gen.h"

static uint64_t rng = 20261124;

static double uniform(void)
{
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng >> 11) / 9007199254740992.0;
}

/* log-uniform in [lo, hi] */
static int64_t logu(double lo, double hi)
{
  double v = lo * __builtin_exp(uniform() * __builtin_log(hi / lo));
  return (int64_t)(v + 0.5);
}

static void hash_of(gen_State *g, char hex[65])
{
  char *text;
  size_t len;
  CHECK(gen_sources(g, &text, &len) == 0, "gen_sources: %s", gen_error(g));
  cache_sha256(text, len, hex);
  free(text);
}

/* The built-in table: there, of sm_90, for these templates; its hash checked by the rules too. */
static void table_fresh(gen_State *g, const char *hash, char **text)
{
  char name[256], want[128];
  gen_Choice ch;
  gen_Problem p = { .rows = 4096, .cols = 50257, .dtype = GEN_F32, .op = GEN_SOFTMAX, .arch = 90 };
  CHECK(gen_default_table(g, 90, text, name, sizeof name) == 0 && *text, "no built-in table for sm_90");
  if (!*text) return;
  snprintf(want, sizeof want, "# templates\t%s\n", hash);
  CHECK(strstr(*text, want) != NULL, "the table was made for other templates than these (%.12s): regenerate it with softmax-tune pretune", hash);
  CHECK(strstr(*text, "\n# made\tsoftmax-tune pretune") != NULL, "the table does not say how it was made");
  CHECK(gen_untuned(g, &p, 0, *text, name, hash, NULL, 0, &ch) == 0, "%s", gen_error(g));
  CHECK(ch.note[0] == 0, "fresh table reported: %s", ch.note);
  CHECK(strstr(ch.source, "default table") != NULL, "source: %s", ch.source);
  CHECK(gen_untuned(g, &p, 0, *text, name, "0123456789abcdef", NULL, 0, &ch) == 0, "%s", gen_error(g));
  CHECK(strstr(ch.note, "stale") != NULL, "stale table not reported: '%s'", ch.note);
  CHECK(gen_default_table(g, 80, text + 1, name, sizeof name) == 0 && !text[1], "a table for sm_80?");
}

/* A user's entry wins over the table's when as near. */
static void user_first(gen_State *g, const char *hash, const char *table)
{
  gen_Problem p = { .rows = 5000, .cols = 3000, .dtype = GEN_BF16, .op = GEN_SOFTMAX, .arch = 90 };
  gen_Tuned u = { 4000, 3000, GEN_BF16, GEN_SOFTMAX, "threads=512,items=1,vec=8,reduce=smem,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none" };
  gen_Choice ch;
  CHECK(gen_untuned(g, &p, 0, table, "t", hash, &u, 1, &ch) == 0, "%s", gen_error(g));
  CHECK(strstr(ch.source, "your cache entry 4000x3000") != NULL, "source: %s", ch.source);
  CHECK(strstr(ch.config, "threads=512,") && strstr(ch.config, "reduce=smem"), "config: %s", ch.config);
}

/* A cross-entropy problem takes cross-entropy entries only (ce.cu, not row.cu: another kernel
** text: the table's or the rule): never a softmax entry, however near, nor the reverse; and
** none more than two octaves of row length away. */
static void ce_kind(gen_State *g, const char *hash, const char *table)
{
  static const char CE_CFG[] = "threads=1024,items=2,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem,hint=none";
  gen_Problem p = { .rows = 4096, .cols = 128256, .dtype = GEN_BF16, .op = GEN_CE, .arch = 90 };
  gen_Tuned sm = { 4096, 128256, GEN_BF16, GEN_SOFTMAX, CE_CFG };
  gen_Tuned ce[2] = { { 2048, 151936, GEN_BF16, GEN_CE, CE_CFG }, { 4096, 128256, GEN_BF16, GEN_CE, CE_CFG } };
  gen_Choice ch;
  for (int op = GEN_CE; op <= GEN_CE_LOSS; op++) {
    p.op = op;
    CHECK(gen_untuned(g, &p, 0, table, "t", hash, &sm, 1, &ch) == 0, "%s", gen_error(g));
    CHECK(!strstr(ch.source, "your cache") && !strstr(ch.source, " softmax ("), "%s from a softmax entry: %s", gen_op_name(op), ch.source);
    CHECK(gen_untuned(g, &p, 0, table, "t", hash, ce, 1, &ch) == 0, "%s", gen_error(g));
    CHECK(strstr(ch.source, "your cache entry 2048x151936 bf16 cross_entropy") != NULL, "%s: %s", gen_op_name(op), ch.source);
    CHECK(strstr(ch.config, "xchg=dsmem") != NULL, "%s: %s", gen_op_name(op), ch.config);
  }
  p.cols = 16000;   /* 3.2 octaves under the user's entry: the rule, not the far entry */
  CHECK(gen_untuned(g, &p, 0, NULL, "t", hash, ce, 1, &ch) == 0, "%s", gen_error(g));
  CHECK(strncmp(ch.source, "rule", 4) == 0, "a cross-entropy entry 3 octaves off: %s", ch.source);
  p.cols = 128256;
  p.op = GEN_SOFTMAX;   /* the reverse: a softmax problem, only a cross-entropy entry of its very shape */
  CHECK(gen_untuned(g, &p, 0, NULL, "t", hash, ce + 1, 1, &ch) == 0, "%s", gen_error(g));
  CHECK(strncmp(ch.source, "rule", 4) == 0, "softmax from a cross-entropy entry: %s", ch.source);
}

/* A softcap's cross-entropy (capped) from the default table: 16-bit gradients that a cluster holds
** as floats get r held (hold=reg, 128 threads), wider rows and float32 two reads; loss-only two
** reads of 256 threads of 4 vectors, split over 2 blocks past 32768 classes. */
static void capped_rule(gen_State *g, const char *hash, const char *table)
{
  static const struct { int dtype, op; int64_t cols; const char *want; } C[] = {
    { GEN_BF16, GEN_CE, 128256, "threads=128,items=8,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=16" },
    { GEN_F16, GEN_CE, 50257, "threads=128,items=7,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=8" },
    { GEN_BF16, GEN_CE, 262144, "passes=2" },
    { GEN_F32, GEN_CE, 65536, "passes=2" },
    { GEN_BF16, GEN_CE_LOSS, 128256, "threads=256,items=4,vec=8,reduce=shfl,passes=2,hold=none,rows=1,split=2,xchg=dsmem,hint=stream" },
    { GEN_F32, GEN_CE_LOSS, 200064, "threads=256,items=4,vec=4,reduce=shfl,passes=2,hold=none,rows=1,split=2,xchg=dsmem,hint=stream" },
    { GEN_F16, GEN_CE_LOSS, 32000, "threads=256,items=4,vec=8,reduce=shfl,passes=2,hold=none,rows=1,split=1,xchg=none,hint=stream" },
  };
  gen_Choice ch;
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
    gen_Problem p = { .rows = 4096, .cols = C[i].cols, .dtype = C[i].dtype, .op = C[i].op, .arch = 90, .capped = 1 };
    CHECK(gen_untuned(g, &p, 0, table, "t", hash, NULL, 0, &ch) == 0, "%s", gen_error(g));
    CHECK(strstr(ch.config, C[i].want) != NULL, "softcap %s %s cols %lld: %s (%s), want %s", gen_dtype_name(C[i].dtype),
          gen_op_name(C[i].op), (long long)C[i].cols, ch.config, ch.source, C[i].want);
  }
}

/* The attention rule's packed rows where the space has no 4 vectors a thread (space_attn.lua's
** packed_fwd, narrow_fwd, packed_bw, packed_short and narrow_bw: the tuner's picks, where the fallback ran 0.43-0.89 of them on an
** H200), at the widest row of each class as the runtime asks; and 8192 keys, where it has. */
static void attn_packed_rule(gen_State *g, const char *hash, const char *table)
{
  static const struct { int op; int64_t cols; const char *want; } C[] = {
    { GEN_ATTN, 1536, "threads=128,items=6,vec=8,reduce=shfl,passes=1,hold=packed,rows=4," },
    { GEN_ATTN, 2560, "threads=128,items=5,vec=8,reduce=shfl,passes=1,hold=packed,rows=2," },
    { GEN_ATTN, 5632, "threads=128,items=6,vec=8,reduce=shfl,passes=1,hold=packed,rows=1," },
    { GEN_ATTN, 8192, "threads=128,items=8,vec=8,reduce=shfl,passes=1,hold=packed,rows=1," },
    { GEN_ATTN, 384, "threads=128,items=6,vec=8,reduce=shfl,passes=1,hold=packed,rows=16," },   /* narrow_fwd */
    { GEN_ATTN, 960, "threads=128,items=8,vec=8,reduce=shfl,passes=1,hold=packed,rows=8," },
    { GEN_ATTN, 256, "threads=128,items=4,vec=8,reduce=shfl,passes=1,hold=packed,rows=16," },   /* 4 fill the row */
    { GEN_ATTN, 1024, "threads=128,items=4,vec=8,reduce=shfl,passes=1,hold=packed,rows=4," },
    { GEN_ATTN_BW, 1536, "threads=128,items=3,vec=8,reduce=shfl,passes=1,hold=packed,rows=2," },
    { GEN_ATTN_BW, 2560, "threads=128,items=3,vec=8,reduce=shfl,passes=1,hold=packed,rows=1," },
    { GEN_ATTN_BW, 4608, "threads=128,items=5,vec=8,reduce=shfl,passes=1,hold=packed,rows=1," },
    { GEN_ATTN_BW, 8192, "threads=256,items=4,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1," },   /* not split */
    { GEN_ATTN_BW, 576, "threads=128,items=3,vec=8,reduce=shfl,passes=1,hold=packed,rows=4," },   /* packed_short */
    { GEN_ATTN_BW, 768, "threads=128,items=3,vec=8,reduce=shfl,passes=1,hold=packed,rows=4," },
    { GEN_ATTN_BW, 352, "threads=128,items=3,vec=8,reduce=shfl,passes=1,hold=packed,rows=8," },   /* narrow_bw */
    { GEN_ATTN_BW, 176, "threads=128,items=3,vec=8,reduce=shfl,passes=1,hold=packed,rows=16," },
    { GEN_ATTN_BW, 32, "threads=128,items=1,vec=8,reduce=shfl,passes=1,hold=packed,rows=32," },   /* 4-16 vectors */
    { GEN_ATTN_BW, 56, "threads=128,items=2,vec=8,reduce=shfl,passes=1,hold=packed,rows=32," },
    { GEN_ATTN_BW, 96, "threads=128,items=3,vec=8,reduce=shfl,passes=1,hold=packed,rows=32," },
    { GEN_ATTN_BW, 104, "threads=128,items=2,vec=8,reduce=shfl,passes=1,hold=packed,rows=16," },
  };
  gen_Choice ch;
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
    gen_Problem p = { .rows = 16384, .cols = C[i].cols, .dtype = GEN_BF16, .op = C[i].op, .arch = 90 };
    CHECK(gen_untuned(g, &p, 0, table, "t", hash, NULL, 0, &ch) == 0, "%s", gen_error(g));
    CHECK(strstr(ch.config, C[i].want) != NULL, "%s bf16 cols %lld: %s (%s), want %s", gen_op_name(C[i].op),
          (long long)C[i].cols, ch.config, ch.source, C[i].want);
  }
}

/* An attention op's untuned pick (capped: a softcap's kernel; of the mask and bias kinds given,
** or none) of each case: its config must hold `want`. */
typedef struct { int dtype; int64_t rows, cols; const char *want; } AttnCase;

static void attn_kind_cases(gen_State *g, const char *hash, const char *table, int op, const AttnCase *C, size_t n, int capped,
                            int mask, int bias)
{
  gen_Choice ch;
  for (size_t i = 0; i < n; i++) {
    gen_Problem p = { .rows = C[i].rows, .cols = C[i].cols, .dtype = C[i].dtype, .op = op, .arch = 90, .capped = capped,
                      .mask = mask, .bias = bias };
    CHECK(gen_untuned(g, &p, 0, table, "t", hash, NULL, 0, &ch) == 0, "%s", gen_error(g));
    CHECK(strstr(ch.config, C[i].want) != NULL, "%s%s %s %lldx%lld: %s (%s), want %s", capped ? "softcap " : "", gen_op_name(op),
          gen_dtype_name(C[i].dtype), (long long)C[i].rows, (long long)C[i].cols, ch.config, ch.source, C[i].want);
  }
}

static void attn_cases(gen_State *g, const char *hash, const char *table, int op, const AttnCase *C, size_t n, int capped)
{
  attn_kind_cases(g, hash, table, op, C, n, capped, GEN_MASK_NONE, GEN_BIAS_NONE);
}

/* The attention forward's decode rows (space_attn.lua's decode_fwd: under 4096 rows, 16-bit, 2048
** vectors or fewer): the fewest threads from 128 that hold the row in 2 vectors each, as packed
** words, no hint; 4096 rows or more keep the packed rule, float32 and longer rows the plain rule
** (two reads of 512 from 256 rows; under 256, the row held in 1024 threads). */
static void attn_decode_rule(gen_State *g, const char *hash, const char *table)
{
  static const AttnCase C[] = {
    { GEN_BF16, 512, 3584, "threads=256,items=2,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=none," },
    { GEN_F16, 16, 12288, "threads=1024,items=2,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=none," },
    { GEN_BF16, 16384, 3584, "threads=128,items=4,vec=8,reduce=shfl,passes=1,hold=packed,rows=1," },
    { GEN_BF16, 512, 30720, "threads=512,items=2,vec=8,reduce=shfl,passes=2,hold=none,rows=1,split=1,xchg=none,hint=stream," },
    { GEN_F16, 128, 30720, "threads=1024,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none," },
  };
  attn_cases(g, hash, table, GEN_ATTN, C, sizeof C / sizeof *C, 0);
}

/* A softcap's attention forward (space_attn.lua's capped_fwd): the row as floats (hold=reg) in
** groups of 32, 128 or 256 threads of at most 5 vectors, two reads past 1280 vectors; under 4096
** rows (decoding) the fewest threads that hold 2 vectors each, streamed, past 2048 vectors the row
** held in 1024 threads and past 4096 the plain rule's two reads; float32 as the plain rule. */
static void attn_capped_rule(gen_State *g, const char *hash, const char *table)
{
  static const AttnCase C[] = {
    { GEN_BF16, 32672, 4096, "threads=128,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none," },
    { GEN_F16, 35892, 1024, "threads=128,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=4,split=1,xchg=none,hint=none," },
    { GEN_BF16, 63008, 5760, "threads=256,items=3,vec=8,reduce=shfl,passes=1,hold=reg,rows=1," },
    { GEN_BF16, 184294, 16896, "threads=256,items=2,vec=8,reduce=smem,passes=2,hold=none," },
    { GEN_BF16, 64, 4224, "threads=512,items=2,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=stream," },
    { GEN_BF16, 512, 32768, "threads=1024,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none," },
    { GEN_BF16, 512, 40960, "threads=512,items=2,vec=8,reduce=shfl,passes=2,hold=none,rows=1,split=1,xchg=none,hint=stream," },
    { GEN_F32, 32672, 4096, "threads=256,items=8,vec=4,reduce=shfl,passes=1,hold=reg,rows=2," },
  };
  attn_cases(g, hash, table, GEN_ATTN, C, sizeof C / sizeof *C, 1);
}

/* A softcap's attention backward on decode rows (space_attn.lua's capped_bw: under 4096 rows,
** 16-bit): packed and streamed, in decode_fwd's group up to 2048 vectors, 1024 threads up to 3072,
** packed_rule's config past that; 4096 rows or more keep the plain rule. */
static void attn_capped_bw_rule(gen_State *g, const char *hash, const char *table)
{
  static const AttnCase C[] = {
    { GEN_BF16, 64, 6144, "threads=512,items=2,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=stream," },
    { GEN_BF16, 512, 22528, "threads=1024,items=3,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=stream," },
    { GEN_BF16, 512, 28672, "threads=512,items=7,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=stream," },
    { GEN_BF16, 16384, 6144, "threads=128,items=6,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=none," },
  };
  attn_cases(g, hash, table, GEN_ATTN_BW, C, sizeof C / sizeof *C, 1);
}

/* A 16-bit bias tensor's forward (space_attn.lua's held(): no packed twins in its space): the
** packed rules' shapes as floats, decode groups from 32 threads (seed 20261306's tuned picks);
** float32 keeps softmax's rule. */
static void attn_bias_rule(gen_State *g, const char *hash, const char *table)
{
  static const AttnCase C[] = {
    { GEN_F16, 8, 704, "threads=128,items=2,vec=8,reduce=shfl,passes=1,hold=reg,rows=2,split=1,xchg=none,hint=none," },
    { GEN_BF16, 128, 3584, "threads=256,items=2,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none," },
    { GEN_BF16, 16384, 2304, "threads=128,items=5,vec=8,reduce=shfl,passes=1,hold=reg,rows=2,split=1,xchg=none,hint=none," },
    { GEN_F16, 16384, 5120, "threads=128,items=5,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none," },
    { GEN_F32, 16384, 2304, "threads=256,items=5,vec=4,reduce=shfl,passes=1,hold=reg,rows=2," },
  };
  attn_kind_cases(g, hash, table, GEN_ATTN, C, sizeof C / sizeof *C, 0, GEN_MASK_CAUSAL, GEN_BIAS_TENSOR);
}

/* The row family on an odd short row: fewer threads a row, each with more vectors, when fewer
** slots stay idle; blocks then hold more rows, but no fewer than two a SM are left. */
static void fewer_threads(gen_State *g, const char *hash)
{
  static const char *T = "dtype\top\trows\tcols\tfrac\tconfig\n"
    "f32\tsoftmax\t65536\t128\t1.0\tthreads=128,items=1,vec=4,reduce=shfl,passes=1,hold=reg,rows=4,split=1,xchg=none,hint=none\n"
    "bf16\tsoftmax\t256\t8192\t1.0\tthreads=512,items=2,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none\n";
  gen_Problem odd = { .rows = 200000, .cols = 95, .dtype = GEN_F32, .op = GEN_SOFTMAX, .arch = 90, .sms = 132 };
  gen_Problem few = { .rows = 268, .cols = 9196, .dtype = GEN_BF16, .op = GEN_SOFTMAX, .arch = 90, .sms = 132 };
  gen_Problem pow2 = { .rows = 65536, .cols = 256, .dtype = GEN_F32, .op = GEN_SOFTMAX, .arch = 90, .sms = 132 };
  gen_Choice ch;
  /* 24 vectors (the class 89..96's widest row): 8 threads of 3 (24 slots), not 32 of 1 (32 slots) */
  CHECK(gen_untuned(g, &odd, 0, T, "t", hash, NULL, 0, &ch) == 0, "%s", gen_error(g));
  CHECK(strstr(ch.config, "threads=128,items=3,vec=4,") && strstr(ch.config, "rows=16,"), "200000x95: %s", ch.config);
  /* 1149 vectors: 512 threads of 3 (up to twice the entry's 2), one row a block: 268 blocks */
  CHECK(gen_untuned(g, &few, 0, T, "t", hash, NULL, 0, &ch) == 0, "%s", gen_error(g));
  CHECK(strstr(ch.config, "threads=512,items=3,vec=8,") && strstr(ch.config, "rows=1,"), "268x9196: %s", ch.config);
  /* a row the entry's threads fill exactly keeps them */
  CHECK(gen_untuned(g, &pow2, 0, T, "t", hash, NULL, 0, &ch) == 0, "%s", gen_error(g));
  CHECK(strstr(ch.config, "threads=128,items=1,vec=4,") && strstr(ch.config, "rows=2,"), "65536x256: %s", ch.config);
}

/* Rules of adapt() on a table of one entry: each case's choice holds both strings. */
static void one_entry_rules(gen_State *g, const char *hash)
{
#define ENTRY(e) "dtype\top\trows\tcols\tfrac\tconfig\n" e "\n"
  static const char *GLOBAL16 = ENTRY("bf16\tsoftmax\t16\t262144\t1.0\tthreads=512,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=16,xchg=global,hint=none");
  static const char *DSMEM8 = ENTRY("bf16\tsoftmax\t4\t16384\t1.0\tthreads=128,items=2,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=8,xchg=dsmem,hint=none");
  static const char *GLOBAL128 = ENTRY("f32\tsoftmax\t16\t262144\t1.0\tthreads=128,items=16,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=32,xchg=global,hint=none");
  static const char *GLOBAL256 = ENTRY("bf16\tsoftmax\t16\t1048576\t1.0\tthreads=256,items=8,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=64,xchg=global,hint=stream");
  static const char *DSMEM256 = ENTRY("bf16\tsoftmax\t64\t65536\t1.0\tthreads=256,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem,hint=none");
  static const char *SHORT4 = ENTRY("bf16\tsoftmax\t16\t8\t1.0\tthreads=128,items=1,vec=4,reduce=shfl,passes=1,hold=reg,rows=64,split=1,xchg=none,hint=none");
  static const char *SHORT4BW = ENTRY("bf16\tsoftmax_backward\t1048576\t8\t1.0\tthreads=128,items=1,vec=4,reduce=shfl,passes=1,hold=reg,rows=64,split=1,xchg=none,hint=none");
  static const char *DSMEM2 = ENTRY("f32\tsoftmax\t4096\t4096\t1.0\tthreads=128,items=4,vec=4,reduce=shfl,passes=1,hold=pipe,rows=1,split=2,xchg=dsmem,hint=none");
  static const char *STREAM = ENTRY("f32\tsoftmax\t65536\t128\t1.0\tthreads=128,items=1,vec=4,reduce=shfl,passes=1,hold=reg,rows=4,split=1,xchg=none,hint=stream");
  static const char *CE1024 = ENTRY("bf16\tcross_entropy_loss\t8192\t1024\t1.0\tthreads=128,items=4,vec=8,reduce=shfl,passes=1,hold=packed,rows=4,split=1,xchg=none,hint=stream");
  static const char *SM1024 = ENTRY("bf16\tsoftmax\t8192\t1024\t1.0\tthreads=128,items=4,vec=8,reduce=shfl,passes=1,hold=packed,rows=4,split=1,xchg=none,hint=stream");
  static const char *CE4096 = ENTRY("bf16\tcross_entropy_loss\t8192\t4096\t1.0\tthreads=128,items=16,vec=8,reduce=shfl,passes=1,hold=packed,rows=4,split=1,xchg=none,hint=stream");
#undef ENTRY
  static const struct { const char **table; int64_t rows, cols; int dtype, op; const char *want[2]; } C[] = {
    /* a 16-bit log_softmax from a softmax entry of the split family through global memory holds
    ** its words (hold=packed), not floats: the registers of two blocks a SM; softmax keeps reg */
    { &GLOBAL16, 16, 241878, GEN_BF16, GEN_LOG_SOFTMAX, { "hold=packed,", "split=16,xchg=global" } },
    { &GLOBAL16, 16, 241878, GEN_BF16, GEN_SOFTMAX, { "hold=reg,", "split=16,xchg=global" } },
    /* fewer rows: as many blocks as the entry had, but where that grid is short of the GPU,
    ** blocks no longer than the entry's; 128 x 2 = 256 blocks: the blocks' count alone */
    { &DSMEM8, 7, 12931, GEN_BF16, GEN_SOFTMAX, { "items=2,", "split=8," } },
    { &DSMEM8, 128, 12931, GEN_BF16, GEN_SOFTMAX, { "split=2,", "xchg=dsmem" } },
    /* a part too long for the entry's block: a global exchange from under 256 threads takes
    ** twice the threads before twice the split; from 256 threads, or a cluster, the split first,
    ** a packed entry's words recounted at each split (f16 30x1302937, H100: packed split=64
    ** 0.82 of copy, reg split=128 0.72) */
    { &GLOBAL128, 18, 322762, GEN_F32, GEN_SOFTMAX, { "threads=256,", "split=32," } },
    { &GLOBAL256, 30, 1302937, GEN_F16, GEN_SOFTMAX, { "hold=packed,", "split=64," } },
    { &DSMEM256, 518, 68005, GEN_BF16, GEN_LOG_SOFTMAX, { "threads=256,", "split=8," } },
    /* a row of a few vectors that vec=4 does not tile: vec=2 where it does; a 16-bit row under 32
    ** bytes that nothing tiles: 4-byte vectors too, a thread at most 6 values (bf16 1000000x7,
    ** H100: vec=2 items=3 1.06 of copy, vec=4 0.70), a backward 8 at vec=4 (f16 684634x13:
    ** 2 vectors a thread 0.78, 3 0.55) */
    { &SHORT4, 16, 6, GEN_BF16, GEN_SOFTMAX, { "vec=2,", "items=3," } },
    { &SHORT4, 16, 7, GEN_BF16, GEN_SOFTMAX, { "vec=2,", "items=3," } },
    { &SHORT4, 684634, 13, GEN_F16, GEN_SOFTMAX, { "items=3,vec=2,", "rows=64," } },
    { &SHORT4BW, 684634, 13, GEN_F16, GEN_SOFTMAX_BW, { "items=2,vec=4,", "rows=64," } },
    /* more rows than the GPU needs to fill several waves: the entry's split, not one scaled
    ** up by its rows (f32 584x4194 from 4096x4096 split=2, H100: split=16 items=1 0.47 of tuned) */
    { &DSMEM2, 584, 4194, GEN_F32, GEN_SOFTMAX, { "items=5,", "split=2," } },
    /* short rows that end inside a 32-byte sector drop hint=stream, and so does a class of several
    ** widths (113..120: most of its rows do); a class of whole sectors (64: 256 bytes) keeps it */
    { &STREAM, 246102, 99, GEN_F32, GEN_LOG_SOFTMAX, { "hint=none", "vec=4," } },
    { &STREAM, 246102, 120, GEN_F32, GEN_LOG_SOFTMAX, { "hint=none", "vec=4," } },
    { &STREAM, 246102, 64, GEN_F32, GEN_LOG_SOFTMAX, { "hint=stream", "vec=4," } },
    /* a cross-entropy row a little past its entry's: the entry's group, a thread up to 1.5x its
    ** vectors (176 of the class 1281..1408: 32 threads of 6, not 64 of 3); softmax doubles the
    ** group; where the grown config is not valid (22 words a thread), the doubled group */
    { &CE1024, 65536, 1400, GEN_BF16, GEN_CE_LOSS, { "threads=128,items=6,", "rows=4," } },
    { &SM1024, 65536, 1400, GEN_BF16, GEN_SOFTMAX, { "threads=128,items=3,", "rows=2," } },
    { &CE4096, 12458, 5292, GEN_BF16, GEN_CE_LOSS, { "threads=128,items=11,", "rows=2," } },
  };
  for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
    gen_Problem p = { .rows = C[i].rows, .cols = C[i].cols, .dtype = C[i].dtype, .op = C[i].op, .arch = 90, .sms = 132 };
    gen_Choice ch;
    CHECK(gen_untuned(g, &p, 0, *C[i].table, "t", hash, NULL, 0, &ch) == 0, "%s", gen_error(g));
    CHECK(strstr(ch.config, C[i].want[0]) && strstr(ch.config, C[i].want[1]), "case %zu, %lldx%lld: %s", i,
          (long long)C[i].rows, (long long)C[i].cols, ch.config);
  }
}

static void bad_tables(gen_State *g, const char *hash)
{
  gen_Problem p = { .rows = 64, .cols = 4096, .dtype = GEN_F32, .op = GEN_SOFTMAX, .arch = 90 };
  gen_Choice ch;
  CHECK(gen_untuned(g, &p, 0, "dtype\top\trows\tcols\tfrac\tconfig\nf32\tsoftmax\t64\n", "t", hash, NULL, 0, &ch) != 0 &&
        strstr(gen_error(g), "line 2"), "a short line: %s", gen_error(g));
  CHECK(gen_untuned(g, &p, 0, "f32\tsoftmax\t1\t2\t0.9\tthreads=32\n", "t", hash, NULL, 0, &ch) != 0,
        "a row before the header passed");
  /* a config of no use here (vec=8 f32 is never valid) is skipped for the next, or the heuristic */
  CHECK(gen_untuned(g, &p, 0, "dtype\top\trows\tcols\tfrac\tconfig\nf32\tsoftmax\t64\t4096\t1.0\tthreads=32,vec=8\n", "t", hash,
                    NULL, 0, &ch) == 0 && strstr(ch.source, "rule"), "%s / %s", gen_error(g), ch.source);
}

/* n random problems: every choice a valid config of the space. */
static void random_valid(gen_State *g, const char *hash, const char *table, int n)
{
  static const int ARCHES[] = { 90, 90, 90, 75, 80, 86, 89, 100, 120 };
  gen_Tuned user[3] = {
    { 64, 8192, GEN_F32, GEN_SOFTMAX, "threads=128,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=4,xchg=dsmem,hint=none" },
    { 2, 1 << 20, GEN_BF16, GEN_LOG_SOFTMAX, "threads=512,items=2,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=128,xchg=global,hint=none" },
    { 100000, 100, GEN_F16, GEN_SOFTMAX, "threads=256,items=1,vec=8,reduce=shfl,passes=1,hold=reg,rows=16,split=1,xchg=none,hint=none" },
  };
  int bad = 0, from_table = 0, forward = 0;   /* the table and the user's entries are forward ones */
  for (int i = 0; i < n; i++) {
    gen_Problem p = { .rows = logu(1, 1 << 20), .cols = logu(1, 4 << 20), .dtype = i % 3, .op = (i / 3) % GEN_NOP,
                      .arch = ARCHES[i % 9] };
    int unaligned = uniform() < 0.25;
    gen_Choice ch;
    if (gen_op(p.op)->params && p.cols == 1) p.cols = 2;   /* a loss over one class is refused (bad_input.sh) */
    char canon[256];
    /* the sm_90 table on every arch: as a table of another arch would be, each config checked */
    if (gen_untuned(g, &p, unaligned, uniform() < 0.9 ? table : NULL, "t", hash, user, i % 2 ? 3 : 0, &ch)) {
      CHECK(0, "%lldx%lld: %s", (long long)p.rows, (long long)p.cols, gen_error(g));
      continue;
    }
    int ok = gen_canon(g, &p, ch.config, canon, sizeof canon) == 0 && strcmp(canon, ch.config) == 0;
    if (!ok && bad++ < 5) CHECK(0, "%lldx%lld %d %d sm_%d unaligned %d: %s (%s) is not valid: %s", (long long)p.rows, (long long)p.cols,
                                p.dtype, p.op, p.arch, unaligned, ch.config, ch.source, gen_error(g));
    if (unaligned) CHECK(strstr(ch.config, ",vec=1,") != NULL, "unaligned got %s", ch.config);
    /* off Hopper and later, never a family of theirs (clusters, bulk copies), nor before sm_80 an L2 policy */
    CHECK(p.arch >= 90 || (!strstr(ch.config, "xchg=dsmem") && !strstr(ch.config, "hold=ring")), "sm_%d got %s", p.arch, ch.config);
    CHECK(p.arch >= 80 || !strstr(ch.config, "hint=keep"), "sm_%d got %s", p.arch, ch.config);
    from_table += strstr(ch.source, "adapted") != NULL;
    forward += gen_op_inputs(p.op) == 1 && !gen_op(p.op)->params;   /* the table has no cross-entropy entries */
  }
  CHECK(bad == 0, "%d of %d choices invalid", bad, n);
  CHECK(from_table > forward / 2, "only %d of %d forward choices came from tuned entries", from_table, forward);
  printf("%d random problems: %d from tuned entries, the rest by the rule\n", n, from_table);
}

int main(int argc, char **argv)
{
  gen_State *g;
  char err[1024], hash[65], *table[2] = { NULL, NULL };
  int n = argc > 1 ? atoi(argv[1]) : 6000;
  if (gen_open(&g, NULL, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  clock_t t = clock();
  hash_of(g, hash);
  table_fresh(g, hash, table);
  user_first(g, hash, table[0]);
  ce_kind(g, hash, table[0]);
  capped_rule(g, hash, table[0]);
  attn_packed_rule(g, hash, table[0]);
  attn_capped_rule(g, hash, table[0]);
  attn_capped_bw_rule(g, hash, table[0]);
  attn_bias_rule(g, hash, table[0]);
  attn_decode_rule(g, hash, table[0]);
  bad_tables(g, hash);
  fewer_threads(g, hash);
  one_entry_rules(g, hash);
  random_valid(g, hash, table[0], n);
  printf("%.1f s\n", (double)(clock() - t) / CLOCKS_PER_SEC);
  free(table[0]);
  gen_close(g);
  return check_done("untuned");
}
