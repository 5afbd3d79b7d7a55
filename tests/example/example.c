/*
** example.c — a program using the installed softmax_tune library: softmax of a 1024x2048
** float32 tensor on the GPU with the kernel tuned for it (miss policy error: it must come from
** the cache), checked against a float64 softmax on the CPU.
**   example [CACHE]    exit 0 correct, 1 wrong or failed, 77 no GPU here
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <softmax_tune.h>

enum { ROWS = 1024, COLS = 2048 };

int main(int argc, char **argv)
{
  static float x[ROWS * COLS], y[ROWS * COLS];
  float *dx, *dy;
  st_ctx *ctx;
  st_options opt = { ST_MISS_ERROR, NULL, NULL };
  double worst = 0;
  if (cudaMalloc((void **)&dx, sizeof x) != cudaSuccess || cudaMalloc((void **)&dy, sizeof y) != cudaSuccess) {
    printf("SKIP: no usable GPU here (%s)\n", cudaGetErrorString(cudaGetLastError()));
    return 77;
  }
  for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)(rand() % 2001 - 1000) / 100.f;
  cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice);
  if (st_open_ex(&ctx, 0, argc > 1 ? argv[1] : NULL, &opt) != ST_OK ||
      st_softmax(ctx, ST_F32, ST_SOFTMAX, dx, dy, ROWS, COLS, NULL) != ST_OK) {
    fprintf(stderr, "example: %s\n", st_error(NULL));
    return 1;
  }
  cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost);
  for (int r = 0; r < ROWS; r++) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < COLS; c++) m = fmax(m, x[r * COLS + c]);
    for (int c = 0; c < COLS; c++) s += exp(x[r * COLS + c] - m);
    for (int c = 0; c < COLS; c++) {
      double ref = exp(x[r * COLS + c] - m) / s;
      worst = fmax(worst, fabs(y[r * COLS + c] - ref) / (ref + 1e-30));
    }
  }
  st_close(ctx);
  printf("example: softmax of %dx%d float32 from the cache, max relative error %.2g\n", ROWS, COLS, worst);
  return worst < 2e-5 ? 0 : 1;
}
