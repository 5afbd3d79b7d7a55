/*
** fuzz.h — what the fuzz targets share: REQUIRE(cond) aborts, naming the broken invariant, so
** libFuzzer keeps the input as a crash.
*/
#ifndef TESTS_FUZZ_H
#define TESTS_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#define REQUIRE(c)                                                                \
  do {                                                                            \
    if (!(c)) {                                                                   \
      fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #c); \
      abort();                                                                    \
    }                                                                             \
  } while (0)

#endif
