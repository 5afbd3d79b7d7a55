/*
** verify_util.h — what the verifier's tests (test_verify.c, test_verify_bw.c) share: a seeded
** uniform generator, the kernels' pairwise float sum, and the "gpu" argument that opens the GPU
** and the generator (SKIP, exit 77, without a GPU).
*/
#ifndef TESTS_VERIFY_UTIL_H
#define TESTS_VERIFY_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
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

/* A softcap's tanh as dtype's kernels compute it (softcap.cu's tanh_cap): tanhf for float32; for
** 16-bit, 1 - 2 / (1 + 2^(2 a log2e)) with ex2's and rcp's errors at their stated bounds (4 u
** each), both pushing t up, so the rule must pass the worst they allow. */
static inline float tanh_cap(float a, int dtype)
{
  if (dtype == GEN_F32) return tanhf(a);
  const float e = exp2f(a * (2.f * 1.4426950408889634f)) * (1.f + 0x1p-22f);
  return fmaf(-2.f, (1.f / (1.f + e)) * (1.f - 0x1p-22f), 1.f);
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

/* gpu (NULL: nothing to do) prepared for rows x cols of dtype and op; 1 (a failed check) if not. */
static int prepare_for(tune_Gpu *gpu, gen_State *gen, int64_t rows, int64_t cols, int dtype, int op)
{
  char err[1024];
  gen_Problem gp = { .rows = rows, .cols = cols, .dtype = dtype, .op = op };
  if (!gpu) return 0;
  tune_device_limits(tune_gpu_device(gpu), &gp);
  if (!tune_gpu_prepare(gpu, gen, &gp, 0, err, sizeof err)) return 0;
  CHECK(0, "%lldx%lld: prepare: %s", (long long)rows, (long long)cols, err);
  return 1;
}

/* The GPU check kernel's verdict into *g on host buffers of n bytes: the input x (y for the
** backward ops, with x2 their dy; NULL for the forward) and the output y. 0, or 1 and err. */
static inline int gpu_check(tune_Gpu *gpu, const void *x, const void *x2, const void *y, size_t n, tune_Check *g, char *err,
                     size_t errlen)
{
  CUdeviceptr in, out;
  CUstream s;
  const tune_Driver *d = tune_gpu_driver(gpu);
  memset(g, 0, sizeof *g);
  tune_gpu_buffers(gpu, &in, &out, &s);
  if (d->cuMemcpyHtoDAsync(in, x, n, s) || (x2 && d->cuMemcpyHtoDAsync(tune_gpu_in2(gpu), x2, n, s)) ||
      d->cuMemcpyHtoDAsync(out, y, n, s))
    return snprintf(err, errlen, "copy to the GPU failed"), 1;
  return tune_gpu_check(gpu, in, out, g, err, errlen);
}

/* v moved past any float32 error bound: by 2^-14 of itself for f32, else by n ulps of dtype. */
static inline double off(double v, int dtype, int n)
{
  return dtype == GEN_F32 ? v + fabs(v) * 0x1p-14 + 0x1p-149 : v + n * tune_ulp(v, dtype);
}

/* Element i of out (dtype) set to the poison pattern, as left where a kernel wrote nothing. */
static inline void poison_at(void *out, int dtype, int64_t i)
{
  const uint32_t p = tune_poison(dtype);
  if (dtype == GEN_F32) memcpy((float *)out + i, &p, 4);
  else ((uint16_t *)out)[i] = (uint16_t)p;
}

/* "RxC dtype op, maker": what a case is called in a failed check. */
static void label(char *what, size_t n, int64_t rows, int64_t cols, int dtype, int op, const char *maker)
{
  snprintf(what, n, "%lldx%lld %s %s, %s", (long long)rows, (long long)cols, gen_dtype_name(dtype), gen_op_name(op), maker);
}

#endif
