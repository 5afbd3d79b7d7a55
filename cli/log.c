/*
** log.c — reading the database: `log` (what a run tried, how fast, why rejected) and
** `cache list|show|clear` (export and import: bundle.c).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tune.h"

void cli_filter(const cli_Options *o, cache_Key *f)
{
  cache_filter_all(f);
  if (o->gpu_model) snprintf(f->gpu, sizeof f->gpu, "%s", o->gpu_model);
  f->rows = o->rows;
  f->cols = o->cols;
  f->dtype = o->dtype;
  f->op = o->op;
  f->mask = o->mask, f->bias = o->bias;
}

int cli_open_cache(cli_Options *o, cache_Db **db, char *path, size_t n)
{
  int rc;
  if (cache_path(o->cache, 0, path, n, o->err, sizeof o->err)) return cli_fail("%s", o->err), 2;
  rc = cache_open(db, path, 0, o->err, sizeof o->err);
  if (rc == CACHE_MISS) {
    printf("%s\n", o->err);
    return 1;
  }
  if (rc) return cli_fail("%s", o->err), 2;
  return 0;
}

/* Trials in report order: verified fastest first, then pruned and failed as they came. */
static int by_report(const void *a, const void *b)
{
  const cache_Trial *x = a, *y = b;
  int ox = strcmp(x->status, "ok") != 0, oy = strcmp(y->status, "ok") != 0;
  if (ox != oy) return ox - oy;
  if (!ox) return x->us < y->us ? -1 : x->us > y->us;
  return 0;
}

static void json_str(const char *s)
{
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
    else putchar(*s);
  }
  putchar('"');
}

static void csv_str(const char *s)
{
  putchar('"');
  for (; *s; s++) {
    if (*s == '"') putchar('"');
    putchar(*s);
  }
  putchar('"');
}

static void print_json(const cache_Run *r, const cache_Trial *t, int n)
{
  printf("{\"run\": %lld, \"started\": ", (long long)r->id);
  json_str(r->started);
  printf(", \"seconds\": %.3f, \"gpu\": ", r->seconds);
  json_str(r->key.gpu);
  printf(", \"arch\": %d, \"dtype\": \"%s\", \"op\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"status\": ", r->key.arch,
         gen_dtype_name(r->key.dtype), cli_key_op(&r->key, (char[64]){ 0 }, 64), (long long)r->key.rows, (long long)r->key.cols);
  json_str(r->status);
  printf(", \"origin\": ");
  json_str(r->origin);
  printf(", \"copy_us\": %.3f, \"winner\": ", r->copy_us);
  json_str(r->winner);
  printf(", \"winner_us\": %.3f, \"trials\": [", r->winner_us);
  for (int i = 0; i < n; i++) {
    printf("%s\n  {\"config\": ", i ? "," : "");
    json_str(t[i].config);
    printf(", \"status\": \"%s\", \"reason\": ", t[i].status);
    json_str(t[i].reason);
    printf(", \"regs\": %d, \"local_bytes\": %d, \"smem\": %d, \"blocks_sm\": %d, \"occupancy\": %.3f, \"us\": %.3f,"
           " \"gbps\": %.1f, \"frac\": %.4f, \"max_err\": %.3g, \"finalist\": %s}",
           t[i].regs, t[i].local_bytes, t[i].smem, t[i].blocks_sm, t[i].occupancy, t[i].us, t[i].gbps, t[i].frac,
           t[i].max_err, t[i].finalist ? "true" : "false");
  }
  printf("]}\n");
}

static void print_csv(const cache_Run *r, const cache_Trial *t, int n)
{
  printf("run,config,status,reason,regs,local_bytes,smem,blocks_sm,occupancy,us,gbps,frac,max_err,finalist\n");
  for (int i = 0; i < n; i++) {
    printf("%lld,", (long long)r->id);
    csv_str(t[i].config);
    printf(",%s,", t[i].status);
    csv_str(t[i].reason);
    printf(",%d,%d,%d,%d,%.3f,%.3f,%.1f,%.4f,%.3g,%d\n", t[i].regs, t[i].local_bytes, t[i].smem, t[i].blocks_sm,
           t[i].occupancy, t[i].us, t[i].gbps, t[i].frac, t[i].max_err, t[i].finalist);
  }
}

static void print_table(const cache_Run *r, const cache_Trial *t, int n)
{
  printf("run %lld, %s: %s, sm_%d, %lldx%lld %s %s, %.1f s, %d configs: %d verified, %d pruned, %d failed%s\n",
         (long long)r->id, r->started, r->key.gpu, r->key.arch, (long long)r->key.rows, (long long)r->key.cols,
         gen_dtype_name(r->key.dtype), cli_key_op(&r->key, (char[64]){ 0 }, 64), r->seconds, r->configs, r->verified, r->pruned, r->failed,
         r->origin[0] ? " (imported from a bundle: run on another host)" : "");
  if (strcmp(r->status, "ok") != 0) printf("status: %s\n", r->status);
  char floor[128];
  cli_floor_name(r->key.op, floor, sizeof floor);
  printf("%s %.1f us; winner %s%s\n", floor, r->copy_us, r->winner[0] ? r->winner : "none", r->winner[0] ? "" : " (see below)");
  printf("%-74s %-7s %4s %5s %6s %4s %5s %10s %8s %7s %8s\n", "config", "status", "regs", "local", "smem", "b/sm", "occ",
         "us", "GB/s", "of copy", "err ulp");
  for (int i = 0; i < n; i++) {
    const cache_Trial *x = &t[i];
    if (strcmp(x->status, "ok") == 0)
      printf("%-74s %-7s %4d %5d %6d %4d %4.0f%% %10.1f %8.1f %7.3f %8.2f%s\n", x->config, x->status, x->regs,
             x->local_bytes, x->smem, x->blocks_sm, 100 * x->occupancy, x->us, x->gbps, x->frac, x->max_err,
             x->finalist ? " *" : "");
    else
      printf("%-74s %-7s %4d %5d %6d %4d %4.0f%%  %s\n", x->config, x->status, x->regs, x->local_bytes, x->smem,
             x->blocks_sm, 100 * x->occupancy, x->reason);
  }
  printf("* finalist, re-timed interleaved with the copy floor\n");
}

int cli_log(cli_Options *o)
{
  char path[4096];
  cache_Db *db;
  cache_Key f;
  cache_Run *runs = NULL;
  cache_Trial *t = NULL;
  int n = 0, nt = 0, rc = cli_open_cache(o, &db, path, sizeof path);
  if (rc) return rc;
  cli_filter(o, &f);
  if (cache_runs(db, &f, o->run, 1, &runs, &n) || (n && cache_trials(db, runs[0].id, &t, &nt))) {
    cli_fail("%s", cache_error(db));
    rc = 1;
  } else if (n == 0) {
    if (o->run) printf("no run %ld in %s\n", o->run, path);
    else printf("no runs match in %s\n", path);
    rc = 1;
  } else {
    qsort(t, (size_t)nt, sizeof *t, by_report);
    if (o->format == 'j') print_json(&runs[0], t, nt);
    else if (o->format == 'c') print_csv(&runs[0], t, nt);
    else print_table(&runs[0], t, nt);
  }
  free(runs);
  free(t);
  cache_close(db);
  return rc;
}

/* Where an entry came from, for cache list: "" tuned here. */
static const char *origin(const cache_Entry *e)
{
  if (!e->origin[0]) return "";
  if (strcmp(e->origin, CACHE_RETIMED) == 0) return "  [bundle, retimed here]";
  return e->key.driver ? "  [bundle, verified here, not retimed]" : "  [bundle, not verified or retimed here yet]";
}

static void print_entry(const cache_Entry *e, int full)
{
  printf("%-28s sm_%-3d %-5s %-11s %10lld x %-8lld %10.1f us %6.3f  %s%s\n", e->key.gpu, e->key.arch,
         gen_dtype_name(e->key.dtype), cli_key_op(&e->key, (char[64]){ 0 }, 64), (long long)e->key.rows, (long long)e->key.cols, e->us,
         e->frac, e->config, origin(e));
  if (!full) return;
  printf("    kernel %s: %d threads, %d rows/block, %d blocks/row, cluster %d, %d bytes dynamic smem%s\n", e->kernel,
         e->launch.threads, e->launch.rows_per_block, e->launch.blocks_per_row, e->launch.cluster, e->launch.smem,
         e->launch.coop ? ", cooperative grid" : "");
  printf("    %d SMs, %s driver %d, NVRTC %d, templates %.16s, cubin sha256 %.16s, copy %.1f us, %.1f GB/s\n", e->key.sms,
         e->key.driver ? "verified under" : "to be verified before first use under any", e->key.driver, e->key.nvrtc,
         e->key.templates, e->sha256, e->copy_us, e->gbps);
  if (e->origin[0])
    printf("    imported from a bundle (made %s in its run %lld)%s\n", e->created, (long long)e->run,
           strcmp(e->origin, CACHE_RETIMED) == 0 ? "; verified and timed here (softmax-tune log shows the retiming)"
                                                 : "; its time is the bundle's claim");
  else
    printf("    tuned %s in run %lld\n", e->created, (long long)e->run);
}

int cli_cache(cli_Options *o)
{
  const char *verb = o->nargs > 0 ? o->args[0] : NULL;
  char path[4096];
  cache_Db *db;
  cache_Key f;
  cache_Entry *e = NULL;
  int n = 0, rc;
  if (verb && strcmp(verb, "export") == 0) return cli_cache_export(o);
  if (verb && strcmp(verb, "import") == 0) return cli_cache_import(o);
  if (!verb || o->nargs > 1 || (strcmp(verb, "list") && strcmp(verb, "show") && strcmp(verb, "clear")))
    return cli_fail("cache needs one of list, show, clear, export, import; got '%s'",
                    verb ? (o->nargs > 1 ? o->args[1] : verb) : ""), 2;
  if ((rc = cli_open_cache(o, &db, path, sizeof path))) return rc;
  cli_filter(o, &f);
  if (strcmp(verb, "clear") == 0) {
    if (cache_clear(db, &f, &n)) rc = 1, cli_fail("%s", cache_error(db));
    else printf("removed %d entr%s from %s\n", n, n == 1 ? "y" : "ies", path);
  } else if (cache_entries(db, &f, &e, &n)) {
    cli_fail("%s", cache_error(db));
    rc = 1;
  } else {
    printf("%d entr%s in %s\n", n, n == 1 ? "y" : "ies", path);
    for (int i = 0; i < n; i++) print_entry(&e[i], strcmp(verb, "show") == 0);
  }
  free(e);
  cache_close(db);
  return rc;
}
