/*
** chart.c — the report's charts, as inline SVG: a run's trials by fraction of copy, and the
** problems' winners side by side; kernel families and their colours; HTML escaping.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* The plot area of a chart W x H: margins left (the y labels), right, top, bottom. */
enum { W = 960, ML = 48, MR = 96, MT = 14 };

/* The families of the space (templates/space.lua), each with a colour of its own: row kernels
** in blues and green, dsmem clusters in oranges and reds, global exchanges in purples and browns
** (the ring in olives, its claimed parts the lighter). */
static const struct { const char *passes, *hold, *xchg, *colour; } COLOURS[] = {
  { "1", "reg", "none", "#1f77b4" },     { "1", "packed", "none", "#6baed6" }, { "1", "smem", "none", "#17becf" },
  { "2", "none", "none", "#2ca02c" },    { "1", "reg", "dsmem", "#ff7f0e" },   { "1", "packed", "dsmem", "#fdae6b" },
  { "1", "pipe", "dsmem", "#d62728" },   { "2", "none", "dsmem", "#e377c2" },  { "2", "mix", "dsmem", "#f7b6d2" },
  { "1", "reg", "global", "#9467bd" },   { "1", "packed", "global", "#c5b0d5" }, { "1", "pipe", "global", "#8c564b" },
  { "1", "ring", "global", "#bcbd22" },  { "2", "none", "global", "#393b79" }, { "2", "mix", "global", "#c49c94" },
  { "2", "ahead", "global", "#637939" }, { "1", "ring", "claim", "#dbdb8d" },
};

void cli_html(FILE *f, const char *s)
{
  for (; *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default: fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);   /* control bytes would end a line */
    }
  }
}

void cli_version(FILE *f, int v)
{
  fprintf(f, "%d.%d", v / 1000, v % 1000 / 10);
}

/* The value of knob k in a config "k=v,k=v,...", or "" when it has none. */
static void knob(const char *config, const char *k, char *out, size_t n)
{
  size_t len = strlen(k);
  for (const char *p = config; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, k, len) == 0 && p[len] == '=') {
      snprintf(out, n, "%.*s", (int)strcspn(p + len + 1, ","), p + len + 1);
      return;
    }
  snprintf(out, n, "%s", "");
}

void cli_family(const char *config, cli_Family *fam)
{
  char passes[8], hold[16], split[16], xchg[16], held[24] = "", across[32] = "";
  unsigned h = 5381;
  knob(config, "passes", passes, sizeof passes);
  knob(config, "hold", hold, sizeof hold);
  knob(config, "split", split, sizeof split);
  knob(config, "xchg", xchg, sizeof xchg);
  if (!split[0] || strcmp(split, "1") == 0) snprintf(xchg, sizeof xchg, "none");   /* one block per row */
  if (strcmp(hold, "none")) snprintf(held, sizeof held, " %s", hold[0] ? hold : "?");
  if (strcmp(xchg, "none")) snprintf(across, sizeof across, " \xc2\xb7 %s split", xchg[0] ? xchg : "?");
  snprintf(fam->name, sizeof fam->name, "%s-pass%s%s", passes[0] ? passes : "?", held, across);
  for (size_t i = 0; i < sizeof COLOURS / sizeof COLOURS[0]; i++)
    if (!strcmp(passes, COLOURS[i].passes) && !strcmp(hold, COLOURS[i].hold) && !strcmp(xchg, COLOURS[i].xchg)) {
      snprintf(fam->colour, sizeof fam->colour, "%s", COLOURS[i].colour);
      return;
    }
  for (const char *p = fam->name; *p; p++) h = h * 33 + (unsigned char)*p;
  snprintf(fam->colour, sizeof fam->colour, "hsl(%u,45%%,50%%)", h % 360);   /* a family the table lacks */
}

/* ---- axes ---- */

/* A fraction of copy as drawn: 0 to 10 (a damaged log may hold anything). */
static double drawn(double v)
{
  return isfinite(v) && v > 0 ? fmin(v, 10) : 0;
}

/* The top of the y axis: 1.1 (room above the copy floor), or the next 0.1 above the largest value. */
static double y_top(double largest)
{
  return drawn(largest) > 1.0 ? ceil(drawn(largest) * 10 + 0.01) / 10 : 1.1;
}

static double y_at(double v, double top, int h)
{
  return MT + (h - MT) * (1 - drawn(v) / top);
}

/* The frame of a chart of plot height h: grid lines with their values, and the copy floor. */
static void axes(FILE *f, double top, int h, const char *ylabel)
{
  double step = top > 0.6 ? 0.2 : 0.1;
  for (double v = 0; v <= top + 1e-9; v += step)
    fprintf(f, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/><text class=\"tick\" x=\"%d\" y=\"%.1f\">%.1f</text>\n",
            ML, W - MR, y_at(v, top, h), y_at(v, top, h), ML - 6, y_at(v, top, h) + 4, v);
  fprintf(f, "<line class=\"floor\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
             "<text class=\"floor-label\" x=\"%d\" y=\"%.1f\">copy floor 1.0</text>\n",
          ML, W - MR, y_at(1, top, h), y_at(1, top, h), W - MR + 4, y_at(1, top, h) + 4);
  fprintf(f, "<text class=\"axis\" transform=\"translate(12,%.1f) rotate(-90)\">%s</text>\n", MT + (h - MT) / 2.0, ylabel);
}

/* ---- a run's trials ---- */

static int by_frac(const void *a, const void *b)
{
  const cache_Trial *x = *(const cache_Trial *const *)a, *y = *(const cache_Trial *const *)b;
  return x->frac > y->frac ? -1 : x->frac < y->frac;
}

/* One trial's mark, with its figures as the tooltip. */
static void mark(FILE *f, const cache_Trial *t, double x, double y, int r, const char *kind)
{
  cli_Family fam;
  cli_family(t->config, &fam);
  fprintf(f, "<circle class=\"mark%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"><title>", kind, x, y, r, fam.colour);
  cli_html(f, t->config);
  fputc('\n', f);
  cli_html(f, fam.name);
  fprintf(f, ": %.1f \xc2\xb5s, %.3f of copy, %.1f GB/s, %d regs, occupancy %.0f%%</title></circle>\n", t->us, t->frac,
          t->gbps, t->regs, 100 * t->occupancy);
}

/* The marks, ordinary ones first so that the finalists and then the winner are drawn on top. */
static void marks(FILE *f, const cache_Run *r, const cache_Trial **s, int n, double top, int h)
{
  double dx = (double)(W - ML - MR) / n;
  int rad = n > 400 ? 2 : n > 120 ? 3 : 4;
  for (int layer = 0; layer < 3; layer++)
    for (int i = 0; i < n; i++) {
      int win = r->winner[0] && strcmp(s[i]->config, r->winner) == 0, kind = win ? 2 : s[i]->finalist ? 1 : 0;
      double x = ML + dx * (i + 0.5), y = y_at(s[i]->frac, top, h);
      if (kind != layer) continue;
      mark(f, s[i], x, y, rad + 2 * kind, kind == 2 ? " winner" : kind ? " finalist" : "");
      if (win)
        fprintf(f, "<text class=\"win-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">winner %.3f</text>\n",
                x + (x > W / 2 ? -10 : 10), y + 18, x > W / 2 ? "end" : "start", s[i]->frac);
    }
}

int cli_chart_run(FILE *f, const cache_Run *r, const cache_Trial *t, int n)
{
  const cache_Trial **s = malloc(sizeof *s * (size_t)(n ? n : 1));
  int k = 0, h = 230;
  double largest = 0;
  if (!s) return 1;
  for (int i = 0; i < n; i++)
    if (strcmp(t[i].status, "ok") == 0) s[k++] = &t[i], largest = fmax(largest, drawn(t[i].frac));
  qsort(s, (size_t)k, sizeof *s, by_frac);
  fprintf(f, "<svg class=\"run-chart\" data-run=\"%lld\" viewBox=\"0 0 %d %d\" role=\"img\" "
             "aria-label=\"fraction of copy of each timed config of run %lld\">\n",
          (long long)r->id, W, k ? h + 30 : 30, (long long)r->id);
  if (k) {
    axes(f, y_top(largest), h, "fraction of copy");
    marks(f, r, s, k, y_top(largest), h);
    fprintf(f, "<text class=\"axis\" x=\"%d\" y=\"%d\">%d timed configs, fastest first</text>\n", ML, h + 20, k);
  } else {
    fprintf(f, "<text class=\"empty\" x=\"%d\" y=\"20\">no config was timed</text>\n", ML);
  }
  fputs("</svg>\n", f);
  free(s);
  return 0;
}

/* ---- the problems ---- */

/* A problem's label: rows x cols dtype, and op when not softmax; its length. */
static int problem_label(char *buf, size_t n, const cache_Run *r)
{
  static const char *const OPS[GEN_NOP] = { "", " log", " bw", " log bw", " ce", " ce loss", " attn", " attn bw" };   /* by gen op */
  return snprintf(buf, n, "%lldx%lld %s%s", (long long)r->key.rows, (long long)r->key.cols, gen_dtype_name(r->key.dtype),
                  r->key.op >= 0 && r->key.op < GEN_NOP ? OPS[r->key.op] : " ?");
}

/* A bar label's reach from its anchor (text-anchor end, rotated 35 degrees): at most LW pixels
** a character of the 11px font, to the left (dx) and down (dy). */
enum { LW = 7 };
static double label_dx(int len) { return len * LW * 0.819; }
static double label_dy(int len) { return len * LW * 0.574 + 4; }

/* A bar for problem p at x, w wide; its colour is its GPU's (the problems come grouped by GPU). */
static void bar(FILE *f, const cache_Run *p, double x, double w, double top, int h, int gpu)
{
  static const char *const GPU_COLOURS[] = { "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948" };
  double y = y_at(p->winner[0] ? p->frac : 0, top, h);
  fprintf(f, "<a href=\"#run-%lld\"><rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
          (long long)p->id, x, y, w, h - y, GPU_COLOURS[gpu % 6]);
  fprintf(f, "%lldx%lld %s %s on ", (long long)p->key.rows, (long long)p->key.cols, gen_dtype_name(p->key.dtype),
          gen_op_name(p->key.op));
  cli_html(f, p->key.gpu);
  if (p->winner[0]) fprintf(f, ": %.3f of copy, %.1f \xc2\xb5s (run %lld)</title></rect></a>\n", p->frac, p->winner_us, (long long)p->id);
  else fprintf(f, ": no winner (run %lld)</title></rect></a>\n", (long long)p->id);
  if (w >= 24 && p->winner[0]) fprintf(f, "<text class=\"bar-value\" x=\"%.1f\" y=\"%.1f\">%.3f</text>\n", x + w / 2, y - 4, p->frac);
  else if (w >= 24) fprintf(f, "<text class=\"bar-value none\" x=\"%.1f\" y=\"%.1f\">none</text>\n", x + w / 2, y - 4);
  if (w < 8) return;   /* too many problems to name under their bars: the tooltips do */
  char label[96];
  problem_label(label, sizeof label, p);
  fprintf(f, "<text class=\"bar-label\" transform=\"translate(%.1f,%d) rotate(-35)\">%s</text>\n", x + w / 2, h + 12, label);
}

int cli_chart_problems(FILE *f, const cache_Run *const *p, int n)
{
  int h = 140, gpu = 0;
  char label[96];
  double largest = 0, slot = (double)(W - ML - MR) / (n ? n : 1), w = fmin(36, slot * 0.7), left = 0, bottom = h + 90;
  for (int i = 0; i < n; i++) {
    int len = problem_label(label, sizeof label, p[i]);
    largest = fmax(largest, p[i]->winner[0] ? drawn(p[i]->frac) : 0);
    if (w >= 8) {   /* labels drawn (see bar): the drawing holds them whole */
      left = fmin(left, ML + slot * (i + 0.5) - label_dx(len) - 4);
      bottom = fmax(bottom, h + 12 + label_dy(len));
    }
  }
  fprintf(f, "<svg class=\"problems-chart\" viewBox=\"%.0f 0 %.0f %.0f\" role=\"img\" aria-label=\"winner's fraction of "
             "copy by problem\">\n", floor(left), W - floor(left), ceil(bottom));
  axes(f, y_top(largest), h, "of copy");
  for (int i = 0; i < n; i++) {
    if (i && strcmp(p[i]->key.gpu, p[i - 1]->key.gpu)) gpu++;
    bar(f, p[i], ML + slot * i + (slot - w) / 2, w, y_top(largest), h, gpu);
  }
  fputs("</svg>\n", f);
  return 0;
}
