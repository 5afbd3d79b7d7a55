/*
** list.c — lists on the command line: --shape A,B,C x --dtype f32,bf16 x --op softmax,log_softmax
** (the cross product), --shapes FILE[,FILE...] (one "RxC [dtype] [op]" per line, or "BxHxQxK dtype
** attention_softmax[_backward] mask=M bias=B ...", # comments), and --gpu all or 0,1,3; and the
** attention options as --shape, --mask ... and a shapes line give them. Parsing only: errors come
** back in err, naming the bad value (and the file and line); nothing is printed.
*/
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_WORDS 64
#define LINE_WORDS 12       /* a shapes line: shape, dtype, op and the attention options */

/* Split s at sep (or, with sep 0, at blanks) into words[]; -1 when more than max. */
static int split(const char *s, char sep, char words[][64], int max)
{
  int n = 0;
  while (*s) {
    size_t len = sep ? strcspn(s, (char[]){ sep, 0 }) : strcspn(s, " \t\r\n");
    if (len || sep) {
      if (n == max) return -1;
      snprintf(words[n++], 64, "%.*s", (int)(len < 63 ? len : 63), s);
    }
    s += len;
    if (*s) s++;
    if (sep && !*s && s[-1] == sep && n < max) words[n++][0] = '\0';   /* a trailing comma: an empty word */
  }
  return n;
}

/* Each word of a comma list through parse into out[]; -1 and the bad word in err. */
static int parse_list(const char *s, int (*parse)(const char *), const char *what, const char *known, int *out,
                      char *err, size_t errlen)
{
  char w[MAX_WORDS][64];
  int n = split(s, ',', w, MAX_WORDS);
  if (n < 0) return snprintf(err, errlen, "too many values in --%s '%s' (at most %d)", what, s, MAX_WORDS), -1;
  if (n == 0) return snprintf(err, errlen, "empty --%s: expected %s", what, known), -1;
  for (int i = 0; i < n; i++)
    if ((out[i] = parse(w[i])) < 0) return snprintf(err, errlen, "unknown %s '%s' (%s)", what, w[i], known), -1;
  return n;
}

int cli_parse_dtypes(const char *s, int *out, char *err, size_t errlen)
{
  return parse_list(s, gen_parse_dtype, "dtype", "f32, f16, bf16", out, err, errlen);
}

int cli_parse_ops(const char *s, int *out, char *err, size_t errlen)
{
  return parse_list(s, gen_parse_op, "op", CLI_OPS, out, err, errlen);
}

/* A GPU ordinal 0..9999, else -1. */
static int parse_ordinal(const char *s)
{
  int v = 0;
  if (!*s || strlen(s) > 4) return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    v = v * 10 + (*s - '0');
  }
  return v;
}

int cli_parse_gpus(const char *s, int *ord, int *n, char *err, size_t errlen)
{
  *n = 0;
  if (strcmp(s, "all") == 0) return 0;
  if ((*n = parse_list(s, parse_ordinal, "gpu", "all, or GPU ordinals such as 0 or 0,1,3", ord, err, errlen)) < 0)
    return 1;
  for (int i = 0; i < *n; i++)
    for (int j = 0; j < i; j++)
      if (ord[i] == ord[j]) return snprintf(err, errlen, "GPU %d is twice in --gpu '%s'", ord[i], s), 1;
  return 0;
}

int cli_is_batch(const cli_Options *o)
{
  return o->gpus || o->shapes || o->dtypes || o->ops || (o->shape && strchr(o->shape, ','));
}

int cli_parse_int64(const char *s, int64_t *v)
{
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (!*s || *end || errno || isspace((unsigned char)*s)) return -1;
  *v = x;
  return 0;
}

int cli_parse_float(const char *s, float *v)
{
  char *end;
  errno = 0;
  float x = strtof(s, &end);
  if (!*s || *end || errno == ERANGE || isspace((unsigned char)*s) || !isfinite(x)) return -1;
  *v = x;
  return 0;
}

int cli_parse_attn_shape(const char *shape, int64_t *rows, int64_t *cols, tune_AttnOptions *a, char *err, size_t errlen)
{
  int64_t d[4];
  const char *s = shape;
  for (int i = 0; i < 4; i++) {
    const char *x = i < 3 ? strchr(s, 'x') : s + strlen(s);
    d[i] = x && x > s && x - s <= 12 ? 0 : -1;   /* 12 digits at most: no overflow below */
    for (const char *q = s; d[i] >= 0 && q < x; q++) d[i] = *q >= '0' && *q <= '9' ? d[i] * 10 + (*q - '0') : -1;
    if (d[i] < 1 || (i == 3 && strchr(s, 'x')))
      return snprintf(err, errlen, "bad shape '%s': attention_softmax takes BxHxQxK, four positive integers such as 4x16x2048x2048",
                      shape), 1;
    s = x + 1;
  }
  if (d[3] > 0x7fffffff || d[0] > INT64_MAX / 8 / d[1] / d[2] / d[3])
    return snprintf(err, errlen, "bad shape '%s': K must be at most 2147483647 and B*H*Q*K fit", shape), 1;
  *rows = d[0] * d[1] * d[2], *cols = d[3], a->h = d[1], a->q = d[2];
  return 0;
}

/* 1, with "bad NAME 'VALUE': expected WANT" in err. */
static int bad_value(char *err, size_t errlen, const char *name, const char *value, const char *want)
{
  snprintf(err, errlen, "bad %s '%s': expected %s", name, value, want);
  return 1;
}

int cli_parse_attn(const char *name, const char *value, int *mask, int *bias, tune_AttnOptions *a, char *err, size_t errlen)
{
  const char *key = name + strspn(name, "-");
  int kind;
  if (!strcmp(key, "mask")) {
    if ((kind = gen_parse_mask(value)) < 0)
      return bad_value(err, errlen, name, value, "none or causal, window, padding joined by '+' (causal+padding)");
    *mask = kind;
  } else if (!strcmp(key, "bias")) {
    if ((kind = gen_parse_bias(value)) < 0) return bad_value(err, errlen, name, value, "none, alibi or tensor");
    *bias = kind;
  } else if (!strcmp(key, "window")) {
    if (cli_parse_int64(value, &a->window) || a->window < 0) return bad_value(err, errlen, name, value, "a width >= 0");
  } else if (!strcmp(key, "offset")) {
    if (cli_parse_int64(value, &a->offset) || a->offset == TUNE_ATTN_AUTO) return bad_value(err, errlen, name, value, "a whole number");
  } else if (!strcmp(key, "scale")) {
    if (cli_parse_float(value, &a->scale)) return bad_value(err, errlen, name, value, "a finite number");
  } else if (!strcmp(key, "softcap")) {
    if (cli_parse_float(value, &a->softcap) || a->softcap < 0.f)
      return bad_value(err, errlen, name, value, "a finite number >= 0 (0: none)");
  } else {
    return snprintf(err, errlen, "unknown option '%s' (mask, bias, window, offset, scale, softcap)", name), 1;
  }
  return 0;
}

int cli_check_problem(const gen_Problem *p, const tune_AttnOptions *a, char *err, size_t errlen)
{
  if (p->op == GEN_ATTN_BW && p->bias != GEN_BIAS_NONE)   /* a constant added to a score: no derivative sees it */
    return snprintf(err, errlen, "bias=%s: attention_softmax_backward has no bias kind (a bias does not change the gradient)",
                    gen_bias_name(p->bias)), 1;
  return gen_check_problem(p, err, errlen) || (gen_op_is_attn(p->op) && tune_attn_check(p, a, err, errlen));
}

/* What fmt says, after what buf holds (n bytes in all), cut at its end. */
static void append(char *buf, size_t n, const char *fmt, ...)
{
  const size_t k = strlen(buf);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + k, n - k, fmt, ap);
  va_end(ap);
}

const char *cli_problem_line(const gen_Problem *p, const tune_AttnOptions *a, char *buf, size_t n)
{
  if (!gen_op_is_attn(p->op)) {
    snprintf(buf, n, "%lldx%lld %s %s", (long long)p->rows, (long long)p->cols, gen_dtype_name(p->dtype), gen_op_name(p->op));
    return buf;
  }
  snprintf(buf, n, "%lldx%lldx%lldx%lld %s %s mask=%s bias=%s", (long long)(p->rows / a->h / a->q), (long long)a->h,
           (long long)a->q, (long long)p->cols, gen_dtype_name(p->dtype), gen_op_name(p->op), gen_mask_name(p->mask),
           gen_bias_name(p->bias));
  if (a->window >= 0) append(buf, n, " window=%lld", (long long)a->window);
  if (a->offset != TUNE_ATTN_AUTO) append(buf, n, " offset=%lld", (long long)a->offset);
  if (a->scale != 1.f) append(buf, n, " scale=%.9g", a->scale);   /* 9 digits: the float read back as it was */
  if (a->softcap > 0.f) append(buf, n, " softcap=%.9g", a->softcap);
  return buf;
}

typedef struct List {       /* the problems so far, and the dtypes and ops a shape takes */
  gen_Problem *p;
  tune_AttnOptions *a;      /* per problem: an attention problem's options (the defaults for the others) */
  int n, cap;
  int dtypes[MAX_WORDS], ndtypes, ops[MAX_WORDS], nops;
} List;

/* Append p (with a) unless the list has its cache key: one of an attention key's shapes is tuned. */
static int add(List *l, const gen_Problem *p, const tune_AttnOptions *a)
{
  for (int i = 0; i < l->n; i++) {
    const gen_Problem *q = &l->p[i];
    if (q->rows == p->rows && q->cols == p->cols && q->dtype == p->dtype && q->op == p->op && q->mask == p->mask &&
        q->bias == p->bias)
      return 0;
  }
  if (l->n == l->cap) {
    const int cap = l->cap ? 2 * l->cap : 16;
    gen_Problem *gp = realloc(l->p, sizeof *gp * (size_t)cap);
    if (gp) l->p = gp;
    tune_AttnOptions *ga = gp ? realloc(l->a, sizeof *ga * (size_t)cap) : NULL;
    if (!ga) return 1;
    l->a = ga, l->cap = cap;
  }
  l->p[l->n] = *p, l->a[l->n++] = *a;
  return 0;
}

/* The problem of shape, dtype and op, and for an attention op its options (nw words name=value
** after the op); 0, or 1 with err. */
static int problem(const char *shape, int dtype, int op, char words[][64], int nw, gen_Problem *p, tune_AttnOptions *a,
                   char *err, size_t errlen)
{
  const int attn = gen_op_is_attn(op);
  memset(p, 0, sizeof *p);
  tune_attn_defaults(a);
  p->dtype = dtype, p->op = op;
  if (!attn && nw) return snprintf(err, errlen, "expected 'RxC [dtype] [op]', got '%s'", words[0]), 1;
  if (attn ? cli_parse_attn_shape(shape, &p->rows, &p->cols, a, err, errlen) : gen_parse_shape(shape, &p->rows, &p->cols, err, errlen))
    return 1;
  for (int i = 0; i < nw; i++) {
    char *eq = strchr(words[i], '=');
    if (!eq) return snprintf(err, errlen, "expected an option as name=value (mask=causal), got '%s'", words[i]), 1;
    *eq = '\0';
    if (cli_parse_attn(words[i], eq + 1, &p->mask, &p->bias, a, err, errlen)) return 1;
  }
  if (cli_check_problem(p, a, err, errlen)) return 1;
  if (attn) cli_attn_bytes(p, a);
  return 0;
}

/* shape x dtypes x ops into the list, the nw words after the op its attention options. */
static int cross(List *l, const char *shape, const int *dtypes, int nd, const int *ops, int no, char words[][64], int nw,
                 char *err, size_t errlen)
{
  gen_Problem p;
  tune_AttnOptions a;
  for (int d = 0; d < nd; d++)
    for (int k = 0; k < no; k++) {
      if (problem(shape, dtypes[d], ops[k], words, nw, &p, &a, err, errlen)) return 1;
      if (add(l, &p, &a)) return snprintf(err, errlen, "out of memory"), 1;
    }
  return 0;
}

/* One line of a shapes file: RxC [dtype] [op] (an attention op: BxHxQxK and its options), or nothing. */
static int file_line(List *l, char *line, char *err, size_t errlen)
{
  char w[LINE_WORDS][64];
  int d, op;
  line[strcspn(line, "#")] = '\0';
  int n = split(line, 0, w, LINE_WORDS);
  if (n < 0) return snprintf(err, errlen, "more than %d words", LINE_WORDS), 1;
  if (n >= 2 && (d = gen_parse_dtype(w[1])) < 0) return snprintf(err, errlen, "unknown dtype '%s' (f32, f16, bf16)", w[1]), 1;
  if (n >= 3 && (op = gen_parse_op(w[2])) < 0) return snprintf(err, errlen, "unknown op '%s' (" CLI_OPS ")", w[2]), 1;
  if (n < 1) return 0;
  return cross(l, w[0], n >= 2 ? &d : l->dtypes, n >= 2 ? 1 : l->ndtypes, n >= 3 ? &op : l->ops, n >= 3 ? 1 : l->nops,
               w + 3, n > 3 ? n - 3 : 0, err, errlen);
}

static int read_file(List *l, const char *path, char *err, size_t errlen)
{
  char line[1024], why[512];
  int no = 0, rc = 0, before = l->n;
  FILE *f = fopen(path, "r");
  if (!f) return snprintf(err, errlen, "cannot read --shapes '%s'", path), 1;
  while (!rc && fgets(line, sizeof line, f)) {
    no++;
    if (!strchr(line, '\n') && !feof(f)) rc = 1, snprintf(why, sizeof why, "line longer than %d characters", (int)sizeof line - 2);
    else rc = file_line(l, line, why, sizeof why);
  }
  if (rc) snprintf(err, errlen, "%s:%d: %s", path, no, why);
  else if (ferror(f)) rc = 1, snprintf(err, errlen, "cannot read --shapes '%s'", path);
  else if (l->n == before) rc = 1, snprintf(err, errlen, "%s: no shapes in it", path);
  fclose(f);
  return rc;
}

/* --shapes A[,B...]: the files in order, as one list. */
static int read_files(List *l, const char *paths, char *err, size_t errlen)
{
  char path[4096];
  for (const char *p = paths; ; p += strcspn(p, ",") + 1) {
    size_t n = strcspn(p, ",");
    if (n == 0 || n >= sizeof path) return snprintf(err, errlen, "bad --shapes '%s': FILE[,FILE...]", paths), 1;
    memcpy(path, p, n);
    path[n] = '\0';
    if (read_file(l, path, err, errlen)) return 1;
    if (!p[n]) return 0;
  }
}

int cli_problems(const cli_Options *o, gen_Problem **out, tune_AttnOptions **attn, int *n, char *err, size_t errlen)
{
  List l = { 0 };
  char w[MAX_WORDS][64];
  int rc = 0, nw = 0;
  *out = NULL, *attn = NULL, *n = 0;
  l.dtypes[0] = cli_dtype(o), l.ops[0] = cli_op(o), l.ndtypes = l.nops = 1;
  if (o->dtypes && (l.ndtypes = cli_parse_dtypes(o->dtypes, l.dtypes, err, errlen)) < 0) return 1;
  if (o->ops && (l.nops = cli_parse_ops(o->ops, l.ops, err, errlen)) < 0) return 1;
  if (o->shapes && o->shape) return snprintf(err, errlen, "--shape '%s' and --shapes '%s': give one of them", o->shape, o->shapes), 1;
  if (o->shapes) rc = read_files(&l, o->shapes, err, errlen);
  else if (!o->shape) rc = 1, snprintf(err, errlen, "tuning needs --shape RxC[,RxC...] or --shapes FILE (see --help)");
  else if ((nw = split(o->shape, ',', w, MAX_WORDS)) < 0)
    rc = 1, snprintf(err, errlen, "too many shapes in --shape '%s' (at most %d; use --shapes FILE)", o->shape, MAX_WORDS);
  for (int i = 0; !o->shapes && !rc && i < nw; i++) rc = cross(&l, w[i], l.dtypes, l.ndtypes, l.ops, l.nops, NULL, 0, err, errlen);
  if (rc) return free(l.p), free(l.a), rc;
  *out = l.p, *attn = l.a, *n = l.n;
  return 0;
}
