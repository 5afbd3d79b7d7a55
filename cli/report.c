/*
** report.c — `softmax-tune report`: the tuning log as one self-contained HTML page (inline CSS
** and SVG, no script, nothing fetched), readable offline: where the runs ran (GPU, driver,
** NVRTC, templates, when), every problem's winner, and for each run its trials by fraction of
** copy, its finalists, and what was pruned or failed and why. Every figure is the log's own.
** The page is written beside its destination and renamed over it: nothing half-written.
*/
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"

#define DEFAULT_OUTPUT "softmax-tune-report.html"
#define MAX_RUNS 1000000
#define MAX_GROUPS 64   /* families or kinds of reason told apart in a run; more share the last */

static const char *const CSS =
  "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#222;max-width:1000px;"
  "margin:0 auto;padding:16px 20px}\n"
  "h1{font-size:22px;margin:0 0 2px}h2{font-size:18px;margin:0 0 4px}h3{font-size:14px;margin:14px 0 4px}\n"
  ".muted{color:#777;font-weight:normal}.none{color:#b00}.win{margin:6px 0}\n"
  "code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}\n"
  "table{border-collapse:collapse;font-size:13px;margin:4px 0}\n"
  "th,td{padding:2px 8px;text-align:left;border-bottom:1px solid #eee;vertical-align:top}\n"
  "th{font-weight:600;border-bottom:1px solid #bbb;white-space:nowrap}.num{text-align:right;font-variant-numeric:tabular-nums}\n"
  "section.run{border-top:2px solid #ddd;margin-top:24px;padding-top:12px}\n"
  "svg{width:100%;height:auto;display:block;margin:6px 0}svg text{font:11px system-ui,sans-serif;fill:#555}\n"
  ".tick{text-anchor:end}.grid{stroke:#eee}.floor{stroke:#333;stroke-dasharray:5 3}.floor-label{fill:#333}\n"
  ".mark{opacity:.85}.finalist{stroke:#000;stroke-width:1.5;opacity:1}.winner{stroke:#000;stroke-width:2.5;opacity:1}\n"
  "svg .win-label{font-weight:600;fill:#000}.bar-label{text-anchor:end}.bar-value{text-anchor:middle;font-size:10px}svg .none{fill:#b00}\n"
  "table.finalists,table.rejected{width:100%}td code{font-size:11px}\n"
  ".legend{display:flex;flex-wrap:wrap;gap:2px 18px;font-size:12px;margin:0 0 6px}\n"
  ".sw{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:5px;vertical-align:-1px}\n"
  "summary{cursor:pointer;color:#555;font-size:13px}\n";

/* Trials counted under one name: a family (tag: its colour) or a kind of reason (tag: status). */
typedef struct Group {
  char name[96], tag[24];
  int n, timed;
  double best;
} Group;

/* ---- groups ---- */

/* The group of g[0..*n) with this name and tag, made when new (past MAX_GROUPS: the last). */
static Group *group(Group *g, int *n, const char *name, const char *tag)
{
  for (int i = 0; i < *n; i++)
    if (strcmp(g[i].name, name) == 0 && strcmp(g[i].tag, tag) == 0) return &g[i];
  if (*n == MAX_GROUPS) return snprintf(g[*n - 1].name, sizeof g->name, "(the rest)"), &g[*n - 1];
  Group *x = &g[(*n)++];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%s", name);
  snprintf(x->tag, sizeof x->tag, "%s", tag);
  return x;
}

static int by_best(const void *a, const void *b)
{
  const Group *x = a, *y = b;
  return x->best > y->best ? -1 : x->best < y->best ? 1 : y->n - x->n;
}

/* What a reason says without its particulars: the words before its colon (compile, spills,
** wrong, ...), else the reason with each number as N. */
static void reason_kind(const char *reason, char *out, size_t n)
{
  const char *colon = strchr(reason, ':');
  size_t k = 0;
  if (!reason[0]) snprintf(out, n, "(no reason logged)");
  else if (colon && colon - reason < 40) snprintf(out, n, "%.*s", (int)(colon - reason), reason);
  else {
    for (const char *p = reason; *p && k + 1 < n; p++) {
      out[k++] = isdigit((unsigned char)*p) ? 'N' : *p;
      while (isdigit((unsigned char)*p) && (isdigit((unsigned char)p[1]) || (p[1] == '.' && isdigit((unsigned char)p[2]))))
        p += p[1] == '.' ? 2 : 1;
    }
    out[k] = '\0';
  }
}

/* ---- pieces of text ---- */

/* A templates hash, its first 12 digits shown and the whole as the tooltip. */
static void templates(FILE *f, const char *sha)
{
  char shown[13];
  snprintf(shown, sizeof shown, "%s", sha);
  fputs("<code title=\"", f);
  cli_html(f, sha);
  fputs("\">", f);
  cli_html(f, shown);
  fputs("</code>", f);
}

static void problem_name(FILE *f, const cache_Run *r)
{
  fprintf(f, "%lld\xc3\x97%lld %s %s", (long long)r->key.rows, (long long)r->key.cols, gen_dtype_name(r->key.dtype),
          gen_op_name(r->key.op));
}

/* GPU, compute capability, SMs, driver, NVRTC and templates hash, as one line. */
static void machine(FILE *f, const cache_Key *k)
{
  cli_html(f, k->gpu);
  fprintf(f, ", sm_%d, %d SMs, driver ", k->arch, k->sms);
  cli_version(f, k->driver);
  fputs(", NVRTC ", f);
  cli_version(f, k->nvrtc);
  fputs(", templates ", f);
  templates(f, k->templates);
}

static void run_link(FILE *f, const cache_Run *r)
{
  fprintf(f, "<a href=\"#run-%lld\">run %lld</a>", (long long)r->id, (long long)r->id);
}

/* ---- the page's head: where the runs ran ---- */

static int same_machine(const cache_Run *a, const cache_Run *b)
{
  int c = strcmp(a->key.gpu, b->key.gpu);
  if (!c) c = a->key.arch != b->key.arch ? a->key.arch - b->key.arch : a->key.sms - b->key.sms;
  if (!c) c = a->key.driver != b->key.driver ? a->key.driver - b->key.driver : a->key.nvrtc - b->key.nvrtc;
  return c ? c : strcmp(a->key.templates, b->key.templates);
}

static int same_problem(const cache_Run *a, const cache_Run *b)
{
  int c = strcmp(a->key.gpu, b->key.gpu);
  if (!c) c = a->key.dtype != b->key.dtype ? a->key.dtype - b->key.dtype : a->key.op - b->key.op;
  if (!c) c = a->key.cols != b->key.cols ? (a->key.cols < b->key.cols ? -1 : 1) : 0;
  return c ? c : a->key.rows != b->key.rows ? (a->key.rows < b->key.rows ? -1 : 1) : 0;
}

/* Orders of pointers to runs: by machine or by problem, newest first within one. */
static int newest(const cache_Run *a, const cache_Run *b)
{
  return a->id > b->id ? -1 : a->id < b->id;
}

static int by_machine(const void *a, const void *b)
{
  const cache_Run *x = *(const cache_Run *const *)a, *y = *(const cache_Run *const *)b;
  int c = same_machine(x, y);
  return c ? c : newest(x, y);
}

static int by_problem(const void *a, const void *b)
{
  const cache_Run *x = *(const cache_Run *const *)a, *y = *(const cache_Run *const *)b;
  int c = same_problem(x, y);
  return c ? c : newest(x, y);
}

/* Pointers to the n runs in the order cmp; NULL when out of memory. */
static const cache_Run **sorted(const cache_Run *runs, int n, int (*cmp)(const void *, const void *))
{
  const cache_Run **p = malloc(sizeof *p * (size_t)n);
  if (!p) return NULL;
  for (int i = 0; i < n; i++) p[i] = &runs[i];
  qsort(p, (size_t)n, sizeof *p, cmp);
  return p;
}

static void head(FILE *f, const char *cache, const cache_Run *runs, int n)
{
  char now[32];
  time_t t = time(NULL);
  struct tm tm;
  strftime(now, sizeof now, "%Y-%m-%d %H:%M:%SZ", gmtime_r(&t, &tm));
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
             "<title>softmax-tune report</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>softmax-tune report</h1>\n"
             "<p class=\"muted\">the tuning log of <code class=\"cache\">", CSS);
  cli_html(f, cache);
  fprintf(f, "</code>: %d run%s, written %s by softmax-tune %s; every figure is the log's own</p>\n", n,
          n == 1 ? "" : "s", now, CLI_VERSION);
}

/* A table row per GPU, driver, NVRTC and templates, with its runs and when they ran. */
static int machines(FILE *f, const cache_Run *runs, int n)
{
  const cache_Run **p = sorted(runs, n, by_machine);
  if (!p) return cli_fail("out of memory"), 1;
  fputs("<h3>Where it ran</h3>\n<table class=\"machines\">\n<tr><th>GPU</th><th>arch</th><th class=\"num\">SMs</th>"
        "<th>driver</th><th>NVRTC</th><th>templates</th><th class=\"num\">runs</th><th>first</th><th>last</th></tr>\n", f);
  for (int i = 0, j; i < n; i = j) {
    const char *first = p[i]->started;
    for (j = i + 1; j < n && same_machine(p[i], p[j]) == 0; j++) first = p[j]->started;
    fputs("<tr><td>", f);
    cli_html(f, p[i]->key.gpu);
    fprintf(f, "</td><td>sm_%d</td><td class=\"num\">%d</td><td>", p[i]->key.arch, p[i]->key.sms);
    cli_version(f, p[i]->key.driver);
    fputs("</td><td>", f);
    cli_version(f, p[i]->key.nvrtc);
    fputs("</td><td>", f);
    templates(f, p[i]->key.templates);
    fprintf(f, "</td><td class=\"num\">%d</td><td>", j - i);
    cli_html(f, first);
    fputs("</td><td>", f);
    cli_html(f, p[i]->started);
    fputs("</td></tr>\n", f);
  }
  fputs("</table>\n", f);
  free(p);
  return 0;
}

/* ---- across runs: one row per problem ---- */

static void problem_row(FILE *f, const cache_Run *r, int runs)
{
  fputs("<tr><td>", f);
  cli_html(f, r->key.gpu);
  fputs("</td><td>", f);
  problem_name(f, r);
  if (r->winner[0])
    fprintf(f, "</td><td class=\"num\">%.1f</td><td class=\"num\">%.1f</td><td class=\"num\">%.3f</td>", r->winner_us,
            r->copy_us, r->frac);
  else fputs("</td><td class=\"none\" colspan=\"3\">no winner</td>", f);
  fprintf(f, "<td class=\"num\">%.1f</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td>", r->seconds, r->configs, runs);
  run_link(f, r);
  fputs("</td></tr>\n", f);
}

/* Each problem's newest run with a winner (else its newest run): a bar chart and a table. */
static int problems(FILE *f, const cache_Run *runs, int n)
{
  const cache_Run **p = sorted(runs, n, by_problem), **best = malloc(sizeof *best * (size_t)n);
  int *count = malloc(sizeof *count * (size_t)n), k = 0;
  if (!p || !best || !count) return free(p), free(best), free(count), cli_fail("out of memory"), 1;
  for (int i = 0, j; i < n; i = j, k++) {
    best[k] = p[i];
    for (j = i; j < n && same_problem(p[i], p[j]) == 0; j++)
      if (!best[k]->winner[0] && p[j]->winner[0]) best[k] = p[j];
    count[k] = j - i;
  }
  fprintf(f, "<h2>Problems</h2>\n<p class=\"muted\">%d problem%s: each one's newest run with a winner; a bar leads to its "
             "run</p>\n", k, k == 1 ? "" : "s");
  cli_chart_problems(f, best, k);
  fputs("<table class=\"problems\">\n<tr><th>GPU</th><th>problem</th><th class=\"num\">winner \xc2\xb5s</th>"
        "<th class=\"num\">copy \xc2\xb5s</th><th class=\"num\">of copy</th><th class=\"num\">tuning s</th>"
        "<th class=\"num\">configs</th><th class=\"num\">runs</th><th>run</th></tr>\n", f);
  for (int i = 0; i < k; i++) problem_row(f, best[i], count[i]);
  fputs("</table>\n", f);
  free(p), free(best), free(count);
  return 0;
}

/* ---- one run ---- */

static void run_head(FILE *f, const cache_Run *r, const cache_Trial *win)
{
  fprintf(f, "<section class=\"run\" id=\"run-%lld\">\n<h2>", (long long)r->id);
  problem_name(f, r);
  fprintf(f, " <span class=\"muted\">run %lld</span></h2>\n<p class=\"muted\">", (long long)r->id);
  machine(f, &r->key);
  fputs("<br>started ", f);
  cli_html(f, r->started);
  fprintf(f, ", %.1f s; %d configs: %d verified, %d pruned, %d failed; status ", r->seconds, r->configs, r->verified,
          r->pruned, r->failed);
  cli_html(f, r->status);
  char floor[128];
  cli_floor_name(r->key.op, floor, sizeof floor);
  if (!r->winner[0]) {
    fprintf(f, "</p>\n<p class=\"win none\">no winner: no config passed (%s %.1f \xc2\xb5s)</p>\n", floor, r->copy_us);
    return;
  }
  fprintf(f, "</p>\n<p class=\"win\">winner <b>%.1f \xc2\xb5s</b>, <b>%.3f</b> of copy", r->winner_us, r->frac);
  if (win) fprintf(f, ", %.1f GB/s", win->gbps);
  fprintf(f, "; %s %.1f \xc2\xb5s<br><code class=\"winner-config\">", floor, r->copy_us);
  cli_html(f, r->winner);
  fputs("</code></p>\n", f);
}

/* The families of the run, most successful first: colour, name, configs, timed, best. */
static void legend(FILE *f, const cache_Trial *t, int n)
{
  Group g[MAX_GROUPS];
  int k = 0;
  for (int i = 0; i < n; i++) {
    cli_Family fam;
    cli_family(t[i].config, &fam);
    Group *x = group(g, &k, fam.name, fam.colour);
    x->n++;
    if (strcmp(t[i].status, "ok") == 0 && (x->timed++ == 0 || t[i].frac > x->best)) x->best = t[i].frac;
  }
  qsort(g, (size_t)k, sizeof *g, by_best);
  fputs("<div class=\"legend\">", f);
  for (int i = 0; i < k; i++) {
    fprintf(f, "<span><span class=\"sw\" style=\"background:%s\"></span>", g[i].tag);
    cli_html(f, g[i].name);
    if (g[i].timed) fprintf(f, " <span class=\"muted\">%d of %d timed, best %.3f</span></span>\n", g[i].timed, g[i].n, g[i].best);
    else fprintf(f, " <span class=\"muted\">none of %d timed</span></span>\n", g[i].n);
  }
  fputs("</div>\n", f);
}

static void finalist_row(FILE *f, const cache_Trial *t, int win)
{
  fprintf(f, "<tr><td>%s</td><td><code>", win ? "<b>winner</b>" : "");
  cli_html(f, t->config);
  fprintf(f, "</code></td><td class=\"num\">%.1f</td><td class=\"num\">%.3f</td><td class=\"num\">%.1f</td>"
             "<td class=\"num\">%d</td><td class=\"num\">%.0f%%</td></tr>\n",
          t->us, t->frac, t->gbps, t->regs, 100 * t->occupancy);
}

/* The finalists (re-timed interleaved with the copy floor) and the winner, fastest first. */
static void finalists(FILE *f, const cache_Run *r, const cache_Trial *t, int n)
{
  fputs("<h3>Finalists</h3>\n<table class=\"finalists\">\n<tr><th></th><th>config</th><th class=\"num\">\xc2\xb5s</th>"
        "<th class=\"num\">of copy</th><th class=\"num\">GB/s</th><th class=\"num\">regs</th><th class=\"num\">occupancy</th></tr>\n", f);
  for (int i = 0; i < n; i++) {
    int win = r->winner[0] && strcmp(t[i].config, r->winner) == 0;
    if (strcmp(t[i].status, "ok") == 0 && (t[i].finalist || win)) finalist_row(f, &t[i], win);
  }
  fputs("</table>\n", f);
}

/* Pruned and failed trials counted by kind of reason, then each one with its whole reason. */
static void rejected(FILE *f, const cache_Run *r, const cache_Trial *t, int n)
{
  Group g[MAX_GROUPS];
  char kind[96];
  int k = 0, all = 0;
  for (int i = 0; i < n; i++)
    if (strcmp(t[i].status, "ok")) reason_kind(t[i].reason, kind, sizeof kind), group(g, &k, kind, t[i].status)->n++, all++;
  fprintf(f, "<h3>Pruned and failed: %d of %d</h3>\n", all, r->configs);
  if (!all) return;
  fputs("<table class=\"reasons\">\n<tr><th>status</th><th>reason</th><th class=\"num\">configs</th></tr>\n", f);
  for (int i = 0; i < k; i++) {
    fputs("<tr><td>", f);
    cli_html(f, g[i].tag);
    fputs("</td><td>", f);
    cli_html(f, g[i].name);
    fprintf(f, "</td><td class=\"num\">%d</td></tr>\n", g[i].n);
  }
  fprintf(f, "</table>\n<details><summary>each of the %d, with its reason</summary>\n<table class=\"rejected\">\n"
             "<tr><th>status</th><th>reason</th><th>config</th></tr>\n", all);
  for (int i = 0; i < n; i++) {
    if (strcmp(t[i].status, "ok") == 0) continue;
    fputs("<tr><td>", f);
    cli_html(f, t[i].status);
    fputs("</td><td class=\"reason\">", f);
    cli_html(f, t[i].reason);
    fputs("</td><td><code>", f);
    cli_html(f, t[i].config);
    fputs("</code></td></tr>\n", f);
  }
  fputs("</table>\n</details>\n", f);
}

static int run_section(FILE *f, cache_Db *db, const cache_Run *r)
{
  cache_Trial *t = NULL;
  const cache_Trial *win = NULL;
  int n = 0;
  if (cache_trials(db, r->id, &t, &n)) return cli_fail("%s", cache_error(db)), 1;
  for (int i = 0; i < n; i++)
    if (r->winner[0] && strcmp(t[i].config, r->winner) == 0) win = &t[i];
  run_head(f, r, win);
  if (cli_chart_run(f, r, t, n)) return free(t), cli_fail("out of memory"), 1;
  legend(f, t, n);
  if (win) finalists(f, r, t, n);
  rejected(f, r, t, n);
  fputs("</section>\n", f);
  free(t);
  return 0;
}

/* ---- the file ---- */

static int write_page(const cli_Options *o, cache_Db *db, const char *cache, const cache_Run *runs, int n, FILE *f)
{
  head(f, cache, runs, n);
  if (machines(f, runs, n) || (!o->run && problems(f, runs, n))) return 1;
  for (int i = 0; i < n; i++)
    if (run_section(f, db, &runs[i])) return 1;
  fputs("</body>\n</html>\n", f);
  return 0;
}

/* Where the page goes: -o, else DEFAULT_OUTPUT ("-": stdout); 2 when it cannot go there. */
static int destination(const cli_Options *o, const char **out)
{
  char dir[4096];
  struct stat sb;
  const char *p = o->output ? o->output : DEFAULT_OUTPUT, *slash = strrchr(p, '/');
  *out = p;
  if (!*p) return cli_fail("bad -o '': expected a file name such as report.html"), 2;
  if (strcmp(p, "-") == 0) return 0;
  if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) return cli_fail("cannot write report '%s': it is a directory", p), 2;
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - p) + (slash == p) : 1, slash ? p : ".");
  if (access(dir, W_OK | X_OK)) return cli_fail("cannot write report '%s': its folder %s: %s", p, dir, strerror(errno)), 2;
  return 0;
}

/* The page into a new file beside out, renamed over it once whole; 1 on failure. */
static int write_file(const cli_Options *o, cache_Db *db, const char *cache, const cache_Run *runs, int n, const char *out)
{
  char tmp[4200];
  int fd, rc;
  FILE *f;
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", out, (long)getpid());
  if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666)) < 0 || !(f = fdopen(fd, "w"))) {
    cli_fail("cannot write report '%s': %s", tmp, strerror(errno));
    if (fd >= 0) close(fd), unlink(tmp);
    return 1;
  }
  rc = write_page(o, db, cache, runs, n, f);
  if (!rc && (fflush(f) || ferror(f) || fsync(fd))) rc = 1, cli_fail("cannot write report '%s': %s", tmp, strerror(errno));
  if (fclose(f) && !rc) rc = 1, cli_fail("cannot write report '%s': %s", tmp, strerror(errno));
  if (!rc && rename(tmp, out)) rc = 1, cli_fail("cannot write report '%s': %s", out, strerror(errno));
  if (rc) unlink(tmp);
  return rc;
}

int cli_report(cli_Options *o)
{
  char path[4096], full[PATH_MAX];
  const char *out;
  cache_Db *db;
  cache_Key f;
  cache_Run *runs = NULL;
  int n = 0, rc = destination(o, &out);
  if (rc || (rc = cli_open_cache(o, &db, path, sizeof path))) return rc;
  if (!realpath(path, full)) snprintf(full, sizeof full, "%s", path);   /* the page names the file wholly */
  cli_filter(o, &f);
  if (cache_runs(db, &f, o->run, MAX_RUNS, &runs, &n)) rc = 1, cli_fail("%s", cache_error(db));
  else if (n == 0 && o->run) rc = 1, printf("no run %ld in %s\n", o->run, path);
  else if (n == 0) rc = 1, printf("no runs match in %s\n", path);
  else if (strcmp(out, "-") == 0) rc = write_page(o, db, full, runs, n, stdout) || fflush(stdout);
  else if (!(rc = write_file(o, db, full, runs, n, out))) printf("wrote %s: %d run%s of %s\n", out, n, n == 1 ? "" : "s", full);
  free(runs);
  cache_close(db);
  return rc;
}
