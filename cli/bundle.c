/*
** bundle.c — `softmax-tune cache export [filters] -o FILE` and `softmax-tune cache import FILE`:
** tuned entries carried between hosts (cache/bundle.h).
*/
#include <stdio.h>
#include <string.h>

#include "bundle.h"
#include "cli.h"

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
  int rc = cache_export(path, &f, o->output, &b, o->err, sizeof o->err);
  if (rc) return cli_fail("%s", o->err), status_of(rc);
  printf("exported %d entr%s, %d run%s and %d trials from %s to %s\n", b.entries, b.entries == 1 ? "y" : "ies", b.runs,
         b.runs == 1 ? "" : "s", b.trials, path, o->output);
  return 0;
}

int cli_cache_import(cli_Options *o)
{
  char path[4096];
  cache_Bundle b;
  if (o->nargs != 2) return cli_fail("cache import needs one bundle file: softmax-tune cache import FILE"), 2;
  if (cache_path(o->cache, 1, path, sizeof path, o->err, sizeof o->err)) return cli_fail("%s", o->err), 2;
  int rc = cache_import(path, o->args[1], &b, o->err, sizeof o->err);
  if (rc) return cli_fail("%s", o->err), status_of(rc);
  printf("imported %s into %s: %d entr%s: %d new, %d replaced a slower one, %d left out (the one here is as fast)",
         o->args[1], path, b.entries, b.entries == 1 ? "y" : "ies", b.added, b.replaced, b.kept);
  if (b.runs) printf("; runs %lld-%lld in the log", (long long)b.first_run, (long long)b.last_run);
  printf("\n");
  return 0;
}
