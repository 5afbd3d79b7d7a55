/*
** report.h — the pieces of `softmax-tune report`, an HTML page of the tuning log: the page and
** its tables (report.c), and the charts, as inline SVG, with what both need (chart.c).
*/
#ifndef REPORT_H
#define REPORT_H

#include <stdio.h>

#include "cache.h"

/* A config's kernel family (passes, hold, split and its exchange) and the family's colour. */
typedef struct cli_Family {
  char name[64];
  char colour[24];
} cli_Family;

void cli_family(const char *config, cli_Family *fam);
/* s with &, <, >, " and ' escaped, for text and attribute values alike. */
void cli_html(FILE *f, const char *s);
/* A driver or NVRTC version as logged (major*1000 + minor*10), as "13.0". */
void cli_version(FILE *f, int v);

/* Every timed trial of run r as one mark (a circle of class "mark"), by fraction of copy,
** fastest first, coloured by family; the winner and the finalists marked; the copy floor
** (1.0) as a line. t is the run's n trials, in any order. */
int cli_chart_run(FILE *f, const cache_Run *r, const cache_Trial *t, int n);
/* One bar per problem: its winner's fraction of copy (0 without one), linked to its run. */
int cli_chart_problems(FILE *f, const cache_Run *const *p, int n);

#endif
