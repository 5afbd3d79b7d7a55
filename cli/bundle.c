/*
** bundle.c — `softmax-tune cache export [filters] [--with-host] -o FILE` and `softmax-tune cache
** import FILE [--retime]`: tuning choices carried between hosts, their kernels built again on
** the importing one (cache/bundle.h).
*/
#include <stdio.h>
#include <string.h>

#include "bundle.h"
#include "cli.h"
#include "reverify.h"

/* A bundle's or its output's fault is bad input (2); a cache with nothing to give, 1. */
static int status_of(int rc)
{
  return rc == CACHE_REFUSED ? 2 : 1;
}

int cli_cache_export(cli_Options *o)
{
  char path[4096];
  cache_Key f;
  cache_Bundle b;
  if (o->nargs > 1) return cli_fail("cache export takes no file argument; got '%s' (the bundle is -o FILE)", o->args[1]), 2;
  if (!o->output) return cli_fail("cache export needs -o FILE, the bundle to write"), 2;
  if (cache_path(o->cache, 0, path, sizeof path, o->err, sizeof o->err)) return cli_fail("%s", o->err), 2;
  cli_filter(o, &f);
  int rc = cache_export(path, &f, o->with_host, o->output, &b, o->err, sizeof o->err);
  if (rc) return cli_fail("%s", o->err), status_of(rc);
  printf("exported %d entr%s, %d run%s and %d trials from %s to %s\n", b.entries, b.entries == 1 ? "y" : "ies", b.runs,
         b.runs == 1 ? "" : "s", b.trials, path, o->output);
  return 0;
}

/* This host's side of an import: its templates, NVRTC and kept cubins; with --retime, its GPU. */
static int here(cli_Options *o, gen_State **g, tune_Unit **units, tune_Retimer *t, cache_Rebuild *r, char *cubins,
                size_t len)
{
  int n = 0;
  memset(r, 0, sizeof *r);
  if (gen_open(g, o->templates, o->err, sizeof o->err)) return cli_fail("%s", o->err), 2;
  if (tune_templates_hash(*g, r->templates, &r->nvrtc, o->err, sizeof o->err)) return cli_fail("%s", o->err), 1;
  cache_cubin_dir(NULL, cubins, len);
  r->gen = *g, r->cubins = cubins;
  if (!o->retime) return 0;
  if (tune_gpu_units(&o->gpu, 1, units, &n, o->err, sizeof o->err)) return cli_fail("cache import --retime: %s", o->err), 1;
  const tune_Device *d = (*units)->dev;
  snprintf(r->gpu, sizeof r->gpu, "%s", d->name);
  r->arch = d->arch, r->sms = d->sms, r->driver = d->driver;
  t->unit = *units, t->gen = *g;
  r->retime = tune_unit_retime, r->ud = t;
  return 0;
}

static void print_import(const cli_Options *o, const char *path, const cache_Bundle *b)
{
  printf("imported %s (format %d) into %s: %d entr%s: %d new, %d replaced a slower one, %d left out (the one here is as "
         "fast)", o->args[1], b->format, path, b->entries, b->entries == 1 ? "y" : "ies", b->added, b->replaced, b->kept);
  printf("; every kernel built here, %d the same bytes as the exporting host's", b->same);
  if (b->foreign) printf("; %d of other templates, in the log only", b->foreign);
  if (o->retime) printf("; %d verified and timed on this GPU, %d failed (left out)", b->retimed, b->dropped);
  if (b->entries - b->foreign - b->retimed - b->dropped > 0)
    printf("; %d to be verified before first use", b->entries - b->foreign - b->retimed - b->dropped);
  if (b->runs) printf("; runs %lld-%lld in the log", (long long)b->first_run, (long long)b->last_run);
  printf("\n");
}

int cli_cache_import(cli_Options *o)
{
  char path[4096], cubins[4096];
  cache_Bundle b;
  cache_Rebuild r;
  gen_State *g = NULL;
  tune_Retimer t = { NULL, NULL };
  tune_Unit *units = NULL;
  if (o->nargs != 2) return cli_fail("cache import needs one bundle file: softmax-tune cache import FILE"), 2;
  if (cache_path(o->cache, 1, path, sizeof path, o->err, sizeof o->err)) return cli_fail("%s", o->err), 2;
  int rc = here(o, &g, &units, &t, &r, cubins, sizeof cubins);
  if (!rc && (rc = cache_import(path, o->args[1], &r, &b, o->err, sizeof o->err))) {
    cli_fail("%s", o->err);
    rc = status_of(rc);
  } else if (!rc) {
    print_import(o, path, &b);
  }
  tune_gpu_units_free(units, units ? 1 : 0);
  gen_close(g);
  return rc;
}
