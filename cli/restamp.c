/*
** restamp.c — `softmax-tune pretune --restamp DIR -o TABLE`: a default table made with the
** templates in DIR is carried over to these templates when every entry's kernel is the same
** under both (source and launch): a change elsewhere in the templates, such as a new op, leaves
** the table's kernels as they were, and their timings with them. The table's templates line
** then names these templates, and its made line stays one line: each command that tuned entries
** (pretune --grid, --from-cache, --add) with the templates it tuned them under, then one
** "restamped" clause however often the table is carried over (made_line). One entry whose kernel
** differs refuses the whole table (tune it again: pretune --grid); the file is rewritten whole
** or not at all. Also what reads a table for the other pretune modes (cli_read_table, --add).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tune.h"

int cli_read_table(const char *path, cli_Table *t)
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
  for (char *s = t->text, *nl; *s; s = nl + 1) {
    if (t->n == CLI_TABLE_LINES) return cli_fail("the table '%s' has more than %d lines", path, CLI_TABLE_LINES), 2;
    t->lines[t->n++] = s;
    if (!(nl = strchr(s, '\n'))) break;
    *nl = '\0';
  }
  for (int i = 0; i < t->n; i++) {
    const char *l = t->lines[i];
    if (!strncmp(l, "# arch\t", 7)) t->arch = atoi(l + 7);
    if (!strncmp(l, "# sms\t", 6)) t->sms = atoi(l + 6);
    if (!strncmp(l, "# gpu\t", 6)) t->gpu = l + 6;
    if (!strncmp(l, "# made\t", 7)) t->made = l + 7;
    if (!strncmp(l, "# templates\t", 12)) t->hash = l + 12;
  }
  if (!t->arch || !t->hash) return cli_fail("'%s' is not a default table (no arch or templates line)", path), 2;
  return 0;
}

int cli_table_entry(const char *line, int arch, gen_Problem *p, double *frac, char config[256], char *why, size_t n)
{
  char dtype[16], op[32];
  long long rows, cols;
  if (sscanf(line, "%15s %31s %lld %lld %lf %255s", dtype, op, &rows, &cols, frac, config) != 6)
    return snprintf(why, n, "a line that is no entry: '%s'", line), 1;
  *p = (gen_Problem){ .rows = rows, .cols = cols, .dtype = gen_parse_dtype(dtype), .op = gen_parse_op(op), .arch = arch };
  if (p->dtype < 0 || p->op < 0) return snprintf(why, n, "entry %lldx%lld: unknown dtype or op '%s %s'", rows, cols, dtype, op), 1;
  return 0;
}

int cli_templates_hash(gen_State *g, char hash[65], char *err, size_t errlen)
{
  tune_Device none = { 0 };
  gen_Problem p = { .rows = 1, .cols = 1 };
  cache_Key k;
  if (tune_key(g, &none, &p, &k, err, errlen)) return 1;
  memcpy(hash, k.templates, sizeof k.templates);
  return 0;
}

/* 0 when an entry line (dtype op rows cols frac config) renders alike under a and b (any: it
** renders under both, the kernels may differ). */
static int same_kernel(gen_State *a, gen_State *b, int arch, const char *line, int any, char *why, size_t n)
{
  char config[256];
  double frac;
  gen_Problem p;
  gen_Kernel ka = { 0 }, kb = { 0 };
  if (cli_table_entry(line, arch, &p, &frac, config, why, n)) return 1;
  const char *dtype = gen_dtype_name(p.dtype), *op = gen_op_name(p.op);
  long long rows = (long long)p.rows, cols = (long long)p.cols;
  int rc = gen_render(a, &p, config, &ka) || gen_render(b, &p, config, &kb);
  if (rc) snprintf(why, n, "entry %lldx%lld %s %s does not render: %s", rows, cols, dtype, op, gen_error(ka.source ? b : a));
  else if (!any && (strcmp(ka.source, kb.source) || memcmp(&ka.launch, &kb.launch, sizeof ka.launch)))
    rc = 1, snprintf(why, n, "entry %lldx%lld %s %s: its kernel differs under these templates", rows, cols, dtype, op);
  gen_kernel_free(&ka);
  gen_kernel_free(&kb);
  return rc;
}

#define RESTAMPED "restamped "
#define TUNED_WITH " (templates "

/* Whether clause c[0..n) already ends in " (templates HASH)". */
static int says_templates(const char *c, size_t n)
{
  size_t k = sizeof TUNED_WITH - 1, h = 0;
  if (n < k + 2 || c[n - 1] != ')') return 0;
  while (h < n - 1 - k && strchr("0123456789abcdef", c[n - 2 - h])) h++;
  return h > 0 && !memcmp(c + n - 1 - h - k, TUNED_WITH, k);
}

/* Clause c[0..n), then " (templates HASH)" where it does not say them yet. */
static void put_clause(FILE *f, int *first, const char *c, size_t n, const char *hash, size_t hn)
{
  fprintf(f, "%s%.*s", *first ? "" : "; ", (int)n, c);
  if (hash && hn && !says_templates(c, n)) fprintf(f, TUNED_WITH "%.*s)", (int)hn, hash);
  *first = 0;
}

/* The made line of a restamped table, one line however often it is restamped: its clauses (the
** commands that tuned entries, "; " between them) each with the templates they tuned under,
** then one restamped clause. Those templates are the next restamped clause's "from templates
** H" (as restamp wrote it before) or, for the last command, the table's templates now (hash):
** --add adds only to a table of the current templates. Earlier restamped clauses go; where one
** kept configs whose kernels changed, the new clause says so too (their fracs stay older). */
static void made_line(FILE *f, const char *made, const char *hash, int keep)
{
  const char *c = made, *held = NULL;
  size_t held_n = 0;
  int first = 1;
  fprintf(f, "# made\t");
  while (*c) {
    const char *end = strstr(c, "; ");
    size_t n = end ? (size_t)(end - c) : strlen(c);
    if (!strncmp(c, RESTAMPED, sizeof RESTAMPED - 1)) {
      const char *kept = strstr(c, "--keep-configs");
      keep |= kept && kept < c + n;
      const char *from = strstr(c, "from templates ");
      size_t hn = 0;
      if (from && from < c + n)
        for (from += 15; from + hn < c + n && strchr("0123456789abcdef", from[hn]); hn++) {}
      if (held) put_clause(f, &first, held, held_n, from, hn), held = NULL;
    } else if (n) {
      if (held) put_clause(f, &first, held, held_n, NULL, 0);
      held = c, held_n = n;
    }
    c += n + (end ? 2 : 0);
  }
  if (held) put_clause(f, &first, held, held_n, hash, 12);
  fprintf(f, "%s" RESTAMPED "by softmax-tune pretune --restamp%s\n", first ? "" : "; ",
          keep ? " --keep-configs (kernels changed, each entry's config valid and kept, its frac measured before)"
               : " (every entry's kernel the same)");
}

static int write_restamped(const char *path, const cli_Table *t, const char *hash, int keep)
{
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return cli_fail("cannot write '%s'", tmp), 1;
  for (int i = 0; i < t->n; i++) {
    if (t->lines[i] == t->hash - 12) fprintf   /* the templates line */(f, "# templates\t%s\n", hash);
    else if (!strncmp(t->lines[i], "# made\t", 7)) made_line(f, t->lines[i] + 7, t->hash, keep);
    else if (i < t->n - 1 || t->lines[i][0]) fprintf(f, "%s\n", t->lines[i]);
  }
  if (fclose(f) || rename(tmp, path)) return remove(tmp), cli_fail("cannot write '%s'", path), 1;
  return 0;
}

int cli_restamp(cli_Options *o)
{
  cli_Table t;
  gen_State *old = NULL, *cur = NULL;
  char hold[65], hcur[65], why[512];
  int entries = 0, rc = cli_read_table(o->output, &t);
  if (!rc && (gen_open(&old, o->restamp, o->err, sizeof o->err) || gen_open(&cur, o->templates, o->err, sizeof o->err) ||
              cli_templates_hash(old, hold, o->err, sizeof o->err) || cli_templates_hash(cur, hcur, o->err, sizeof o->err)))
    rc = 1, cli_fail("%s", o->err);
  if (!rc && strcmp(hold, t.hash))
    rc = 2, cli_fail("the table was made with templates %.12s, but '%s' holds templates %.12s", t.hash, o->restamp, hold);
  for (int i = 0; !rc && i < t.n; i++) {
    if (t.lines[i][0] == '#' || !t.lines[i][0] || !strncmp(t.lines[i], "dtype\t", 6)) continue;
    if (same_kernel(old, cur, t.arch, t.lines[i], o->keep_configs, why, sizeof why))
      rc = 1, cli_fail("%s: tune the table again (pretune --grid)%s", why, o->keep_configs ? "" : ", or keep its configs (--keep-configs)");
    entries++;
  }
  if (!rc && !strcmp(hold, hcur)) printf("%s: already made for these templates (%.12s)\n", o->output, hcur);
  else if (!rc && !(rc = write_restamped(o->output, &t, hcur, o->keep_configs)))
    printf("%s: %d entries, each %s under templates %.12s and %.12s: restamped\n", o->output, entries,
           o->keep_configs ? "config valid" : "kernel the same", hold, hcur);
  gen_close(old);
  gen_close(cur);
  free(t.text);
  return rc;
}
