/*
** untuned.c — what an untuned shape gets: `explain` (the config the runtime would use for a
** shape and where it comes from, for a GPU or, without one, an arch) and `pretune` (tune a grid
** of shapes, or take a cache's entries, and write a default table, templates/defaults/sm_XX.tsv).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kset.h"
#include "tune.h"
#include "untuned.h"

/* The key base (GPU, templates) explain works for: --arch without a GPU, else GPU --gpu. */
static int explain_device(cli_Options *o, gen_State *g, tune_Device *dev, cache_Key *base, gen_Problem *p)
{
  tune_Driver drv = { 0 };
  memset(dev, 0, sizeof *dev);
  if (o->arch) {
    dev->arch = o->arch;
  } else {
    int rc = tune_driver_load(&drv, o->err, sizeof o->err) || tune_device(&drv, o->gpu, dev, o->err, sizeof o->err);
    if (drv.lib) tune_driver_unload(&drv);
    if (rc) return cli_fail("%s (explain --arch sm_XX needs no GPU)", o->err), 1;
    tune_device_limits(dev, p);
  }
  p->arch = dev->arch;
  if (tune_key(g, dev, p, base, o->err, sizeof o->err)) return cli_fail("%s", o->err), 1;
  return 0;
}

/* The tuned entry the runtime would load for p (this shape, or the nearest of its width class
** [lo, hi]): 1 when said. */
static int explain_cached(cache_Db *db, const cache_Key *k, int64_t lo, int64_t hi)
{
  cache_Entry e;
  if (!db) return 0;
  int rc = cache_get(db, k, &e);
  if (rc != CACHE_OK) rc = cache_similar(db, k, lo, hi, &e);
  if (rc != CACHE_OK) return 0;
  printf("kernel   %s\nsource   your cache: tuned for %lldx%lld (%.3f of copy)\n", e.config, (long long)e.key.rows,
         (long long)e.key.cols, e.frac);
  cache_entry_free(&e);
  return 1;
}

/* The kernel set the runtime would use for p (of these templates, an arch of p's), or NULL; *arch its arch. */
static const kset_Set *set_for(const gen_Problem *p, const char *templates, int *arch)
{
  const kset_Set *k = kset_get(NULL);
  if (k && strncmp(k->h->templates, templates, sizeof k->h->templates)) k = NULL;   /* of other templates: not used */
  *arch = k ? kset_arch_for(k->r, (int)k->h->count, p->arch) : 0;
  return *arch ? k : NULL;
}

/* The kernel set's entry the runtime would load for p (no tuned one; band: its row band): 1 when said. */
static int explain_set(const gen_Problem *p, int64_t hi, int band, const char *templates)
{
  int arch;
  const kset_Set *k = set_for(p, templates, &arch);
  const kset_Record *r =
    k ? kset_find(k->r, (int)k->h->count, arch, p->dtype, p->op, p->mask, p->bias, p->capped != 0, band, hi) : NULL;
  if (!r) return 0;
  printf("kernel   %s\nsource   the kernel set %s (sm_%d, built ahead: nothing to compile): %s\n", r->config, k->path,
         arch, r->source);
  return 1;
}

int cli_explain(cli_Options *o)
{
  gen_State *g = NULL;
  cache_Db *db = NULL;
  tune_Device dev;
  cache_Key base;
  gen_Choice ch;
  char path[4096];
  gen_Problem p;
  int rc = 1;
  cli_problem(o, &p);
  if (!o->shape) return cli_fail("explain needs --shape RxC"), 2;
  if (o->arch && o->gpu_set) return cli_fail("explain takes --gpu N or --arch sm_XX, not both"), 2;
  if (gen_open(&g, o->templates, o->err, sizeof o->err)) return cli_fail("%s", o->err), 1;
  if (explain_device(o, g, &dev, &base, &p)) goto done;
  rc = 2;   /* from here on, a failure is the problem's or the table's: bad input */
  if (gen_heuristic(g, &p, 0, ch.config, sizeof ch.config)) {   /* the problem checked (arch) */
    cli_fail("%s", gen_error(g));
    goto done;
  }
  if (!o->arch && !cache_path(o->cache, 0, path, sizeof path, o->err, sizeof o->err) &&
      cache_open(&db, path, 0, o->err, sizeof o->err) == CACHE_ERROR) {
    cli_fail("%s", o->err);
    rc = 1;
    goto done;
  }
  printf("problem  %lldx%lld %s %s%s on %s%s (sm_%d)\n", (long long)p.rows, (long long)p.cols, gen_dtype_name(p.dtype),
         gen_op_name(p.op), o->unaligned ? ", input and output aligned differently" : "", o->arch ? "" : dev.name,
         o->arch ? "any GPU" : "", p.arch);
  printf("templates %.12s\n", base.templates);
  int64_t lo, hi;
  gen_width_class(p.cols, &lo, &hi);
  gen_Problem key;
  char name[16];
  const int band = kset_key_problem(&p, &key);
  printf("class    cols %lld..%lld: one kernel for every width of it, any rows\n", (long long)lo, (long long)hi);
  if (!o->unaligned && (explain_cached(db, &base, lo, hi) || explain_set(&p, hi, band, base.templates))) {
    rc = 0;
    goto done;
  }
  /* untuned, chosen as the runtime chooses: for the band's rows and the class's widest row */
  printf("band     rows %s: the untuned kernel is chosen for %lldx%lld\n",
         kset_band_name(p.op, p.dtype, p.capped, band, hi, name, sizeof name), (long long)key.rows, (long long)key.cols);
  if (untuned_choose(g, db, &base, &key, o->unaligned, &ch, o->err, sizeof o->err)) {
    cli_fail("%s", o->err);
    goto done;
  }
  printf("kernel   %s\nsource   %s\n", ch.config, ch.source);
  if (ch.note[0]) printf("note     %s\n", ch.note);
  int arch;
  const kset_Set *k = o->unaligned ? NULL : set_for(&p, base.templates, &arch);
  const kset_Record *sub = k ? kset_stand_in(k->r, (int)k->h->count, arch, &p) : NULL;
  if (sub)
    printf("first    the kernel set's stand-in %s (sm_%d, every width) runs while this kernel compiles in the "
           "background, once a machine (kept cubins)\n", sub->config, arch);
  rc = 0;
done:
  cache_close(db);
  gen_close(g);
  return rc;
}

/* ---- pretune ---- */

static int by_problem(const void *a, const void *b)
{
  const cache_Key *x = &((const cache_Entry *)a)->key, *y = &((const cache_Entry *)b)->key;
  if (x->dtype != y->dtype) return x->dtype - y->dtype;
  if (x->op != y->op) return x->op - y->op;
  if (x->cols != y->cols) return x->cols < y->cols ? -1 : 1;
  return x->rows < y->rows ? -1 : x->rows > y->rows;
}

/* The GPU model of the table: --gpu-model, else the one model the entries hold. */
static const char *pick_model(cli_Options *o, const cache_Entry *e, int n)
{
  if (o->gpu_model) return o->gpu_model;
  for (int i = 1; i < n; i++)
    if (strcmp(e[i].key.gpu, e[0].key.gpu)) {
      cli_fail("the cache holds several GPU models ('%s', '%s', ...): pick one with --gpu-model", e[0].key.gpu, e[i].key.gpu);
      return NULL;
    }
  return n ? e[0].key.gpu : NULL;
}

/* The templates hash of the table: these templates' when the model has entries of them, else
** the one with most entries (the table is then stale, and said so). */
static const char *pick_templates(const cache_Entry *e, int n, const char *current)
{
  const char *best = NULL;
  int most = 0;
  for (int i = 0; i < n; i++) {
    int k = 0;
    for (int j = 0; j < n; j++) k += strcmp(e[i].key.templates, e[j].key.templates) == 0;
    if (!strcmp(e[i].key.templates, current)) return current;
    if (k > most) most = k, best = e[i].key.templates;
  }
  return best;
}

/* The arch and SM count of the whole GPU's entries of model and hash: those of --sms hold fewer
** SMs, and never stand for the whole. */
static void whole_gpu(const cache_Entry *e, int n, const char *model, const char *hash, int *arch, int *sms)
{
  *arch = *sms = 0;
  for (int i = 0; i < n; i++)
    if (!strcmp(e[i].key.gpu, model) && !strcmp(e[i].key.templates, hash) && e[i].key.sms > *sms)
      *arch = e[i].key.arch, *sms = e[i].key.sms;
}

/* The table FILE: the entries of model, hash and the whole GPU (e sorted), under a header that
** names gpu (the model, or the models of a table that entries were added to) and made. */
static int write_table(cli_Options *o, const cache_Entry *e, int n, const char *model, const char *gpu, const char *hash,
                       const char *made)
{
  char tmp[4200];
  int arch, sms, rows = 0, narrowed = 0;
  whole_gpu(e, n, model, hash, &arch, &sms);
  snprintf(tmp, sizeof tmp, "%s.tmp", o->output);
  FILE *f = fopen(tmp, "w");
  if (!f) return cli_fail("cannot write '%s'", tmp), 1;
  fprintf(f, "# softmax-tune default table: the tuned config per problem on one GPU, adapted for shapes nobody tuned (docs/untuned.md)\n");
  fprintf(f, "# gpu\t%s\n# arch\t%d\n# sms\t%d\n# templates\t%s\n# made\t%s\n", gpu, arch, sms, hash, made);
  fprintf(f, "dtype\top\trows\tcols\tfrac\tconfig\n");
  for (int i = 0; i < n; i++) {
    const cache_Key *k = &e[i].key;
    if (strcmp(k->gpu, model) || strcmp(k->templates, hash) || k->arch != arch) continue;
    if (k->sms != sms) {
      narrowed++;
      continue;
    }
    fprintf(f, "%s\t%s\t%lld\t%lld\t%.3f\t%s\n", gen_dtype_name(k->dtype), gen_op_name(k->op), (long long)k->rows,
            (long long)k->cols, e[i].frac, e[i].config);
    rows++;
  }
  if (fclose(f) || rename(tmp, o->output)) return remove(tmp), cli_fail("cannot write '%s'", o->output), 1;
  printf("wrote %s: %d problems of %s (sm_%d, %d SMs), templates %.12s\n", o->output, rows, gpu, arch, sms, hash);
  if (narrowed) printf("left out %d entries tuned on fewer of its SMs (--sms)\n", narrowed);
  return 0;
}

/* ---- pretune --add: the new entries join the table FILE ---- */

/* Whether e[0..n) holds problem k among the entries of model and hash. */
static int holds(const cache_Entry *e, int n, const cache_Key *k, const char *model, const char *hash)
{
  for (int i = 0; i < n; i++) {
    const cache_Key *x = &e[i].key;
    if (x->dtype == k->dtype && x->op == k->op && x->rows == k->rows && x->cols == k->cols && x->sms == k->sms &&
        !strcmp(x->gpu, model) && !strcmp(x->templates, hash))
      return 1;
  }
  return 0;
}

/* The table FILE before anything is tuned: readable, and of these templates (current), else 2. */
static int add_check(cli_Options *o, cli_Table *t, const char *current)
{
  int rc = cli_read_table(o->output, t);
  if (!rc && strcmp(t->hash, current))
    rc = 2, cli_fail("--add: the table '%s' was made with templates %.12s, these are %.12s: restamp it (pretune --restamp) or "
                     "tune it whole (pretune --grid without --add)", o->output, t->hash, current);
  return rc;
}

/* t's entries that the new ones (*e, of model and hash, on arch with sms SMs) leave standing,
** appended to *e as entries of model and hash; gpu and made the header's lines. 0, or the
** status after saying why. */
static int add_join(cli_Options *o, const cli_Table *t, cache_Entry **e, int *n, const char *model, const char *hash,
                    char *gpu, char *made, size_t len)
{
  int arch, sms, kept = 0, fresh = 0, old = 0;
  char why[512];
  whole_gpu(*e, *n, model, hash, &arch, &sms);
  if (t->arch != arch || (t->sms && t->sms != sms))
    return cli_fail("--add: the table '%s' is of sm_%d with %d SMs, the new entries of sm_%d with %d SMs (%s): a table is one "
                    "kind of GPU's", o->output, t->arch, t->sms, arch, sms, model), 2;
  cache_Entry *all = realloc(*e, (size_t)(*n + t->n) * sizeof **e);
  if (!all) return cli_fail("out of memory"), 1;
  *e = all;
  for (int i = 0; i < *n; i++) fresh += !strcmp(all[i].key.gpu, model) && !strcmp(all[i].key.templates, hash) && all[i].key.sms == sms;
  int m = *n;
  for (int i = 0; i < t->n; i++) {
    const char *l = t->lines[i];
    if (l[0] == '#' || !l[0] || !strncmp(l, "dtype\t", 6)) continue;
    cache_Entry x = { 0 };
    gen_Problem p;
    if (cli_table_entry(l, t->arch, &p, &x.frac, x.config, why, sizeof why)) return cli_fail("--add: '%s': %s", o->output, why), 2;
    old++;
    x.key = (cache_Key){ .arch = arch, .sms = sms, .dtype = p.dtype, .op = p.op, .rows = p.rows, .cols = p.cols };
    snprintf(x.key.gpu, sizeof x.key.gpu, "%s", model);
    snprintf(x.key.templates, sizeof x.key.templates, "%s", hash);
    if (holds(all, m, &x.key, model, hash)) continue;
    all[(*n)++] = x;
    kept++;
  }
  if (t->gpu && strcmp(t->gpu, model) && !strstr(t->gpu, model)) snprintf(gpu, len, "%s; added: %s", t->gpu, model);
  else snprintf(gpu, len, "%s", t->gpu ? t->gpu : model);
  char *add = strdup(made);
  if (!add) return cli_fail("out of memory"), 1;
  snprintf(made, len, "%s; added %d problems by %s", t->made ? t->made : "?", fresh, add);
  free(add);
  printf("--add: %d new problems, %d of the table's %d kept, %d replaced\n", fresh, kept, old, old - kept);
  return 0;
}

/* The table from the cache's entries of one GPU model, of the current templates when it has
** any; with --add (t), t's entries that these leave standing join them. made: the made line. */
static int table_from_cache(cli_Options *o, const cli_Table *t, const char *current, char *made, size_t len)
{
  cache_Db *db = NULL;
  cache_Entry *e = NULL;
  cache_Key f;
  char path[4096], model[256], hash[65], gpu[1024];
  int n = 0, rc = cli_open_cache(o, &db, path, sizeof path);
  if (rc) return rc;
  cli_filter(o, &f);
  f.rows = f.cols = 0, f.dtype = f.op = -1;
  rc = 1;
  if (cache_entries(db, &f, &e, &n)) {
    cli_fail("%s", cache_error(db));
    goto done;
  }
  const char *m = pick_model(o, e, n);
  qsort(e, (size_t)n, sizeof *e, by_problem);
  const char *h = m ? pick_templates(e, n, current) : NULL;
  rc = 2;
  if (!h) {
    cli_fail("no entries%s%s in %s to write a table from", m ? " of " : "", m ? m : "", path);
    goto done;
  }
  snprintf(model, sizeof model, "%s", m);   /* e moves when t's entries join it */
  snprintf(hash, sizeof hash, "%s", h);
  if (t && strcmp(hash, current))
    cli_fail("--add: the cache's entries of %s were tuned with templates %.12s, these are %.12s: nothing added", model, hash, current);
  else if (!t || !(rc = add_join(o, t, &e, &n, model, hash, gpu, made, len))) {
    qsort(e, (size_t)n, sizeof *e, by_problem);
    rc = write_table(o, e, n, model, t ? gpu : model, hash, made);
  }
  if (!t && strcmp(hash, current))
    cli_fail("warning: the entries were tuned with templates %.12s, these are %.12s: the table is stale (tune again)", hash, current);
done:
  free(e);
  cache_close(db);
  return rc;
}

/* A path as the table's made line names it: a file's own name where the path is absolute, so
** that no directory of the host travels with a shipped table. */
static const char *shown(const char *path)
{
  const char *slash = strrchr(path, '/');
  return path[0] == '/' && slash ? slash + 1 : path;
}

/* A list of paths (--grid A,B) as the made line names them: each as shown() names it. */
static void shown_list(const char *paths, char *out, size_t n)
{
  char path[4096];
  size_t used = 0;
  out[0] = '\0';
  for (const char *p = paths; *p && used < n; p += strcspn(p, ",") + (p[strcspn(p, ",")] != '\0')) {
    snprintf(path, sizeof path, "%.*s", (int)strcspn(p, ","), p);
    used += (size_t)snprintf(out + used, n - used, "%s%s", used ? "," : "", shown(path));
  }
}

/* The current templates' hash, and with --add the table FILE checked against it: 0, or the status. */
static int pretune_start(cli_Options *o, cli_Table *t, char current[65])
{
  gen_State *g = NULL;
  int rc = gen_open(&g, o->templates, o->err, sizeof o->err) || cli_templates_hash(g, current, o->err, sizeof o->err);
  gen_close(g);
  if (rc) return cli_fail("%s", o->err), 1;
  return o->add ? add_check(o, t, current) : 0;
}

/* pretune --grid: the device (with --add, of t's kind), the grid tuned into the cache, the table. */
static int pretune_grid(cli_Options *o, const cli_Table *t, const char *current, char *made, size_t len)
{
  tune_Driver drv = { 0 };
  tune_Device dev;
  char grid[4096];
  shown_list(o->grid, grid, sizeof grid);
  snprintf(made, len, "softmax-tune pretune --gpu %d --grid %s -o %s%s", o->gpu, grid, shown(o->output), o->add ? " --add" : "");
  int rc = tune_driver_load(&drv, o->err, sizeof o->err) || tune_device(&drv, o->gpu, &dev, o->err, sizeof o->err);
  if (drv.lib) tune_driver_unload(&drv);
  if (rc) return cli_fail("%s", o->err), 1;
  if (o->add && (dev.arch != t->arch || (t->sms && dev.sms != t->sms)))
    return cli_fail("--add: the table '%s' is of sm_%d with %d SMs, GPU %d (%s) sm_%d with %d: a table is one kind of GPU's",
                    o->output, t->arch, t->sms, o->gpu, dev.name, dev.arch, dev.sms), 2;
  o->shapes = o->grid;
  rc = cli_batch(o);
  if (rc != 0 && rc != 1) return rc;
  o->gpu_model = dev.name;
  int wrote = table_from_cache(o, o->add ? t : NULL, current, made, len);
  return wrote ? wrote : rc;
}

int cli_pretune(cli_Options *o)
{
  char made[8192], current[65];
  cli_Table t = { 0 };
  int rc;
  if (!o->output) return cli_fail("pretune needs -o FILE (the table, such as templates/defaults/sm_90.tsv)"), 2;
  if (o->restamp && (o->from_cache || o->grid || o->add)) return cli_fail("pretune --restamp DIR takes no --grid, --from-cache or --add"), 2;
  if (o->keep_configs && !o->restamp) return cli_fail("--keep-configs goes with pretune --restamp DIR"), 2;
  if (o->restamp) return cli_restamp(o);
  if (!o->from_cache && !o->grid) return cli_fail("pretune needs --grid FILE (shapes to tune) or --from-cache"), 2;
  if (o->from_cache && o->grid) return cli_fail("pretune takes --grid FILE or --from-cache, not both"), 2;
  if ((rc = pretune_start(o, &t, current))) goto done;
  if (o->grid) {
    rc = pretune_grid(o, &t, current, made, sizeof made);
    goto done;
  }
  snprintf(made, sizeof made, "softmax-tune pretune --from-cache%s%s -o %s%s", o->gpu_model ? " --gpu-model " : "",
           o->gpu_model ? o->gpu_model : "", shown(o->output), o->add ? " --add" : "");
  rc = table_from_cache(o, o->add ? &t : NULL, current, made, sizeof made);
done:
  free(t.text);
  return rc;
}
