/*
** main.c — the softmax-tune command: parses the command line and calls the library.
** Exit status: 0 done, 1 failed while working (GPU, compile, cache), 2 bad input or usage.
*/
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

static const char *const USAGE =
  "usage: softmax-tune [--gpu N] --shape RxC [options]     tune, print the winner, store it\n"
  "       softmax-tune [--gpu N] --op cross_entropy|cross_entropy_loss --shape NxV [--dtype T] [cross-entropy options]\n"
  "       softmax-tune [--gpu N] --op attention_softmax --shape BxHxQxK [--dtype T] [--mask M] [attention options]\n"
  "       softmax-tune [--gpu all|N,N,...] --shape RxC,RxC,... [--dtype T,T] [--op OP,OP] [options]\n"
  "       softmax-tune [--gpu all|N,N,...] --shapes FILE [options]\n"
  "                                                         tune a list, print a summary\n"
  "       softmax-tune log [--shape RxC] [--dtype T] [--op OP] [--run ID] [--json|--csv]\n"
  "       softmax-tune report [--shape RxC] [--dtype T] [--op OP] [--run ID] [-o FILE.html]\n"
  "       softmax-tune cache list|show|clear [--shape RxC] [--dtype T] [--op OP] [--gpu-model NAME]\n"
  "       softmax-tune cache export [--shape RxC] [--dtype T] [--op OP] [--gpu-model NAME] [--with-host] -o FILE\n"
  "       softmax-tune cache import FILE [--retime [--gpu N]]\n"
  "                                  merge a bundle: checked whole, every kernel built here, the\n"
  "                                  faster entry of a key stays\n"
  "       softmax-tune space --shape RxC [--dtype T] [--op OP] [--arch sm_XX]\n"
  "       softmax-tune emit --shape RxC --config STR [--dtype T] [--op OP] [--arch sm_XX]\n"
  "       softmax-tune compile --shape RxC --config STR --arch sm_XX -o FILE [--log]\n"
  "       softmax-tune bench [--gpu N] --shape RxC [--dtype T] [--op OP] [--reps N] [cross-entropy options]\n"
  "       softmax-tune knobs\n"
  "       softmax-tune explain --shape RxC [--dtype T] [--op OP] [--gpu N | --arch sm_XX] [--unaligned] [--softcap C]\n"
  "                                                         the kernel an untuned shape gets, and why\n"
  "       softmax-tune pretune [--gpu N] --grid FILE -o FILE [--add]   tune a grid, write a default table\n"
  "       softmax-tune pretune --from-cache [--gpu-model NAME] -o FILE [--add]   the table from the cache\n"
  "       softmax-tune pretune --restamp DIR -o FILE   carry a table over to these templates\n"
  "       softmax-tune kernels [--arch sm_XX] [--op OP] [--dtype T]   the kernels this build carries\n"
  "       softmax-tune kernels --build sm_90,sm_80 -o FILE [--jobs N] [--all]   make a kernel set (the build does)\n"
  "\n"
  "options:\n"
  "  --gpu N          GPU ordinal (default 0); when tuning, also all or a list such as 0,1,3:\n"
  "                   the problems spread over those GPUs, one thread each (GPUs of one model\n"
  "                   share the list; each other model tunes all of it)\n"
  "  --shape RxC      rows x cols, softmax over each row of cols elements; when tuning, a\n"
  "                   list A,B,C tunes each (with every --dtype and --op given) in one run\n"
  "  --shapes FILE    tune the problems in FILE (or FILE,FILE,...: all of them, in order): one\n"
  "                   'RxC [dtype] [op]' per line, # comments;\n"
  "                   a line without dtype or op takes those of --dtype and --op; attention:\n"
  "                   'BxHxQxK dtype attention_softmax[_backward] mask=M bias=none|alibi|tensor'\n"
  "                   and window=W offset=D scale=S softcap=C as their flags (unset: defaults)\n"
  "  --dtype T        f32 (default), f16 or bf16: input and output; math is float32\n"
  "                   (tuning: a list such as f32,bf16)\n"
  "  --op OP          softmax (default), log_softmax, softmax_backward, log_softmax_backward,\n"
  "                   cross_entropy (loss, lse and the logits' gradient) or cross_entropy_loss\n"
  "                   (loss and lse); tuning: a list such as softmax,log_softmax\n"
  "  --arch sm_XX     target for space/emit/compile without a GPU (default sm_90)\n"
  "  --config STR     one config, as printed by space: threads=256,items=16,...; when tuning,\n"
  "                   that config alone is verified, timed and stored (it pins the shape's\n"
  "                   kernel; implies --force)\n"
  "  -o, --output F   where compile writes the cubin, cache export the bundle, or report its HTML\n"
  "                   page (default softmax-tune-report.html; - for stdout)\n"
  "  --gpu-model NAME cache: only entries of that GPU model, as cache list shows it\n"
  "  --cache PATH     cache database (default $SOFTMAX_TUNE_CACHE, else\n"
  "                   $XDG_CACHE_HOME/softmax-tune/cache.db, else ~/.cache/softmax-tune/cache.db)\n"
  "  --cubins DIR     compiled kernels kept for any later process (default $SOFTMAX_TUNE_CUBINS,\n"
  "                   else $XDG_CACHE_HOME/softmax-tune/cubins, else ~/.cache/softmax-tune/cubins;\n"
  "                   none: compile every kernel)\n"
  "  --force          tune again even when the cache has the answer\n"
  "  --space S        pruned (default): the space's rules; full: every valid config of the\n"
  "                   knob grid, to measure what pruning loses (tune implies --force)\n"
  "  --sweep S        fast (default): the 48 configs a prior fitted on full sweeps ranks\n"
  "                   best, each family's best and the config an untuned call runs, timed\n"
  "                   briefly, the leaders re-timed; full: every config of the space (S of\n"
  "                   --space), each timed for 30 ms; space --sweep fast: the fast sweep's\n"
  "                   configs in the order it times them (best-ranked last, the untuned one after)\n"
  "  --max-local B    tune one problem timing configs whose kernels hold up to B bytes of local\n"
  "                   memory a thread (spills; default 128); a config past it is refused, not\n"
  "                   timed (0 refuses every config that spills)\n"
  "  --sms N          tune one problem on N of the GPU's SMs (rounded up to its step, 8 on\n"
  "                   Hopper), copy floor included: a GPU with more bandwidth per SM, for\n"
  "                   benchmarks (88-96 of an H100's 132 ask what an H200 asks); stored under\n"
  "                   that SM count, so never used for the whole GPU\n"
  "  --quiet          no progress bar, only the winner\n"
  "  --templates DIR  use the templates in DIR instead of the built-in ones\n"
  "  --run ID         log: that run instead of the last one; report: that run alone\n"
  "  --reps N         bench: timing rounds (default 100); bench times the cached winner, or with\n"
  "                   SOFTMAX_TUNE_MISS=heuristic set, the untuned kernel where none is cached\n"
  "  --grid FILE      pretune: the shapes to tune, as --shapes reads them (FILE,FILE,...: one\n"
  "                   table from several grids, one made line)\n"
  "  --from-cache     pretune: write the table from the cache's entries, tuning nothing\n"
  "  --add            pretune: the new entries join the table FILE (same templates, arch and SMs),\n"
  "                   replacing its entries of the same problems and keeping the others\n"
  "  --restamp DIR    pretune: the table FILE was made with the templates in DIR; where every\n"
  "                   entry's kernel is the same under these templates, name these in it\n"
  "  --keep-configs   pretune --restamp: carry each entry's config over where its kernel changed\n"
  "                   but the config is valid under these templates (the made line says so)\n"
  "  --unaligned      explain: input and output pointers aligned differently (vec=1 kernels)\n"
  "  --build ARCHS    kernels: make the kernel set for those archs (sm_90,sm_80) into -o FILE\n"
  "  --jobs N         kernels --build: compile in N processes (default: one a core)\n"
  "  --widest N       kernels --build: only the classes up to width N (with --op, --dtype: a part)\n"
  "  --all            kernels --build: attention's f32, ALiBi and bias-tensor kinds and softcap\n"
  "                   kernels too (3x the bytes)\n"
  "  --with-host      cache export: name this host in the bundle (by default nothing of it is)\n"
  "  --retime         cache import: verify and time each entry of this GPU's model on GPU N\n"
  "                   before merging (the faster-entry rule then compares these times);\n"
  "                   without it, an imported entry is verified before its first use\n"
  "  --json, --csv    log: machine-readable output\n"
  "  --log            compile: print NVRTC's whole log\n"
  "\n"
  "cross-entropy options (tune and bench of one cross_entropy or cross_entropy_loss problem; space,\n"
  "  emit, compile and explain take them too):\n"
  "  launch arguments, not knobs: the tuned config is the same for every value (a softcap's\n"
  "  kernel is compiled from it); the tuner verifies and times it with the ones given\n"
  "  (docs/cross-entropy.md)\n"
  "  --ignore-index I rows labelled I have no loss and no gradient (default -100)\n"
  "  --label-smoothing E  in [0, 1] (default 0); not with --weight\n"
  "  --z-loss C       C * lse^2 added to each row's loss, C >= 0 (default 0)\n"
  "  --softcap S      logits become S * tanh(x / S) first, S > 0 (default 0: none); the\n"
  "                   softcap's kernel is a source of its own, and explain says the rule's choice\n"
  "                   for it (docs/untuned.md)\n"
  "  --weight         class weights (drawn at random)\n"
  "  --labels T       int64 (default) or int32\n"
  "\n"
  "attention_softmax (--op attention_softmax; tune, bench, space, emit, compile, explain, log,\n"
  "  cache): y = softmax over the last dim of mask(bias + softcap(scale * x)), scores [B, H, Q, K]\n"
  "  given as --shape BxHxQxK (rows B*H*Q of K). The mask and bias kinds are knobs (each its own\n"
  "  kernel and cache entry); the rest are launch arguments, verified and timed with the values\n"
  "  given. Masked scores are not read and are written as 0; a row that sees no key is zeros\n"
  "  (docs/attention-softmax.md)\n"
  "  --mask M         none (default), causal, window, causal+window, padding (per-batch key\n"
  "                   lengths, drawn by the tuner) or padding with the others: causal+padding,\n"
  "                   window+padding, causal+window+padding (its range cut at the key length)\n"
  "  --window W       the window masks' left width: query q sees keys k >= q + offset - W\n"
  "  --offset D       the causal diagonal: query q sees keys k <= q + D (default K - Q)\n"
  "  --scale S        scores are S * x first (default 1), a finite number\n"
  "  --softcap C      then C * tanh(z / C), C > 0 (default 0: none); the softcap's kernel is a\n"
  "                   source of its own, compiled from the tuned config (also cross-entropy's)\n"
  "  --alibi          the ALiBi bias, -slope[h] * |q + offset - k| (slopes drawn by the tuner)\n"
  "  --bias-tensor    a float32 bias tensor added (an additive mask: -inf masks), [1, 1, Q, K]\n"
  "                   broadcast over B and H in the tuner, values drawn by it\n"
  "attention_softmax_backward (--op attention_softmax_backward, the same commands and options but\n"
  "  --alibi): dx = k * y * (dy - sum(dy * y)) over the visible keys, k = scale (times 1 - tanh^2\n"
  "  of the score under --softcap, whose scores x are then a third input); masked y, dy and x are\n"
  "  not read, masked dx written as 0\n"
  "\n"
  "  -h, --help       this text\n"
  "  -V, --version    the version\n";

void cli_fail(const char *fmt, ...)
{
  va_list ap;
  fputs("softmax-tune: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static int usage_error(const char *fmt, const char *arg)
{
  fputs("softmax-tune: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs(" (see softmax-tune --help)\n", stderr);
  return 2;
}

static const struct { const char *name; int (*run)(cli_Options *); } COMMANDS[] = {
  { "tune", cli_tune },   { "space", cli_space }, { "emit", cli_emit },   { "compile", cli_compile },
  { "log", cli_log },     { "cache", cli_cache }, { "knobs", cli_knobs }, { "bench", cli_bench },
  { "report", cli_report }, { "explain", cli_explain }, { "pretune", cli_pretune },
  { "kernels", cli_kernels },
};

enum { O_SHAPE = 256, O_DTYPE, O_OP, O_ARCH, O_CONFIG, O_CACHE, O_FORCE, O_QUIET, O_TEMPLATES,
       O_RUN, O_JSON, O_CSV, O_LOG, O_GPU, O_REPS, O_SPACE, O_GPU_MODEL, O_SHAPES, O_GRID, O_FROM_CACHE, O_UNALIGNED,
       O_SWEEP, O_RESTAMP, O_ADD, O_CUBINS, O_SMS, O_MAX_LOCAL, O_WITH_HOST, O_RETIME, O_IGNORE_INDEX, O_SMOOTHING, O_ZLOSS, O_SOFTCAP,
       O_WEIGHT, O_LABELS, O_MASK, O_WINDOW, O_OFFSET, O_SCALE, O_ALIBI, O_BIAS_TENSOR, O_KEEP_CONFIGS, O_BUILD, O_JOBS, O_WIDEST, O_ALL };

static const struct option LONGOPTS[] = {
  { "gpu", required_argument, 0, O_GPU },         { "shape", required_argument, 0, O_SHAPE },
  { "dtype", required_argument, 0, O_DTYPE },     { "op", required_argument, 0, O_OP },
  { "arch", required_argument, 0, O_ARCH },       { "config", required_argument, 0, O_CONFIG },
  { "output", required_argument, 0, 'o' },        { "cache", required_argument, 0, O_CACHE },
  { "force", no_argument, 0, O_FORCE },           { "quiet", no_argument, 0, O_QUIET },
  { "templates", required_argument, 0, O_TEMPLATES }, { "run", required_argument, 0, O_RUN },
  { "json", no_argument, 0, O_JSON },             { "csv", no_argument, 0, O_CSV },
  { "log", no_argument, 0, O_LOG },               { "help", no_argument, 0, 'h' },
  { "reps", required_argument, 0, O_REPS },       { "space", required_argument, 0, O_SPACE },
  { "version", no_argument, 0, 'V' },             { "gpu-model", required_argument, 0, O_GPU_MODEL },
  { "shapes", required_argument, 0, O_SHAPES },      { "grid", required_argument, 0, O_GRID },
  { "from-cache", no_argument, 0, O_FROM_CACHE },   { "unaligned", no_argument, 0, O_UNALIGNED },
  { "sweep", required_argument, 0, O_SWEEP },       { "restamp", required_argument, 0, O_RESTAMP },
  { "add", no_argument, 0, O_ADD },                 { "keep-configs", no_argument, 0, O_KEEP_CONFIGS },
  { "cubins", required_argument, 0, O_CUBINS },     { "sms", required_argument, 0, O_SMS },
  { "max-local", required_argument, 0, O_MAX_LOCAL },
  { "with-host", no_argument, 0, O_WITH_HOST },     { "retime", no_argument, 0, O_RETIME },
  { "ignore-index", required_argument, 0, O_IGNORE_INDEX }, { "label-smoothing", required_argument, 0, O_SMOOTHING },
  { "z-loss", required_argument, 0, O_ZLOSS },      { "softcap", required_argument, 0, O_SOFTCAP },
  { "weight", no_argument, 0, O_WEIGHT },           { "labels", required_argument, 0, O_LABELS },
  { "mask", required_argument, 0, O_MASK },         { "window", required_argument, 0, O_WINDOW },
  { "offset", required_argument, 0, O_OFFSET },     { "scale", required_argument, 0, O_SCALE },
  { "build", required_argument, 0, O_BUILD },       { "jobs", required_argument, 0, O_JOBS },
  { "widest", required_argument, 0, O_WIDEST },     { "all", no_argument, 0, O_ALL },
  { "alibi", no_argument, 0, O_ALIBI },         { "bias-tensor", no_argument, 0, O_BIAS_TENSOR },
  { 0, 0, 0, 0 },
};

/* A whole non-negative decimal number that fits an int, else -1. */
static long parse_index(const char *s)
{
  long v = 0;
  if (!*s) return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > 100000000) return -1;
    v = v * 10 + (*s - '0');
  }
  return v;
}

/* A cross-entropy option (a launch argument of those ops): its value, or 2 after saying why. */
static int parse_ce(int c, const char *arg, cli_Options *o)
{
  static const char *const NAMES[] = { "--ignore-index", "--label-smoothing", "--z-loss", "--softcap", "--weight", "--labels" };
  const char *name = NAMES[c - O_IGNORE_INDEX];
  float *f = c == O_SMOOTHING ? &o->ce.smoothing : c == O_ZLOSS ? &o->ce.zloss : c == O_SOFTCAP ? &o->ce.softcap : NULL;
  if (c == O_SOFTCAP) o->softcap_set = 1;   /* cross-entropy's or attention's: checked with the op */
  else if (!o->ce_flag) o->ce_flag = name;
  if (c == O_IGNORE_INDEX && cli_parse_int64(arg, &o->ce.ignore))
    return usage_error("bad --ignore-index '%s': expected a whole number such as -100", arg);
  if (c == O_LABELS) {
    if (strcmp(arg, "int32") && strcmp(arg, "int64")) return usage_error("bad --labels '%s': expected int32 or int64", arg);
    o->ce.labels64 = strcmp(arg, "int64") == 0;
  }
  if (f) {
    if (cli_parse_float(arg, f) || *f < 0.f || (c == O_SMOOTHING && *f > 1.f)) {
      char msg[96];
      snprintf(msg, sizeof msg, "bad %s '%%s': expected a finite number >= 0%s", name,
               c == O_SMOOTHING ? " and <= 1" : c == O_SOFTCAP ? " (0: none)" : "");
      return usage_error(msg, arg);
    }
  }
  if (c == O_WEIGHT) o->ce.weight = 1;
  return 0;
}

/* An attention_softmax option (a kind or a launch argument): 0, or 2 after saying why. */
static int parse_attn(int c, const char *arg, cli_Options *o)
{
  static const char *const NAMES[] = { "--mask", "--window", "--offset", "--scale", "--alibi", "--bias-tensor" };
  const char *name = NAMES[c - O_MASK];
  if (!o->attn_flag) o->attn_flag = name;
  if (!o->attn_arg && c != O_MASK && c < O_ALIBI) o->attn_arg = name;   /* the kinds also filter log and cache */
  if (c < O_ALIBI && cli_parse_attn(name, arg, &o->mask, &o->bias, &o->attn, o->err, sizeof o->err))
    return usage_error("%s", o->err);
  const int bias = c == O_ALIBI ? GEN_BIAS_ALIBI : c == O_BIAS_TENSOR ? GEN_BIAS_TENSOR : 0;
  if (bias && o->bias && o->bias != bias) return usage_error("%s and --alibi: one bias kind at a time", "--bias-tensor");
  if (bias) o->bias = bias;
  return 0;
}

static int parse_options(int argc, char **argv, cli_Options *o)
{
  int c, list[64], n;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:hV", LONGOPTS, NULL)) != -1) {
    switch (c) {
    case O_GPU:
      o->gpu_set = 1;
      if (strcmp(optarg, "all") == 0 || strchr(optarg, ',')) {
        if (cli_parse_gpus(optarg, list, &n, o->err, sizeof o->err)) return usage_error("%s", o->err);
        o->gpus = optarg;
      } else if ((o->gpu = (int)parse_index(optarg)) < 0) {
        return usage_error("bad --gpu '%s': expected a GPU ordinal 0, 1, ..., a list such as 0,1,3, or all", optarg);
      }
      break;
    case O_SHAPE: o->shape = optarg; break;
    case O_SHAPES: o->shapes = optarg; break;
    case O_GRID: o->grid = optarg; break;
    case O_FROM_CACHE: o->from_cache = 1; break;
    case O_RESTAMP: o->restamp = optarg; break;
    case O_ADD: o->add = 1; break;
    case O_KEEP_CONFIGS: o->keep_configs = 1; break;
    case O_UNALIGNED: o->unaligned = 1; break;
    case O_DTYPE:
      if (strchr(optarg, ',')) {
        if (cli_parse_dtypes(optarg, list, o->err, sizeof o->err) < 0) return usage_error("%s", o->err);
        o->dtypes = optarg;
      } else if ((o->dtype = gen_parse_dtype(optarg)) < 0) {
        return usage_error("unknown dtype '%s' (f32, f16, bf16)", optarg);
      }
      break;
    case O_OP:
      if (strchr(optarg, ',')) {
        if (cli_parse_ops(optarg, list, o->err, sizeof o->err) < 0) return usage_error("%s", o->err);
        o->ops = optarg;
      } else if ((o->op = gen_parse_op(optarg)) < 0) {
        return usage_error("unknown op '%s' (" CLI_OPS ")", optarg);
      }
      break;
    case O_ARCH:
      if ((o->arch = gen_parse_arch(optarg)) < 0) return usage_error("bad arch '%s': expected sm_XX such as sm_90", optarg);
      break;
    case O_CONFIG: o->config = optarg; break;
    case O_BUILD: o->build = optarg; break;
    case O_ALL: o->all = 1; break;
    case O_WIDEST:
      if ((o->widest = parse_index(optarg)) < 1) return usage_error("bad --widest '%s': expected a width >= 1", optarg);
      break;
    case O_JOBS:
      if ((o->jobs = (int)parse_index(optarg)) < 1 || o->jobs > 64) return usage_error("bad --jobs '%s': expected 1 to 64", optarg);
      break;
    case O_GPU_MODEL:
      if (!*optarg) return usage_error("bad --gpu-model '%s': expected a GPU model such as 'NVIDIA H100 80GB HBM3'", optarg);
      o->gpu_model = optarg;
      break;
    case 'o': o->output = optarg; break;
    case O_CACHE: o->cache = optarg; break;
    case O_CUBINS:   /* the tuner and the runtime read the folder from the environment */
      if (!*optarg || setenv("SOFTMAX_TUNE_CUBINS", optarg, 1) != 0) return usage_error("bad --cubins '%s': expected a folder or none", optarg);
      break;
    case O_SMS:
      if ((o->sms = (int)parse_index(optarg)) <= 0) return usage_error("bad --sms '%s': expected a number of SMs such as 96", optarg);
      break;
    case O_MAX_LOCAL:
      if ((o->max_local = (int)parse_index(optarg)) < 0 || o->max_local > 65536)
        return usage_error("bad --max-local '%s': expected bytes of local memory a thread, 0 to 65536", optarg);
      break;
    case O_FORCE: o->force = 1; break;
    case O_QUIET: o->quiet = 1; break;
    case O_TEMPLATES: o->templates = optarg; break;
    case O_RUN:
      if ((o->run = parse_index(optarg)) <= 0) return usage_error("bad --run '%s': expected a run id", optarg);
      break;
    case O_REPS:
      if ((o->reps = (int)parse_index(optarg)) < 5 || o->reps > 100000) return usage_error("bad --reps '%s': expected 5..100000", optarg);
      break;
    case O_SPACE:
      if (strcmp(optarg, "full") && strcmp(optarg, "pruned")) return usage_error("bad --space '%s': expected pruned or full", optarg);
      o->full = strcmp(optarg, "full") == 0;
      break;
    case O_SWEEP:
      if (strcmp(optarg, "full") && strcmp(optarg, "fast")) return usage_error("bad --sweep '%s': expected fast or full", optarg);
      o->sweep = strcmp(optarg, "full") == 0 ? CLI_FULL : CLI_FAST;
      break;
    case O_IGNORE_INDEX: case O_SMOOTHING: case O_ZLOSS: case O_SOFTCAP: case O_WEIGHT: case O_LABELS:
      if (parse_ce(c, optarg, o)) return 2;
      break;
    case O_MASK: case O_WINDOW: case O_OFFSET: case O_SCALE: case O_ALIBI: case O_BIAS_TENSOR:
      if (parse_attn(c, optarg, o)) return 2;
      break;
    case O_WITH_HOST: o->with_host = 1; break;
    case O_RETIME: o->retime = 1; break;
    case O_JSON: o->format = 'j'; break;
    case O_CSV: o->format = 'c'; break;
    case O_LOG: o->log = 1; break;
    case 'h': o->help = 1; break;
    case 'V': o->version = 1; break;
    case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
    default: return usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  return 0;
}

/* The cross-entropy options: for tune and bench of one cross-entropy problem, valid together; for
** space, emit, compile and explain too (--softcap: the softcap's kernel, its space and the rule's
** choice for it; the others are launch arguments). */
static int check_ce(cli_Options *o, const char *command)
{
  if (strcmp(command, "tune") && strcmp(command, "bench") && strcmp(command, "space") && strcmp(command, "emit") &&
      strcmp(command, "compile") && strcmp(command, "explain")) {
    fprintf(stderr, "softmax-tune: %s is for tuning, bench, space, emit, compile or explain of a cross-entropy op, not for %s (see softmax-tune --help)\n",
            o->ce_flag, command);
    return 2;
  }
  if (cli_is_batch(o))
    return usage_error("%s is for one cross-entropy problem, not a list", o->ce_flag);
  if (!gen_op(cli_op(o))->params) {
    fprintf(stderr, "softmax-tune: %s is an option of --op cross_entropy or cross_entropy_loss, not %s (see softmax-tune --help)\n",
            o->ce_flag, gen_op_name(cli_op(o)));
    return 2;
  }
  if (tune_ce_check(&o->ce, o->err, sizeof o->err)) return usage_error("%s", o->err);
  return 0;
}

/* --shape of one problem: parsed, and the problem one the generator takes (not a loss over one class). */
static int check_shape(cli_Options *o)
{
  gen_Problem p;
  if (gen_op_is_attn(cli_op(o)) ? cli_parse_attn_shape(o->shape, &o->rows, &o->cols, &o->attn, o->err, sizeof o->err)
                                 : gen_parse_shape(o->shape, &o->rows, &o->cols, o->err, sizeof o->err))
    return 1;
  cli_problem(o, &p);
  return cli_check_problem(&p, &o->attn, o->err, sizeof o->err);
}

/* attention's options go with its op, one problem; --softcap with it or a cross-entropy op. */
static int check_attn(cli_Options *o)
{
  const int attn = gen_op_is_attn(cli_op(o));
  if (o->softcap_set && !attn && !gen_op(cli_op(o))->params)
    return usage_error("--softcap is an option of --op cross_entropy, cross_entropy_loss, attention_softmax or"
                       " attention_softmax_backward, not %s", gen_op_name(cli_op(o)));
  if (o->attn_flag && !attn)
    return usage_error("%s is an option of --op attention_softmax or attention_softmax_backward", o->attn_flag);
  if (o->bias && cli_op(o) == GEN_ATTN_BW)   /* a constant added to a score: no derivative sees it */
    return usage_error("%s: attention_softmax_backward has no bias kind (a bias does not change the gradient)",
                       o->bias == GEN_BIAS_ALIBI ? "--alibi" : "--bias-tensor");
  if (attn && cli_is_batch(o)) return usage_error("%s takes one problem, not a list", gen_op_name(cli_op(o)));
  if (attn && !o->shape && o->attn_arg) return usage_error("%s needs --shape BxHxQxK", o->attn_arg);
  o->attn.softcap = o->ce.softcap;
  return 0;
}

/* NVRTC allocates and frees tens of MB a compile, and glibc hands the heap's free top back to the
** system (past 128 KB) and maps large blocks afresh, so each compile faulted its memory in again:
** 38 million page faults in one CI run, a sixth of its CPU time in the kernel. Kept instead (the
** top trimmed past 1 GB, blocks under 32 MB from the heap): 66 bf16 softmax kernels of the set
** compiled in 5.2 s against 7.8 s on 2 cores (system time 0.3 against 2.3 s; 119 cross-entropy
** kernels 22.3 against 27.8 s), the cubins byte for byte the same (2026-11-29). The command's
** own process only (and its compile children); a refusal costs speed alone. */
static void keep_heap(void)
{
#ifdef __GLIBC__
  (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int main(int argc, char **argv)
{
  keep_heap();
  cli_Options o = { .gpu = 0, .dtype = -1, .op = -1, .arch = 0, .format = 't', .max_local = -1 };
  tune_ce_defaults(&o.ce);
  tune_attn_defaults(&o.attn);
  int (*run)(cli_Options *) = cli_tune;
  const char *name = "tune";
  if (argc > 1 && argv[1][0] != '-') {
    run = NULL;
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
      if (strcmp(argv[1], COMMANDS[i].name) == 0) run = COMMANDS[i].run, name = argv[1];
    if (!run) return usage_error("unknown command '%s'", argv[1]);
    argv++, argc--;
  }
  int rc = parse_options(argc, argv, &o);
  if (rc) return rc;
  if (o.help) return fputs(USAGE, stdout), 0;
  if (o.version) return printf("softmax-tune %s\n", CLI_VERSION), 0;
  o.command = name;
  o.args = argv + optind;
  o.nargs = argc - optind;
  if (o.nargs > 0 && strcmp(name, "cache") != 0) return usage_error("unexpected argument '%s'", o.args[0]);
  if (o.sms && (strcmp(name, "tune") != 0 || cli_is_batch(&o)))
    return usage_error("--sms is for tuning one problem, not %s", cli_is_batch(&o) ? "a list" : name);
  if (o.max_local >= 0 && (strcmp(name, "tune") != 0 || cli_is_batch(&o)))
    return usage_error("--max-local is for tuning one problem, not %s", cli_is_batch(&o) ? "a list" : name);
  if (cli_is_batch(&o) && strcmp(name, "tune") != 0)
    return usage_error("%s takes one --gpu, --shape, --dtype and --op (lists and --shapes are for tuning)", name);
  if (o.softcap_set && gen_op(cli_op(&o))->params == 1 && !o.ce_flag) o.ce_flag = "--softcap";
  if (o.ce_flag && (rc = check_ce(&o, name))) return rc;
  if ((rc = check_attn(&o))) return rc;
  if (o.shape && !cli_is_batch(&o) && check_shape(&o)) {
    cli_fail("%s", o.err);
    return 2;
  }
  return run(&o);
}
