/*
** list.c — lists on the command line: --shape A,B,C x --dtype f32,bf16 x --op softmax,log_softmax
** (the cross product), --shapes FILE (one "RxC [dtype] [op]" per line, # comments), and
** --gpu all or 0,1,3. Parsing only: errors come back in err, naming the bad value (and the
** file and line); nothing is printed.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_WORDS 64

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

/* Append p unless the list has it. */
static int add(gen_Problem **list, int *n, int *cap, const gen_Problem *p)
{
  for (int i = 0; i < *n; i++) {
    const gen_Problem *q = &(*list)[i];
    if (q->rows == p->rows && q->cols == p->cols && q->dtype == p->dtype && q->op == p->op) return 0;
  }
  if (*n == *cap) {
    gen_Problem *grown = realloc(*list, sizeof *grown * (size_t)(*cap = *cap ? 2 * *cap : 16));
    if (!grown) return 1;
    *list = grown;
  }
  (*list)[(*n)++] = *p;
  return 0;
}

typedef struct List {       /* the problems so far, and the dtypes and ops a shape takes */
  gen_Problem *p;
  int n, cap;
  int dtypes[MAX_WORDS], ndtypes, ops[MAX_WORDS], nops;
} List;

/* shape x dtypes x ops into the list. */
static int cross(List *l, const char *shape, const int *dtypes, int nd, const int *ops, int no, char *err, size_t errlen)
{
  gen_Problem p = { 0 };
  if (gen_parse_shape(shape, &p.rows, &p.cols, err, errlen)) return 1;
  for (int d = 0; d < nd; d++)
    for (int k = 0; k < no; k++) {
      p.dtype = dtypes[d], p.op = ops[k];
      if (gen_check_problem(&p, err, errlen)) return 1;
      if (add(&l->p, &l->n, &l->cap, &p)) return snprintf(err, errlen, "out of memory"), 1;
    }
  return 0;
}

/* One line of a shapes file: RxC [dtype] [op], or nothing. */
static int file_line(List *l, char *line, char *err, size_t errlen)
{
  char w[4][64];
  int d, op;
  line[strcspn(line, "#")] = '\0';
  int n = split(line, 0, w, 4);
  if (n > 3) return snprintf(err, errlen, "expected 'RxC [dtype] [op]', got '%s'", w[3]), 1;
  if (n >= 2 && (d = gen_parse_dtype(w[1])) < 0) return snprintf(err, errlen, "unknown dtype '%s' (f32, f16, bf16)", w[1]), 1;
  if (n >= 3 && (op = gen_parse_op(w[2])) < 0) return snprintf(err, errlen, "unknown op '%s' (" CLI_OPS ")", w[2]), 1;
  if (n < 1) return 0;
  return cross(l, w[0], n >= 2 ? &d : l->dtypes, n >= 2 ? 1 : l->ndtypes, n >= 3 ? &op : l->ops, n >= 3 ? 1 : l->nops,
               err, errlen);
}

static int read_file(List *l, const char *path, char *err, size_t errlen)
{
  char line[1024], why[512];
  int no = 0, rc = 0;
  FILE *f = fopen(path, "r");
  if (!f) return snprintf(err, errlen, "cannot read --shapes '%s'", path), 1;
  while (!rc && fgets(line, sizeof line, f)) {
    no++;
    if (!strchr(line, '\n') && !feof(f)) rc = 1, snprintf(why, sizeof why, "line longer than %d characters", (int)sizeof line - 2);
    else rc = file_line(l, line, why, sizeof why);
  }
  if (rc) snprintf(err, errlen, "%s:%d: %s", path, no, why);
  else if (ferror(f)) rc = 1, snprintf(err, errlen, "cannot read --shapes '%s'", path);
  else if (l->n == 0) rc = 1, snprintf(err, errlen, "%s: no shapes in it", path);
  fclose(f);
  return rc;
}

int cli_problems(const cli_Options *o, gen_Problem **out, int *n, char *err, size_t errlen)
{
  List l = { 0 };
  char w[MAX_WORDS][64];
  int rc = 0, nw = 0;
  *out = NULL, *n = 0;
  l.dtypes[0] = cli_dtype(o), l.ops[0] = cli_op(o), l.ndtypes = l.nops = 1;
  if (o->dtypes && (l.ndtypes = cli_parse_dtypes(o->dtypes, l.dtypes, err, errlen)) < 0) return 1;
  if (o->ops && (l.nops = cli_parse_ops(o->ops, l.ops, err, errlen)) < 0) return 1;
  if (o->shapes && o->shape) return snprintf(err, errlen, "--shape '%s' and --shapes '%s': give one of them", o->shape, o->shapes), 1;
  if (o->shapes) rc = read_file(&l, o->shapes, err, errlen);
  else if (!o->shape) rc = 1, snprintf(err, errlen, "tuning needs --shape RxC[,RxC...] or --shapes FILE (see --help)");
  else if ((nw = split(o->shape, ',', w, MAX_WORDS)) < 0)
    rc = 1, snprintf(err, errlen, "too many shapes in --shape '%s' (at most %d; use --shapes FILE)", o->shape, MAX_WORDS);
  for (int i = 0; !o->shapes && !rc && i < nw; i++) rc = cross(&l, w[i], l.dtypes, l.ndtypes, l.ops, l.nops, err, errlen);
  if (rc) return free(l.p), rc;
  *out = l.p, *n = l.n;
  return 0;
}
