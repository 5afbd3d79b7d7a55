/*
** check.h — the smallest test harness: CHECK(cond, fmt, ...) reports and counts a failure,
** check_done() prints the tally and gives the exit status.
*/
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdio.h>

static int check_failures, check_count;

#define CHECK(cond, ...)                                                        \
  do {                                                                          \
    check_count++;                                                              \
    if (!(cond)) {                                                              \
      check_failures++;                                                         \
      fprintf(stderr, "%s:%d: failed: %s: ", __FILE__, __LINE__, #cond);        \
      fprintf(stderr, __VA_ARGS__);                                             \
      fputc('\n', stderr);                                                      \
    }                                                                           \
  } while (0)

static inline int check_done(const char *name)
{
  printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
  return check_failures ? 1 : 0;
}

#endif
