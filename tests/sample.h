/*
** sample.h — a fixed sample of a space that still takes every value each knob takes in it:
** configs are kept, in space order, when they bring a knob=value pair not seen yet.
*/
#ifndef TESTS_SAMPLE_H
#define TESTS_SAMPLE_H

#include <stdio.h>
#include <string.h>

typedef struct Cover {
  char seen[256][48];
  int n;
} Cover;

/* 1 if config has a knob=value pair the cover lacks (and adds its pairs), else 0. */
static inline int cover_adds(Cover *c, const char *config)
{
  char buf[256], *save;
  int fresh = 0;
  snprintf(buf, sizeof buf, "%s", config);
  for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    int seen = 0;
    for (int i = 0; i < c->n && !seen; i++) seen = strcmp(c->seen[i], kv) == 0;
    if (!seen && c->n < 256) {
      snprintf(c->seen[c->n++], sizeof c->seen[0], "%s", kv);
      fresh = 1;
    }
  }
  return fresh;
}

#endif
