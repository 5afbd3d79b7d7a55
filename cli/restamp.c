/*
** restamp.c — `softmax-tune pretune --restamp DIR -o TABLE`: a default table made with the
** templates in DIR is carried over to these templates when every entry's kernel is the same
** under both (source and launch): a change elsewhere in the templates, such as a new op, leaves
** the table's kernels as they were, and their timings with them. The table's templates line
** then names these templates and its made line says it was restamped. One entry whose kernel
** differs refuses the whole table (tune it again: pretune --grid); the file is rewritten whole
** or not at all.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tune.h"

typedef struct Table {
  char *text;               /* the file, its lines cut in place */
  char *lines[4096];
  int n;
  int arch;
  const char *hash;         /* the templates line's value */
} Table;

static int read_table(const char *path, Table *t)
{
  FILE *f = fopen(path, "rb");
  long size;
  memset(t, 0, sizeof *t);
  if (!f) return cli_fail("cannot read the table '%s'", path), 2;
  if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) || !(t->text = malloc((size_t)size + 1)) ||
      fread(t->text, 1, (size_t)size, f) != (size_t)size) {
    fclose(f);
    return cli_fail("cannot read the table '%s'", path), 1;
  }
  fclose(f);
  t->text[size] = '\0';
  for (char *s = t->text, *nl; *s && t->n < 4096; s = nl + 1) {
    t->lines[t->n++] = s;
    if (!(nl = strchr(s, '\n'))) break;
    *nl = '\0';
  }
  for (int i = 0; i < t->n; i++) {
    if (!strncmp(t->lines[i], "# arch\t", 7)) t->arch = atoi(t->lines[i] + 7);
    if (!strncmp(t->lines[i], "# templates\t", 12)) t->hash = t->lines[i] + 12;
  }
  if (!t->arch || !t->hash) return cli_fail("'%s' is not a default table (no arch or templates line)", path), 2;
  return 0;
}

/* The templates hash of g. */
static int hash_of(gen_State *g, char *hash, char *err, size_t errlen)
{
  tune_Device none = { 0 };
  gen_Problem p = { .rows = 1, .cols = 1 };
  cache_Key k;
  if (tune_key(g, &none, &p, &k, err, errlen)) return 1;
  memcpy(hash, k.templates, sizeof k.templates);
  return 0;
}

/* 0 when an entry line (dtype op rows cols frac config) renders alike under a and b. */
static int same_kernel(gen_State *a, gen_State *b, int arch, const char *line, char *why, size_t n)
{
  char dtype[16], op[32], config[256];
  long long rows, cols;
  double frac;
  gen_Kernel ka = { 0 }, kb = { 0 };
  if (sscanf(line, "%15s %31s %lld %lld %lf %255s", dtype, op, &rows, &cols, &frac, config) != 6)
    return snprintf(why, n, "a line that is no entry: '%s'", line), 1;
  gen_Problem p = { .rows = rows, .cols = cols, .dtype = gen_parse_dtype(dtype), .op = gen_parse_op(op), .arch = arch };
  if (p.dtype < 0 || p.op < 0) return snprintf(why, n, "entry %lldx%lld: unknown dtype or op '%s %s'", rows, cols, dtype, op), 1;
  int rc = gen_render(a, &p, config, &ka) || gen_render(b, &p, config, &kb);
  if (rc) snprintf(why, n, "entry %lldx%lld %s %s does not render: %s", rows, cols, dtype, op, gen_error(ka.source ? b : a));
  else if (strcmp(ka.source, kb.source) || memcmp(&ka.launch, &kb.launch, sizeof ka.launch))
    rc = 1, snprintf(why, n, "entry %lldx%lld %s %s: its kernel differs under these templates", rows, cols, dtype, op);
  gen_kernel_free(&ka);
  gen_kernel_free(&kb);
  return rc;
}

static int write_restamped(const char *path, const Table *t, const char *hash)
{
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return cli_fail("cannot write '%s'", tmp), 1;
  for (int i = 0; i < t->n; i++) {
    if (t->lines[i] == t->hash - 12) fprintf   /* the templates line */(f, "# templates\t%s\n", hash);
    else if (!strncmp(t->lines[i], "# made\t", 7))
      fprintf(f, "%s; restamped from templates %.12s by softmax-tune pretune --restamp (every entry's kernel the same)\n",
              t->lines[i], t->hash);
    else if (i < t->n - 1 || t->lines[i][0]) fprintf(f, "%s\n", t->lines[i]);
  }
  if (fclose(f) || rename(tmp, path)) return remove(tmp), cli_fail("cannot write '%s'", path), 1;
  return 0;
}

int cli_restamp(cli_Options *o)
{
  Table t;
  gen_State *old = NULL, *cur = NULL;
  char hold[65], hcur[65], why[512];
  int entries = 0, rc = read_table(o->output, &t);
  if (!rc && (gen_open(&old, o->restamp, o->err, sizeof o->err) || gen_open(&cur, o->templates, o->err, sizeof o->err) ||
              hash_of(old, hold, o->err, sizeof o->err) || hash_of(cur, hcur, o->err, sizeof o->err)))
    rc = 1, cli_fail("%s", o->err);
  if (!rc && strcmp(hold, t.hash))
    rc = 2, cli_fail("the table was made with templates %.12s, but '%s' holds templates %.12s", t.hash, o->restamp, hold);
  for (int i = 0; !rc && i < t.n; i++) {
    if (t.lines[i][0] == '#' || !t.lines[i][0] || !strncmp(t.lines[i], "dtype\t", 6)) continue;
    if (same_kernel(old, cur, t.arch, t.lines[i], why, sizeof why)) rc = 1, cli_fail("%s: tune the table again (pretune --grid)", why);
    entries++;
  }
  if (!rc && !strcmp(hold, hcur)) printf("%s: already made for these templates (%.12s)\n", o->output, hcur);
  else if (!rc && !(rc = write_restamped(o->output, &t, hcur)))
    printf("%s: %d entries, each kernel the same under templates %.12s and %.12s: restamped\n", o->output, entries, hold, hcur);
  gen_close(old);
  gen_close(cur);
  free(t.text);
  return rc;
}
