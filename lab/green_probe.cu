// green_probe.cu — can N of the GPU's SMs, through a green context, still stream memory at the
// whole GPU's copy rate? A copy kernel (16-byte vectors, grid-stride, 8 blocks of 256 threads an
// SM) and cuMemcpyDtoD on all SMs and on N of them, timed as the tuner times (L2 flushed before
// each launch, CUDA events, median of 30). If 88-96 SMs of an H100 copy as fast as its 132, the
// bytes each SM must move per microsecond match an H200's (132 SMs, about 1.41 times the
// bandwidth), and a kernel run on those SMs shows whether it keeps pace with an H200's memory.
// Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 -o green_probe lab/green_probe.cu -lcuda && ./green_probe
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { CUresult r_ = (x); if (r_) { const char *s; cuGetErrorString(r_, &s); \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s); exit(1); } } while (0)
#define RK(x) do { cudaError_t r_ = (x); if (r_) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, \
  __LINE__, #x, cudaGetErrorString(r_)); exit(1); } } while (0)

__global__ void copy16(const int4 *in, int4 *out, long long n)
{
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = in[i];
}

static const size_t BYTES = 1ull << 30, FLUSH = 256ull << 20;

// median of 30 timed launches of one kind (0: kernel, 1: cuMemcpyDtoD) on stream s
static double median_us(int kind, int sms, CUstream s, CUdeviceptr in, CUdeviceptr out, CUdeviceptr flush)
{
  std::vector<double> t;
  CUevent a, b;
  CK(cuEventCreate(&a, 0));
  CK(cuEventCreate(&b, 0));
  for (int i = 0; i < 33; i++) {
    CK(cuMemsetD32Async(flush, (unsigned)i, FLUSH / 4, s));
    CK(cuEventRecord(a, s));
    if (kind == 0) copy16<<<sms * 8, 256, 0, (cudaStream_t)s>>>((const int4 *)in, (int4 *)out, (long long)(BYTES / 16));
    else CK(cuMemcpyDtoDAsync(out, in, BYTES, s));
    RK(cudaGetLastError());
    CK(cuEventRecord(b, s));
    CK(cuEventSynchronize(b));
    float ms;
    CK(cuEventElapsedTime(&ms, a, b));
    if (i >= 3) t.push_back(ms * 1e3);
  }
  CK(cuEventDestroy(a));
  CK(cuEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main()
{
  CK(cuInit(0));
  CUdevice dev;
  CUcontext primary;
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&primary, dev));
  CK(cuCtxSetCurrent(primary));
  char name[256];
  int all;
  CK(cuDeviceGetName(name, sizeof name, dev));
  CK(cuDeviceGetAttribute(&all, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CUdeviceptr in, out, flush;
  CK(cuMemAlloc(&in, BYTES));
  CK(cuMemAlloc(&out, BYTES));
  CK(cuMemAlloc(&flush, FLUSH));
  CK(cuMemsetD32(in, 0x3f800001u, BYTES / 4));   // not zeros
  CUdevResource whole;
  CK(cuDeviceGetDevResource(dev, &whole, CU_DEV_RESOURCE_TYPE_SM));
  printf("%s: %d SMs (green: at least %u, in steps of %u)\n", name, all, whole.sm.minSmPartitionSize,
         whole.sm.smCoscheduledAlignment);
  printf("%-6s %12s %9s %12s %9s\n", "SMs", "kernel us", "GB/s", "memcpy us", "GB/s");
  const int want[] = { 0, 112, 96, 88, 80, 64 };
  for (int w : want) {
    CUstream s;
    CUgreenCtx g = NULL;
    int sms = all;
    if (w == 0) CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    else {
      CUdevResource part, rest;
      unsigned n = 1;
      CK(cuDevSmResourceSplitByCount(&part, &n, &whole, &rest, 0, (unsigned)w));
      CUdevResourceDesc desc;
      CK(cuDevResourceGenerateDesc(&desc, &part, 1));
      CK(cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
      CK(cuGreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, 0));
      sms = (int)part.sm.smCount;
      CUcontext c;
      CK(cuCtxFromGreenCtx(&c, g));
      CK(cuCtxSetCurrent(c));
    }
    const double k = median_us(0, sms, s, in, out, flush), m = median_us(1, sms, s, in, out, flush);
    printf("%-6d %12.1f %9.1f %12.1f %9.1f\n", sms, k, 2e-3 * BYTES / k, m, 2e-3 * BYTES / m);
    CK(cuStreamDestroy(s));
    CK(cuCtxSetCurrent(primary));
    if (g) CK(cuGreenCtxDestroy(g));
  }
  return 0;
}
