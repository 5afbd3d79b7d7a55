/*
** untuned.c — what an untuned shape gets: `explain` (the config the runtime would use for a
** shape and where it comes from, for a GPU or, without one, an arch) and `pretune` (tune a grid
** of shapes, or take a cache's entries, and write a default table, templates/defaults/sm_XX.tsv).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
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

/* The tuned entry the runtime would load for p (this shape, or these cols): 1 when said. */
static int explain_cached(cache_Db *db, const cache_Key *k)
{
  cache_Entry e;
  if (!db) return 0;
  int rc = cache_get(db, k, &e);
  if (rc != CACHE_OK) rc = cache_similar(db, k, &e);
  if (rc != CACHE_OK) return 0;
  printf("kernel   %s\nsource   your cache: tuned for %lldx%lld (%.3f of copy)\n", e.config, (long long)e.key.rows,
         (long long)e.key.cols, e.frac);
  cache_entry_free(&e);
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
  if (!o->unaligned && explain_cached(db, &base)) {
    rc = 0;
    goto done;
  }
  if (untuned_choose(g, db, &base, &p, o->unaligned, &ch, o->err, sizeof o->err)) {
    cli_fail("%s", o->err);
    goto done;
  }
  printf("kernel   %s\nsource   %s\n", ch.config, ch.source);
  if (ch.note[0]) printf("note     %s\n", ch.note);
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

static int write_table(cli_Options *o, const cache_Entry *e, int n, const char *model, const char *hash, const char *made)
{
  char tmp[4200];
  int arch = 0, sms = 0, rows = 0, narrowed = 0;
  snprintf(tmp, sizeof tmp, "%s.tmp", o->output);
  FILE *f = fopen(tmp, "w");
  if (!f) return cli_fail("cannot write '%s'", tmp), 1;
  /* the whole GPU's entries: those of --sms hold fewer SMs, and never stand for the whole */
  for (int i = 0; i < n; i++)
    if (!strcmp(e[i].key.gpu, model) && !strcmp(e[i].key.templates, hash) && e[i].key.sms > sms)
      arch = e[i].key.arch, sms = e[i].key.sms;
  fprintf(f, "# softmax-tune default table: the tuned config per problem on one GPU, adapted for shapes nobody tuned (docs/untuned.md)\n");
  fprintf(f, "# gpu\t%s\n# arch\t%d\n# sms\t%d\n# templates\t%s\n# made\t%s\n", model, arch, sms, hash, made);
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
  printf("wrote %s: %d problems of %s (sm_%d, %d SMs), templates %.12s\n", o->output, rows, model, arch, sms, hash);
  if (narrowed) printf("left out %d entries tuned on fewer of its SMs (--sms)\n", narrowed);
  return 0;
}

/* The table from the cache's entries of one GPU model. */
static int table_from_cache(cli_Options *o, const char *made)
{
  cache_Db *db = NULL;
  cache_Entry *e = NULL;
  cache_Key f, cur;
  gen_State *g = NULL;
  tune_Device none = { 0 };
  gen_Problem p = { .rows = 1, .cols = 1 };
  char path[4096];
  int n = 0, rc = cli_open_cache(o, &db, path, sizeof path);
  if (rc) return rc;
  cli_filter(o, &f);
  f.rows = f.cols = 0, f.dtype = f.op = -1;
  rc = 1;
  if (cache_entries(db, &f, &e, &n)) cli_fail("%s", cache_error(db));
  else if (gen_open(&g, o->templates, o->err, sizeof o->err) || tune_key(g, &none, &p, &cur, o->err, sizeof o->err))
    cli_fail("%s", o->err);
  else {
    const char *model = pick_model(o, e, n);
    qsort(e, (size_t)n, sizeof *e, by_problem);
    const char *hash = model ? pick_templates(e, n, cur.templates) : NULL;
    if (!hash) rc = 2, cli_fail("no entries%s%s in %s to write a table from", model ? " of " : "", model ? model : "", path);
    else rc = write_table(o, e, n, model, hash, made);
    if (hash && strcmp(hash, cur.templates))
      cli_fail("warning: the entries were tuned with templates %.12s, these are %.12s: the table is stale (tune again)", hash, cur.templates);
  }
  free(e);
  gen_close(g);
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

int cli_pretune(cli_Options *o)
{
  char made[1024];
  tune_Driver drv = { 0 };
  tune_Device dev;
  if (!o->output) return cli_fail("pretune needs -o FILE (the table, such as templates/defaults/sm_90.tsv)"), 2;
  if (o->restamp && (o->from_cache || o->grid)) return cli_fail("pretune --restamp DIR takes no --grid or --from-cache"), 2;
  if (o->restamp) return cli_restamp(o);
  if (!o->from_cache && !o->grid) return cli_fail("pretune needs --grid FILE (shapes to tune) or --from-cache"), 2;
  if (o->from_cache && o->grid) return cli_fail("pretune takes --grid FILE or --from-cache, not both"), 2;
  if (o->from_cache) {
    snprintf(made, sizeof made, "softmax-tune pretune --from-cache%s%s -o %s", o->gpu_model ? " --gpu-model " : "",
             o->gpu_model ? o->gpu_model : "", shown(o->output));
    return table_from_cache(o, made);
  }
  snprintf(made, sizeof made, "softmax-tune pretune --gpu %d --grid %s -o %s", o->gpu, shown(o->grid), shown(o->output));
  int rc = tune_driver_load(&drv, o->err, sizeof o->err) || tune_device(&drv, o->gpu, &dev, o->err, sizeof o->err);
  if (drv.lib) tune_driver_unload(&drv);
  if (rc) return cli_fail("%s", o->err), 1;
  o->shapes = o->grid;
  rc = cli_batch(o);
  if (rc != 0 && rc != 1) return rc;
  o->gpu_model = dev.name;
  int wrote = table_from_cache(o, made);
  return wrote ? wrote : rc;
}
