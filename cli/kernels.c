/*
** kernels.c — the kernel set (runtime/kset.h). `kernels --build sm_90,sm_80 -o FILE` chooses a
** config for every (op, dtype, mask and bias kinds, width class, row band) the set covers, as
** an untuned call would (the default table's nearest entry adapted, else the rule), renders it,
** compiles each distinct source once with NVRTC (lean: no line table) on --jobs threads, and
** writes the set whole or not at all. CMake runs it; the file is installed beside the library.
** `kernels [--arch sm_XX] [--op OP]` lists the set this build carries.
*/
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kset.h"
#include "untuned.h"

/* The widest class the set covers (cross-entropy from 2 classes), by op: the softmax ops to 1M
** columns, cross-entropy to a 256K vocabulary, attention to 32K keys (wider rows get the rule's
** kernel, compiled once). */
static int64_t widest(int op)
{
  if (op == GEN_CE || op == GEN_CE_LOSS) return 1 << 18;
  if (gen_op_is_attn(op)) return 1 << 15;
  return 1 << 20;
}

/* Whether the set holds a kind: every softmax and cross-entropy one; of attention's, the 16-bit
** dtypes with no mask, causal, key padding or both and no bias (the masks decoders and encoders
** use: 30 of the whole set's 90 MB of attention kernels), or with --all every dtype and kind
** but the sliding-window masks. */
static int covered(const cli_Options *o, int op, int dtype, int mask, int bias)
{
  if (!gen_op_is_attn(op)) return 1;
  if (mask & GEN_MASK_WINDOW) return 0;
  return o->all || (dtype != GEN_F32 && bias == GEN_BIAS_NONE);
}

/* The softcap variants the set holds of op (capped 0 and 1, or 0 alone): cross-entropy's; with
** --all attention's too (half an attention kernel's compile each: the default set leaves them to
** their first call, as it does ALiBi and bias tensors). */
static int variants(const cli_Options *o, int op)
{
  return gen_op(op)->params == 1 || (gen_op_is_attn(op) && o->all) ? 2 : 1;
}

typedef struct Item {
  kset_Record r;
  char *source;
  char hash[65];
  int first;                /* the item holding this source's cubin (itself when first) */
  gen_Cubin cb;
  char err[512];
} Item;

typedef struct Build {
  gen_State *g;
  Item *items;
  int n, cap;
} Build;

static int add_item(Build *b, Item *it)
{
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 1024;
    Item *neu = realloc(b->items, (size_t)cap * sizeof *neu);
    if (!neu) return 1;
    b->items = neu, b->cap = cap;
  }
  b->items[b->n++] = *it;
  return 0;
}

/* Where a config came from, short: "table entry 256x128 f32 softmax, adapted", or "rule". */
static void brief_source(const char *source, char *out, size_t n)
{
  const char *entry = strstr(source, " entry ");
  const char *paren = strstr(source, " (");
  if (!strncmp(source, "default table", 13) && entry && paren && paren > entry)
    snprintf(out, n, "table%.*s, adapted", (int)(paren - entry), entry);
  else
    snprintf(out, n, "%.*s", paren ? (int)(paren - source) : (int)strlen(source), source);
}

/* The item of p's key (band, class lo..hi) holding kernel k, rendered from config source `from`. */
static int add_kernel(Build *b, const gen_Problem *p, int band, int64_t lo, int64_t hi, gen_Kernel *k, const char *from,
                      char *err, size_t errlen)
{
  Item it = { 0 };
  it.r = (kset_Record){ .arch = p->arch, .dtype = p->dtype, .op = p->op, .mask = p->mask, .bias = p->bias,
                        .btype = p->bias_type, .capped = p->capped != 0, .band = band, .lo = lo, .hi = hi };
  kset_set_launch(&it.r, &k->launch);
  snprintf(it.r.name, sizeof it.r.name, "%s", k->name);
  snprintf(it.r.config, sizeof it.r.config, "%s", k->config);
  brief_source(from, it.r.source, sizeof it.r.source);
  it.source = k->source;   /* kept: the item owns it */
  k->source = NULL;
  cache_sha256(it.source, strlen(it.source), it.hash);
  gen_kernel_free(k);
  if (add_item(b, &it)) return free(it.source), snprintf(err, errlen, "out of memory"), 1;
  return 0;
}

/* The item of one key: its config chosen as an untuned call's, rendered. */
static int choose(Build *b, const cache_Key *base, gen_Problem *p, int band, char *err, size_t errlen)
{
  gen_Choice ch;
  gen_Kernel k;
  int64_t lo, hi;
  gen_width_class(p->cols, &lo, &hi);
  p->rows = kset_band_rows(p->op, p->dtype, p->capped, band, hi);
  if (untuned_choose(b->g, NULL, base, p, 0, &ch, err, errlen)) return 1;
  if (gen_render(b->g, p, ch.config, &k)) return snprintf(err, errlen, "%s", gen_error(b->g)), 1;
  return add_kernel(b, p, band, lo, hi, &k, ch.source, err, errlen);
}

/* A stand-in's config: a row read twice by 256 threads an element at a time (vec=1), so one
** kernel serves every width. It runs only while the kind's own kernel compiles (docs/kernel-set.md). */
#define STAND_IN "threads=256,items=2,vec=1,reduce=shfl,passes=2,hold=none,rows=1,split=1,xchg=none,hint=none"

/* The stand-ins of op and dtype: every attention kind the set holds no classes of (bias tensor
** types, softcaps, the window masks, float32's every kind) but a window mask with a bias tensor
** (a model's window comes as its mask tensor then, a kind of its own). */
static int stand_ins(Build *b, const cli_Options *o, int arch, int op, int dt, char *err, size_t errlen)
{
  if (!gen_op_is_attn(op)) return 0;
  for (int mask = 0; mask < GEN_NMASK; mask++)
    for (int bias = 0; bias < (op == GEN_ATTN ? GEN_NBIAS : 1) && !((mask & GEN_MASK_WINDOW) && bias == GEN_BIAS_TENSOR); bias++)
      for (int btype = 0; btype < (bias == GEN_BIAS_TENSOR ? 4 : 1); btype++)
        for (int capped = 0; capped < 2; capped++) {
          if (!btype && covered(o, op, dt, mask, bias) && capped < variants(o, op)) continue;   /* classes of its own */
          gen_Problem p = { .rows = 16384, .cols = 4096, .dtype = dt, .op = op, .arch = arch, .mask = mask, .bias = bias,
                            .bias_type = btype, .capped = capped, .any_width = 1 };
          char config[192];
          gen_Kernel k;
          snprintf(config, sizeof config, STAND_IN ",mask=%s,bias=%s", gen_mask_name(mask), gen_bias_name(bias));
          if (gen_render(b->g, &p, config, &k)) return snprintf(err, errlen, "%s", gen_error(b->g)), 1;
          if (add_kernel(b, &p, 0, 1, KSET_ANY, &k, "stand-in", err, errlen)) return 1;
        }
  return 0;
}

/* The item of the cross-entropy steps of p's dtype and arch (ce_steps.cu, no config): the record
** KSET_STEPS. */
static int choose_steps(Build *b, const gen_Problem *p, char *err, size_t errlen)
{
  Item it = { 0 };
  if (gen_aux(b->g, p, "ce_steps", &it.source)) return snprintf(err, errlen, "%s", gen_error(b->g)), 1;
  it.r = (kset_Record){ .arch = p->arch, .dtype = p->dtype, .op = GEN_CE, .hi = KSET_STEPS };
  snprintf(it.r.name, sizeof it.r.name, "ce_steps");
  snprintf(it.r.config, sizeof it.r.config, "steps");
  snprintf(it.r.source, sizeof it.r.source, "ce_steps.cu");
  cache_sha256(it.source, strlen(it.source), it.hash);
  if (add_item(b, &it)) return free(it.source), snprintf(err, errlen, "out of memory"), 1;
  return 0;
}

/* Every key of arch (of --op, --dtype and up to --widest when given): ops, dtypes, kinds (the
** backward has no bias kind), softcap variants, cross-entropy's steps, classes, bands; the
** attention kinds' stand-ins. */
static int choose_arch(Build *b, const cli_Options *o, int arch, char *err, size_t errlen)
{
  tune_Device dev = { .arch = arch };
  gen_Problem any = { .rows = 1, .cols = 1, .arch = arch };
  cache_Key base;
  if (tune_key(b->g, &dev, &any, &base, err, errlen)) return 1;   /* the GPU and templates: the same for every key */
  for (int op = 0; op < GEN_NOP; op++)
    for (int dt = 0; dt < GEN_NDTYPE && (o->op < 0 || o->op == op); dt++) {
      if (o->dtype >= 0 && o->dtype != dt) continue;
      if (stand_ins(b, o, arch, op, dt, err, errlen)) return 1;
      for (int mask = 0; mask < (gen_op_is_attn(op) ? GEN_NMASK : 1); mask++)
        for (int bias = 0; bias < (op == GEN_ATTN ? GEN_NBIAS : 1) && covered(o, op, dt, mask, bias); bias++)
          for (int capped = 0; capped < variants(o, op); capped++)
          for (int64_t cols = op == GEN_CE || op == GEN_CE_LOSS ? 2 : 1, lo, hi;
               cols <= (o->widest ? o->widest : widest(op)); cols = hi + 1) {
            gen_Problem p = { .rows = 1, .cols = cols, .dtype = dt, .op = op, .arch = arch, .mask = mask, .bias = bias,
                              .capped = capped };
            gen_width_class(cols, &lo, &hi);
            p.cols = hi;
            if ((op == GEN_CE || o->op == GEN_CE_LOSS) && !capped && cols == 2 && choose_steps(b, &p, err, errlen)) return 1;
            for (int band = kset_band(op, dt, capped, 1, hi); band < KSET_NBANDS; band++)   /* 0 only for wide rows */
              if (choose(b, &base, &p, band, err, errlen)) return 1;
          }
    }
  return 0;
}

static int by_hash(const void *a, const void *b)
{
  const Item *x = *(Item *const *)a, *y = *(Item *const *)b;
  int c = strcmp(x->hash, y->hash);
  return c ? c : x->r.arch - y->r.arch;
}

/* Items of one source and arch share the first's cubin; returns how many are distinct. */
static int share(Build *b)
{
  Item **v = malloc((size_t)b->n * sizeof *v);
  int distinct = 0;
  if (!v) return -1;
  for (int i = 0; i < b->n; i++) v[i] = &b->items[i];
  qsort(v, (size_t)b->n, sizeof *v, by_hash);
  for (int i = 0; i < b->n; i++) {
    int same = i > 0 && !strcmp(v[i]->hash, v[i - 1]->hash) && v[i]->r.arch == v[i - 1]->r.arch;
    v[i]->first = same ? v[i - 1]->first : (int)(v[i] - b->items);
    distinct += !same;
  }
  free(v);
  return distinct;
}

/* Child k of jobs: compile the distinct sources k, k + jobs, ... into dir/<item>.cubin (its
** registers and stack bytes first, 4 bytes each), or say why in dir/<item>.err; exits 0 or 1. */
static void compile_slice(Build *b, const char *dir, int k, int jobs)
{
  char path[4096];
  int nth = 0;
  for (int i = 0; i < b->n; i++) {
    Item *it = &b->items[i];
    if (it->first != i || nth++ % jobs != k) continue;
    int bad = gen_compile_lean(it->source, "softmax.cu", it->r.arch, &it->cb, it->err, sizeof it->err);
    snprintf(path, sizeof path, "%s/%d.%s", dir, i, bad ? "err" : "cubin");
    FILE *f = fopen(path, "wb");
    int32_t head[2] = { it->cb.regs, it->cb.stack };
    int ok = f && (bad ? fputs(it->err, f) >= 0
                       : fwrite(head, 4, 2, f) == 2 && fwrite(it->cb.data, 1, it->cb.size, f) == it->cb.size);
    if (f && fclose(f)) ok = 0;
    if (bad || !ok) _exit(1);
  }
  _exit(0);
}

/* Item i's cubin back from dir (or its error). */
static int collect(Item *it, const char *dir, int i, char *err, size_t errlen)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/%d.cubin", dir, i);
  FILE *f = fopen(path, "rb");
  long n = -1;
  int32_t head[2] = { -1, -1 };
  if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) > 8 && !fseek(f, 0, SEEK_SET) && fread(head, 4, 2, f) == 2 &&
      (it->cb.data = malloc((size_t)n - 8)) && fread(it->cb.data, 1, (size_t)n - 8, f) == (size_t)n - 8) {
    it->cb.size = (size_t)n - 8, it->cb.regs = head[0], it->cb.stack = head[1];
  } else {
    snprintf(path, sizeof path, "%s/%d.err", dir, i);
    FILE *e = fopen(path, "rb");
    size_t got = e ? fread(it->err, 1, sizeof it->err - 1, e) : 0;
    it->err[got] = '\0';
    if (e) fclose(e);
    if (!got) snprintf(it->err, sizeof it->err, "its compile left no cubin");
  }
  if (f) fclose(f);
  remove(path);
  snprintf(path, sizeof path, "%s/%d.cubin", dir, i);
  remove(path);
  if (!it->err[0]) return 0;
  return snprintf(err, errlen, "sm_%d %s %s class %lld..%lld (%s): %s", it->r.arch, gen_dtype_name(it->r.dtype),
                  gen_op_name(it->r.op), (long long)it->r.lo, (long long)it->r.hi, it->r.config, it->err), 1;
}

static const int STOPS[3] = { SIGINT, SIGTERM, SIGHUP };
static volatile sig_atomic_t stopped;   /* the signal that stopped the build (Ctrl-C, kill), 0: none */
static void on_stop(int sig) { stopped = sig; }

/* An interrupted build, its handlers given back: its compile processes ended, their parts and the
** folder removed, then the signal taken as it would have been (by default: the command dies of it). */
static void abandon(const Build *b, const char *dir, pid_t *pid, int started)
{
  char path[4096];
  for (int k = 0; k < started; k++) kill(pid[k], SIGTERM);
  for (int k = 0; k < started; k++) waitpid(pid[k], NULL, 0);
  for (int i = 0; i < b->n; i++)
    for (int e = 0; e < 2 && b->items[i].first == i; e++) {
      snprintf(path, sizeof path, "%s/%d.%s", dir, i, e ? "err" : "cubin");
      remove(path);
    }
  rmdir(dir);
  raise(stopped);
}

/* The distinct sources compiled by `jobs` processes (NVRTC runs one compile at a time in a
** process), through a temporary folder beside the output, removed whatever happens (an
** interrupt included: the build's parts are minutes of files). */
static int compile_all(Build *b, const char *out, int jobs, char *err, size_t errlen)
{
  char dir[4096];
  pid_t pid[64];
  int started = 0, rc = 0;
  struct sigaction on = { .sa_handler = on_stop }, old[3];   /* no SA_RESTART: a signal ends waitpid */
  if (jobs < 1) jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs < 1) jobs = 1;
  if (jobs > 64) jobs = 64;
  snprintf(dir, sizeof dir, "%s.parts.XXXXXX", out);
  if (!mkdtemp(dir)) return snprintf(err, errlen, "cannot make a folder beside '%s': %s", out, strerror(errno)), 1;
  fflush(NULL);
  for (int s = 0; s < 3; s++)   /* one ignored stays ignored (nohup's SIGHUP) */
    if (!sigaction(STOPS[s], NULL, &old[s]) && old[s].sa_handler != SIG_IGN) sigaction(STOPS[s], &on, NULL);
  for (; started < jobs; started++)
    if ((pid[started] = fork()) == 0) {
      for (int s = 0; s < 3; s++) sigaction(STOPS[s], &old[s], NULL);   /* a compile process just dies */
      compile_slice(b, dir, started, jobs);
    } else if (pid[started] < 0) break;
  for (int k = 0; k < started && !stopped; k++)
    while (waitpid(pid[k], NULL, 0) < 0 && errno == EINTR && !stopped) {}
  for (int s = 0; s < 3; s++) sigaction(STOPS[s], &old[s], NULL);
  if (stopped) return abandon(b, dir, pid, started), snprintf(err, errlen, "stopped by signal %d", (int)stopped), 1;
  if (started < jobs) rc = 1, snprintf(err, errlen, "cannot start a compile process: %s", strerror(errno));
  for (int i = 0; i < b->n; i++)
    if (b->items[i].first == i && collect(&b->items[i], dir, i, err, errlen) && !rc) rc = 1;
  rmdir(dir);
  return rc;
}

/* Say how many distinct kernels use local memory (a stack frame: spills, or arrays ptxas could
** not keep in registers) and name a few: a rule chooses without compiling, so it may pick one. */
static void say_stack(const Build *b)
{
  int n = 0;
  for (int i = 0; i < b->n; i++) n += b->items[i].first == i && b->items[i].cb.stack > 0;
  if (!n) return;
  fprintf(stderr, "kernel set: %d kernels use local memory (ptxas's stack frame), for example:\n", n);
  for (int i = 0, said = 0; i < b->n && said < 5; i++) {
    const Item *it = &b->items[i];
    if (it->first != i || it->cb.stack <= 0) continue;
    char op[96], class[48];
    gen_op_key(it->r.op, it->r.mask, it->r.bias, op, sizeof op);
    snprintf(class, sizeof class, it->r.hi == KSET_ANY ? "any" : "%lld..%lld", (long long)it->r.lo, (long long)it->r.hi);
    fprintf(stderr, "  sm_%d %s%s %s class %s: %d bytes, %s\n", it->r.arch, op, it->r.capped ? " softcap" : "",
            gen_dtype_name(it->r.dtype), class, it->cb.stack, it->r.config);
    said++;
  }
}

/* The set's bytes: header, records sorted by key, each distinct cubin once. */
static unsigned char *pack(Build *b, const char *hash, const char *made, size_t *size)
{
  size_t at = sizeof(kset_Header) + (size_t)b->n * sizeof(kset_Record);
  for (int i = 0; i < b->n; i++) {
    Item *it = &b->items[i];
    if (it->first != i) continue;
    it->r.offset = at, it->r.size = it->cb.size, it->r.regs = it->cb.regs;
    at += (it->cb.size + 63) / 64 * 64;
  }
  unsigned char *buf = calloc(1, at);
  if (!buf) return NULL;
  kset_Header *h = (kset_Header *)buf;
  memcpy(h->magic, KSET_MAGIC, 8);
  h->count = (uint32_t)b->n, h->record_size = sizeof(kset_Record);
  snprintf(h->made, sizeof h->made, "%s", made);
  memcpy(h->templates, hash, sizeof h->templates);
  kset_Record *r = (kset_Record *)(buf + sizeof *h);
  for (int i = 0; i < b->n; i++) {
    const Item *it = &b->items[i], *f = &b->items[it->first];
    r[i] = it->r;
    r[i].offset = f->r.offset, r[i].size = f->r.size, r[i].regs = f->r.regs;
    if (it->first == i) memcpy(buf + it->r.offset, it->cb.data, it->cb.size);
  }
  qsort(r, (size_t)b->n, sizeof *r, kset_compare);
  *size = at;
  return buf;
}

static void build_free(Build *b)
{
  for (int i = 0; i < b->n; i++) free(b->items[i].source), gen_cubin_free(&b->items[i].cb);
  free(b->items);
  gen_close(b->g);
}

/* Whether the folder path's file would be made in can be written (else why, in err). */
static int writable_folder(const char *path, char *err, size_t errlen)
{
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  if (access(dir, W_OK) == 0) return 1;
  snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
  return 0;
}

/* "sm_90,sm_80" into archs[8]. */
static int parse_archs(const char *s, int *archs, int *n)
{
  char buf[256], *save = NULL;
  *n = 0;
  snprintf(buf, sizeof buf, "%s", s);
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int a = gen_parse_arch(t);
    if (a < 0 || *n == 8) return cli_fail("bad arch '%s' in --build %s: expected sm_XX[,sm_XX...] (at most 8)", t, s), 1;
    archs[(*n)++] = a;
  }
  return *n ? 0 : (cli_fail("--build needs the archs, such as sm_90,sm_80"), 1);
}

static int build(cli_Options *o)
{
  Build b = { 0 };
  int archs[8], narch, nvmaj = 0, nvmin = 0, rc = 1;
  char hash[65], made[176];
  struct timespec t0, t1;
  if (parse_archs(o->build, archs, &narch)) return 2;
  if (!o->output) return cli_fail("kernels --build needs -o FILE"), 2;
  if (!writable_folder(o->output, o->err, sizeof o->err)) return cli_fail("%s", o->err), 2;   /* before minutes of work */
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (gen_open(&b.g, o->templates, o->err, sizeof o->err) || cli_templates_hash(b.g, hash, o->err, sizeof o->err)) {
    cli_fail("%s", o->err);
    return build_free(&b), 1;
  }
  for (int i = 0; i < narch; i++)
    if (choose_arch(&b, o, archs[i], o->err, sizeof o->err)) {
      cli_fail("kernel set: %s", o->err);
      return build_free(&b), 1;
    }
  int distinct = share(&b);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!o->quiet)
    fprintf(stderr, "kernel set: %d keys chosen in %.1f s, %d distinct kernels to compile\n", b.n,
            (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, distinct);
  size_t size = 0;
  unsigned char *bytes = NULL;
  int failed = distinct < 0 || compile_all(&b, o->output, o->jobs, o->err, sizeof o->err);
  gen_nvrtc_version(&nvmaj, &nvmin);   /* after the compile processes: NVRTC not yet used here */
  snprintf(made, sizeof made, "NVRTC %d.%d, archs %s%s", nvmaj, nvmin, o->build, o->all ? ", all" : "");
  if (failed) cli_fail("kernel set: %s", distinct < 0 ? "out of memory" : o->err);
  else if (!(bytes = pack(&b, hash, made, &size))) cli_fail("kernel set: out of memory");
  else if (cli_write_atomic(o->output, bytes, size, o->err, sizeof o->err)) cli_fail("%s", o->err);
  else rc = 0;
  if (!rc && !o->quiet) say_stack(&b);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!rc && !o->quiet)
    printf("kernel set %s: %d keys, %d kernels compiled, %zu bytes, %.1f s (%s)\n", o->output, b.n, distinct, size,
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, made);
  free(bytes);
  build_free(&b);
  return rc;
}

/* The set beside this command, one line a key: arch, op (with kinds), dtype, class, rows, config, source. */
static int list(cli_Options *o)
{
  const char *why;
  const kset_Set *k = kset_get(&why);
  char op[96], band[16];
  int shown = 0;
  if (!k) return printf("%s: every untuned class compiles its kernel on first use\n", why), 0;
  const kset_Record *r = k->r;
  printf("# kernel set %s: %u keys, %zu bytes; templates %.12s, %s\n", k->path, k->h->count, k->size, k->h->templates, k->h->made);
  printf("arch\top\tdtype\tclass\trows\tregs\tbytes\tconfig\tsource\n");
  for (uint32_t i = 0; i < k->h->count; i++) {
    if ((o->arch && r[i].arch != o->arch) || (o->op >= 0 && r[i].op != o->op) || (o->dtype >= 0 && r[i].dtype != o->dtype))
      continue;
    gen_op_key(r[i].op, r[i].mask, r[i].bias, op, sizeof op);
    const int steps = gen_op(r[i].op)->params == 1 && r[i].hi == KSET_STEPS, any = r[i].hi == KSET_ANY;
    static const char *const btypes[] = { "", " f16", " bf16", " bool" };   /* a bias tensor's, past float32 */
    snprintf(op + strlen(op), sizeof op - strlen(op), "%s", btypes[r[i].btype & 3]);
    if (r[i].capped) snprintf(op + strlen(op), sizeof op - strlen(op), " softcap");
    if (steps) snprintf(op + strlen(op), sizeof op - strlen(op), " steps");
    char class[48];
    snprintf(class, sizeof class, any ? "any" : "%lld..%lld", (long long)r[i].lo, (long long)r[i].hi);
    printf("sm_%d\t%s\t%s\t%s\t%s\t%d\t%llu\t%s\t%s\n", r[i].arch, op, gen_dtype_name(r[i].dtype), class,
           steps || any ? "any" : kset_band_name(r[i].op, r[i].dtype, r[i].capped, r[i].band, r[i].hi, band, sizeof band), r[i].regs,
           (unsigned long long)r[i].size, r[i].config, r[i].source);
    shown++;
  }
  return shown || !(o->arch || o->op >= 0 || o->dtype >= 0) ? 0 : (cli_fail("the kernel set has no key of that --arch/--op/--dtype"), 1);
}

int cli_kernels(cli_Options *o)
{
  return o->build ? build(o) : list(o);
}
