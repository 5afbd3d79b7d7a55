/*
** check.h — the smallest test harness: CHECK(cond, fmt, ...) reports and counts a failure,
** check_done() prints the tally and gives the exit status.
*/
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static int check_failures, check_count;

/* The heap kept between NVRTC's compiles, as the command keeps it (cli/main.c keep_heap): glibc
** would return its free top and unmap large blocks after each compile, and the next one faults
** them in again. test_compile --ce on 2 cores: 24.5 -> 17.6 s, system time 3.1 -> 0.3 s, the
** same checks (2026-11-30). Before main, in every test program; the sanitizers' and valgrind's
** allocators ignore it. */
#ifdef __GLIBC__
__attribute__((constructor)) static void check_keep_heap(void)
{
  (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
}
#endif

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

/* ST_TEST_SMALL=1 (CI's sanitizer stage; the plain build's run has run the same tests whole):
** a test whose time is its size, not its code paths, runs a part. test_verify and test_verify_ce
** leave out their rows of 262144 elements and more (walked as the smaller rows are; 60-70% of
** their time, the float64 reference's), test_repro compiles its first case alone (the rest is
** NVRTC's time, which the sanitizers do not instrument). */
static inline int check_small(void)
{
  const char *s = getenv("ST_TEST_SMALL");
  return s && strcmp(s, "0") != 0;
}

static inline int check_done(const char *name)
{
  printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
  return check_failures ? 1 : 0;
}

#endif
