/*
** verify_util.h — what the verifier's tests (test_verify.c, test_verify_bw.c) share: a seeded
** uniform generator, the kernels' pairwise float sum, and the "gpu" argument that opens the GPU
** and the generator (SKIP, exit 77, without a GPU).
*/
#ifndef TESTS_VERIFY_UTIL_H
#define TESTS_VERIFY_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gen.h"
#include "tune.h"

static uint64_t rng;
static double uniform(void)   /* [-1, 1), splitmix64 */
{
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-52 - 1.;
}

/* Pairwise float sum, as the kernels' trees add. */
static float tree_sum(const float *v, int64_t n)
{
  if (n <= 8) {
    float s = 0.f;
    for (int64_t i = 0; i < n; i++) s += v[i];
    return s;
  }
  return tree_sum(v, n / 2) + tree_sum(v + n / 2, n - n / 2);
}

/* With argument "gpu": *gpu and *gen opened; returns 77 (SKIP said) without a GPU, 1 on another
** failure, else 0 (and seeds the generator). */
static int gpu_mode(int argc, char **argv, uint64_t seed, tune_Gpu **gpu, gen_State **gen)
{
  char err[1024];
  rng = seed;
  if (argc < 2 || strcmp(argv[1], "gpu") != 0) return 0;
  if (tune_gpu_open(gpu, 0, err, sizeof err)) return printf("SKIP: no GPU here (%s)\n", err), 77;
  if (gen_open(gen, NULL, err, sizeof err)) return printf("gen: %s\n", err), 1;
  return 0;
}

#endif
