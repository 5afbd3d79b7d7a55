/* rawtime.c — rawtime CUBIN THREADS GRID SMEM ROWS COLS ES [REPS [f16]]: time one kernel
** st_softmax(in, out, rows, ws) of a cubin (softmax-tune compile --templates DIR ...) with NO
** verification, for diagnostic template variants whose outputs are wrong on purpose (a role's
** work left out). A cooperative launch of GRID blocks of THREADS with SMEM dynamic bytes, a 4 MB
** zeroed workspace, input 1.0 everywhere (bf16, or f16 with the flag, by ES=2; f32 by ES=4); the
** L2 flushed before each launch; the median of REPS (default 30) against a D2D copy of the same
** bytes timed the same way (RAWTIME_NOCOOP set: a plain launch). Never a benchmark of record:
** the tuner's figures are verified.
** THREADS, GRID and SMEM are the launch `softmax-tune` would use (gen_Launch; the ring: one
** block a SM in groups of split, DEPTH stages of RV vectors), given by hand.
** Build: cc -O2 lab/rawtime.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#define CK(x) do { CUresult r_ = (x); if (r_) { const char *s; cuGetErrorString(r_, &s); fprintf(stderr, "%s: %s (line %d)\n", #x, s, __LINE__); exit(1); } } while (0)
static int cmp(const void *a, const void *b) { float x = *(float *)a, y = *(float *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv)
{
  if (argc < 8) { fprintf(stderr, "usage: rawtime CUBIN THREADS GRID SMEM ROWS COLS ES [REPS [f16]]\n"); return 2; }
  int threads = atoi(argv[2]), grid = atoi(argv[3]), smem = atoi(argv[4]), reps = argc > 8 ? atoi(argv[8]) : 30;
  long long rows = atoll(argv[5]), cols = atoll(argv[6]), es = atoll(argv[7]);
  if (threads < 1 || grid < 1 || smem < 0 || rows < 1 || cols < 1 || (es != 2 && es != 4) || reps < 1) {
    fprintf(stderr, "rawtime: bad argument (threads %d, grid %d, smem %d, rows %lld, cols %lld, es %lld, reps %d)\n",
            threads, grid, smem, rows, cols, es, reps);
    return 2;
  }
  const int nocoop = getenv("RAWTIME_NOCOOP") != NULL;   /* a plain launch, to price the attribute */
  CUdevice dev; CUcontext ctx; CUmodule m; CUfunction f;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoad(&m, argv[1])); CK(cuModuleGetFunction(&f, m, "st_softmax"));
  CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
  size_t bytes = rows * cols * es, flushn = 256 << 20, wsn = 4 << 20;
  CUdeviceptr in, out, ws, fl;
  CK(cuMemAlloc(&in, bytes)); CK(cuMemAlloc(&out, bytes)); CK(cuMemAlloc(&ws, wsn)); CK(cuMemAlloc(&fl, flushn));
  CK(cuMemsetD32(in, es == 4 ? 0x3f800000u : es == 2 && argc > 9 ? 0x3c003c00u : 0x3f803f80u, bytes / 4));
  CK(cuMemsetD8(ws, 0, wsn));
  CUstream st; CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  CUevent a, b; CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, 0));
  void *args[] = { &in, &out, &rows, &ws };
  float *tk = malloc(reps * sizeof(float)), *tc = malloc(reps * sizeof(float));
  if (!tk || !tc) { fprintf(stderr, "rawtime: out of memory for %d repetitions\n", reps); return 1; }
  for (int i = -3; i < reps; i++) {
    for (int w = 0; w < 2; w++) {
      CK(cuMemsetD32Async(fl, i, flushn / 4, st));
      CK(cuEventRecord(a, st));
      if (w == 0) {
        CUlaunchConfig c = { 0 }; CUlaunchAttribute at; at.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE; at.value.cooperative = !nocoop;
        c.gridDimX = grid; c.gridDimY = c.gridDimZ = 1; c.blockDimX = threads; c.blockDimY = c.blockDimZ = 1;
        c.sharedMemBytes = smem; c.hStream = st; c.attrs = &at; c.numAttrs = 1;
        CK(cuLaunchKernelEx(&c, f, args, NULL));
      } else CK(cuMemcpyDtoDAsync(out, in, bytes, st));
      CK(cuEventRecord(b, st)); CK(cuEventSynchronize(b));
      float ms; CK(cuEventElapsedTime(&ms, a, b));
      if (i >= 0) (w ? tc : tk)[i] = ms * 1000.f;
    }
  }
  qsort(tk, reps, sizeof(float), cmp); qsort(tc, reps, sizeof(float), cmp);
  printf("%.1f us  copy %.1f us  frac %.3f\n", tk[reps / 2], tc[reps / 2], tc[reps / 2] / tk[reps / 2]);
  return 0;
}
