// ringcopy.cu — the ceiling of hold=ring's structure, measured without the softmax: copy kernels
// that move a tensor the way the ring does (a block per SM, each part bulk-copied into a ring of
// shared-memory stages), with no reduction and no exchange between blocks, against the driver's
// device-to-device copy and a plain grid-stride copy. If the ring's copy is itself below the
// floor, no change to the softmax's arithmetic or exchange reaches it.
//   memcpy     cudaMemcpyAsync, device to device (the floor every table divides by)
//   plain      a grid-stride copy, 16-byte vectors, 4 loads in flight a thread, 2 blocks an SM
//   ring       a block an SM; lane 0 bulk-copies parts into DEPTH stages; 31 warps store them
//              (st.global, 16 bytes a thread) and free the stage
//   ring.cs    the same, stores marked streaming (st.global.cs)
//   ring.tma   the stores by bulk copy too (cp.async.bulk.global.shared::cta), one lane doing all
// Each launch is timed alone by events after a 256 MB memset; rounds of every variant are
// interleaved; median. Every variant's output is compared with its input byte for byte first.
//
//     nvcc -O3 -arch=sm_90 -std=c++17 -o ringcopy lab/ringcopy.cu && ./ringcopy [MB] [part_KB] [rounds]
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "ringcopy: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

typedef unsigned long long u64;
typedef unsigned u32;

__device__ __forceinline__ u32 sa(const void *p) { return (u32)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void bar_init(u64 *b, u32 n) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(sa(b)), "r"(n) : "memory"); }
__device__ __forceinline__ void bar_arrive(u64 *b) { asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(sa(b)) : "memory"); }
__device__ __forceinline__ void bar_wait(u64 *b, u32 parity)
{
  u32 done;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(sa(b)), "r"(parity) : "memory");
  } while (!done);
}
// `bytes` into dst by `pieces` bulk copies, all completing on b.
__device__ __forceinline__ void load_part(void *dst, const void *src, u32 bytes, u64 *b, int pieces = 1)
{
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(sa(b)), "r"(bytes) : "memory");
  const u32 piece = bytes / pieces;
  for (int k = 0; k < pieces; k++)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(sa((char *)dst + k * piece)), "l"((const char *)src + k * piece), "r"(piece), "r"(sa(b)) : "memory");
}

__global__ void __launch_bounds__(1024) plain(const uint4 *x, uint4 *y, long n)
{
  const long s = (long)gridDim.x * blockDim.x;
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * s < n; i += 4 * s) {
    uint4 a = x[i], b = x[i + s], c = x[i + 2 * s], d = x[i + 3 * s];
    y[i] = a, y[i + s] = b, y[i + 2 * s] = c, y[i + 3 * s] = d;
  }
  for (; i < n; i += s) y[i] = x[i];
}

// 8 loads in flight a thread, streaming stores.
__global__ void __launch_bounds__(1024) plain8(const uint4 *x, uint4 *y, long n)
{
  const long s = (long)gridDim.x * blockDim.x;
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 7 * s < n; i += 8 * s) {
    uint4 q[8];
    #pragma unroll
    for (int k = 0; k < 8; k++) q[k] = __ldcs(x + i + k * s);
    #pragma unroll
    for (int k = 0; k < 8; k++) __stcs(y + i + k * s, q[k]);
  }
  for (; i < n; i += s) y[i] = x[i];
}

// The row kernels' way: block b copies part b (V vectors a thread, all loads before any store).
template <int V>
__global__ void __launch_bounds__(1024) rows(const uint4 *x, uint4 *y)
{
  const long base = (long)blockIdx.x * V * blockDim.x + threadIdx.x;
  uint4 q[V];
  #pragma unroll
  for (int k = 0; k < V; k++) q[k] = x[base + k * blockDim.x];
  #pragma unroll
  for (int k = 0; k < V; k++) y[base + k * blockDim.x] = q[k];
}

// rows, persistent: block b of G copies parts b, b + G, ... one after another.
template <int V>
__global__ void __launch_bounds__(1024) prows(const uint4 *x, uint4 *y, long nparts)
{
  for (long p = blockIdx.x; p < nparts; p += gridDim.x) {
    const long base = p * V * blockDim.x + threadIdx.x;
    uint4 q[V];
    #pragma unroll
    for (int k = 0; k < V; k++) q[k] = x[base + k * blockDim.x];
    #pragma unroll
    for (int k = 0; k < V; k++) y[base + k * blockDim.x] = q[k];
  }
}

// rows through shared memory: block b bulk-copies part b into shared memory, then its threads
// store it (no persistence, no ring).
__global__ void __launch_bounds__(1024) tma_rows(const char *x, char *y, u32 P)
{
  extern __shared__ __align__(128) unsigned char sm[];
  __shared__ __align__(8) u64 full;
  if (threadIdx.x == 0) {
    bar_init(&full, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    load_part(sm, x + blockIdx.x * (long)P, P, &full);
  }
  __syncthreads();
  bar_wait(&full, 0);
  uint4 *d = (uint4 *)(y + blockIdx.x * (long)P);
  for (int v = threadIdx.x; v < (int)(P / 16); v += blockDim.x) d[v] = ((const uint4 *)sm)[v];
}

// tma_rows with a softmax's exchange and no persistence: a block takes the next ticket t (the
// order blocks start in), bulk-copies part t, posts a word tagged with the launch's epoch for
// it, waits until the S parts of its row (tickets t - t % S ...) have all posted, then stores.
// Waiting cannot deadlock while S blocks fit on the GPU at once: every lower ticket is held by
// a started block, which posts without waiting.
__global__ void __launch_bounds__(1024) tix(const char *x, char *y, u32 P, u32 S, u32 *counter, u64 base,
                                            unsigned long long *slots, u32 epoch)
{
  extern __shared__ __align__(128) unsigned char sm[];
  __shared__ __align__(8) u64 full;
  __shared__ u32 tk;
  if (threadIdx.x == 0) {
    tk = (u32)(atomicAdd(counter, 1u) - base);
    bar_init(&full, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    load_part(sm, x + tk * (long)P, P, &full);
  }
  __syncthreads();
  const u32 t = tk, row = t / S;
  bar_wait(&full, 0);
  if (threadIdx.x == 0)
    asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(slots + t), "l"((unsigned long long)epoch << 32 | 1u) : "memory");
  if (threadIdx.x < 32)
    for (u32 k = threadIdx.x; k < S; k += 32) {
      unsigned long long w;
      do asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(slots + row * S + k) : "memory");
      while ((u32)(w >> 32) != epoch);
    }
  __syncthreads();
  uint4 *d = (uint4 *)(y + t * (long)P);
  for (int v = threadIdx.x; v < (int)(P / 16); v += blockDim.x) d[v] = ((const uint4 *)sm)[v];
}

// Parts b, b + G, b + 2G, ... of P bytes each for block b of G.
#define MAXD 8
template <bool CS>
__global__ void __launch_bounds__(1024) ring(const char *x, char *y, long nparts, u32 P, int DEPTH, int pieces)
{
  extern __shared__ __align__(128) unsigned char sm[];
  __shared__ __align__(8) u64 full[MAXD], empty[MAXD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x < DEPTH) bar_init(&full[threadIdx.x], 1), bar_init(&empty[threadIdx.x], blockDim.x / 32 - 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  const long n = blockIdx.x < nparts ? (nparts - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  if (warp == 0) {
    if (lane == 0)
      for (long i = 0; i < n; i++) {
        const int s = i % DEPTH;
        if (i >= DEPTH) bar_wait(&empty[s], (u32)(i / DEPTH - 1) & 1);
        load_part(sm + (size_t)s * P, x + (blockIdx.x + i * gridDim.x) * (long)P, P, &full[s], pieces);
      }
    return;
  }
  const int nv = P / 16, t = threadIdx.x - 32, nt = blockDim.x - 32;
  for (long i = 0; i < n; i++) {
    const int s = i % DEPTH;
    bar_wait(&full[s], (u32)(i / DEPTH) & 1);
    const uint4 *st = (const uint4 *)(sm + (size_t)s * P);
    uint4 *d = (uint4 *)(y + (blockIdx.x + i * gridDim.x) * (long)P);
    for (int v = t; v < nv; v += nt) {
      uint4 q = st[v];
      if (CS) __stcs(d + v, q); else d[v] = q;
    }
    __syncwarp();
    if (lane == 0) bar_arrive(&empty[s]);
  }
}

// ring, but the loader takes each next part from a global counter when a stage frees (the
// launch's first ticket is base): a block on a slower SM simply takes fewer parts.
__global__ void __launch_bounds__(1024) ring_dyn(const char *x, char *y, long nparts, u32 P, int DEPTH, u32 *counter, u32 base)
{
  extern __shared__ __align__(128) unsigned char sm[];
  __shared__ __align__(8) u64 full[MAXD], empty[MAXD];
  __shared__ long part[MAXD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x < DEPTH) bar_init(&full[threadIdx.x], 1), bar_init(&empty[threadIdx.x], blockDim.x / 32 - 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  if (warp == 0) {
    if (lane == 0)
      for (long i = 0;; i++) {
        const int s = i % DEPTH;
        if (i >= DEPTH) bar_wait(&empty[s], (u32)(i / DEPTH - 1) & 1);
        const long p = (long)(atomicAdd(counter, 1u) - base);
        part[s] = p < nparts ? p : -1;
        if (p >= nparts) { bar_arrive(&full[s]); break; }
        load_part(sm + (size_t)s * P, x + p * (long)P, P, &full[s]);
      }
    return;
  }
  const int nv = P / 16, t = threadIdx.x - 32, nt = blockDim.x - 32;
  for (long i = 0;; i++) {
    const int s = i % DEPTH;
    bar_wait(&full[s], (u32)(i / DEPTH) & 1);
    const long p = part[s];
    if (p < 0) break;
    const uint4 *st = (const uint4 *)(sm + (size_t)s * P);
    uint4 *d = (uint4 *)(y + p * (long)P);
    for (int v = t; v < nv; v += nt) d[v] = st[v];
    __syncwarp();
    if (lane == 0) bar_arrive(&empty[s]);
  }
}

// The stores by bulk copy as well; lane 0 of warp 0 does everything.
__global__ void __launch_bounds__(32, 1) ring_tma(const char *x, char *y, long nparts, u32 P, int DEPTH)
{
  extern __shared__ __align__(128) unsigned char sm[];
  __shared__ __align__(8) u64 full[MAXD];
  if (threadIdx.x != 0) return;
  for (int s = 0; s < DEPTH; s++) bar_init(&full[s], 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const long n = blockIdx.x < nparts ? (nparts - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  auto src = [&](long i) { return x + (blockIdx.x + i * gridDim.x) * (long)P; };
  for (long i = 0; i < n && i < DEPTH; i++) load_part(sm + (size_t)i * P, src(i), P, &full[i]);
  for (long i = 0; i < n; i++) {
    const int s = i % DEPTH;
    bar_wait(&full[s], (u32)(i / DEPTH) & 1);
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 :: "l"(y + (blockIdx.x + i * gridDim.x) * (long)P), "r"(sa(sm + (size_t)s * P)), "r"(P) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    if (i + DEPTH < n) {
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   // the stage read out: free
      load_part(sm + (size_t)s * P, src(i + DEPTH), P, &full[s]);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

struct Variant { std::string name; std::function<void(cudaStream_t)> run; std::vector<float> ms; };

int main(int argc, char **argv)
{
  const long MB = argc > 1 ? atol(argv[1]) : 512, KBP = argc > 2 ? atol(argv[2]) : 64;
  const int rounds = argc > 3 ? atoi(argv[3]) : 30;
  const size_t bytes = (size_t)MB << 20;
  const u32 P = (u32)(KBP << 10);
  const long nparts = (long)(bytes / P);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount, optin = (int)prop.sharedMemPerBlockOptin;
  const int dmax = std::min(MAXD, (optin - 1024) / (int)P);
  if (3 * (long)P + 1024 > optin) { fprintf(stderr, "ringcopy: 3 stages of part_KB=%ld exceed %d bytes of shared memory\n", KBP, optin); return 1; }
  if (bytes % P) { fprintf(stderr, "ringcopy: part_KB=%ld does not divide %ld MB\n", KBP, MB); return 1; }
  char *x, *y, *flush;
  const size_t fb = 256u << 20;
  CK(cudaMalloc(&x, bytes)); CK(cudaMalloc(&y, bytes)); CK(cudaMalloc(&flush, fb));
  std::vector<unsigned char> hx(bytes), hy(bytes);
  for (size_t i = 0; i < bytes; i++) hx[i] = (unsigned char)(i * 2654435761u >> 13);
  CK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
  const int smax = dmax * (int)P;
  CK(cudaFuncSetAttribute(ring<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smax));
  CK(cudaFuncSetAttribute(ring<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smax));
  CK(cudaFuncSetAttribute(ring_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, smax));
  std::vector<Variant> vs;
  vs.push_back({ "memcpy", [&](cudaStream_t s) { CK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s)); }, {} });
  vs.push_back({ "plain", [&](cudaStream_t s) { plain<<<2 * sms, 1024, 0, s>>>((const uint4 *)x, (uint4 *)y, (long)(bytes / 16)); }, {} });
  vs.push_back({ "plain8", [&](cudaStream_t s) { plain8<<<2 * sms, 1024, 0, s>>>((const uint4 *)x, (uint4 *)y, (long)(bytes / 16)); }, {} });
  for (int g : { sms, sms / 32 * 32 })
    for (int d : { 3, dmax }) {
      const std::string gs = "/" + std::to_string(g) + "/d" + std::to_string(d);
      const size_t sb = (size_t)d * P;
      vs.push_back({ "ring" + gs, [=](cudaStream_t s) { ring<false><<<g, 1024, sb, s>>>(x, y, nparts, P, d, 1); }, {} });
      vs.push_back({ "ring.cs" + gs, [=](cudaStream_t s) { ring<true><<<g, 1024, sb, s>>>(x, y, nparts, P, d, 1); }, {} });
      vs.push_back({ "ring.4pc" + gs, [=](cudaStream_t s) { ring<false><<<g, 1024, sb, s>>>(x, y, nparts, P, d, 4); }, {} });
      vs.push_back({ "ring.tma" + gs, [=](cudaStream_t s) { ring_tma<<<g, 32, sb, s>>>(x, y, nparts, P, d); }, {} });
      if (d == dmax) break;
    }
  if (P == 64 << 10) {
    vs.push_back({ "rows", [&](cudaStream_t s) { rows<4><<<nparts, 1024, 0, s>>>((const uint4 *)x, (uint4 *)y); }, {} });
    vs.push_back({ "prows/2sm", [&](cudaStream_t s) { prows<4><<<2 * sms, 1024, 0, s>>>((const uint4 *)x, (uint4 *)y, nparts); }, {} });
    vs.push_back({ "prows/sm", [&](cudaStream_t s) { prows<4><<<sms, 1024, 0, s>>>((const uint4 *)x, (uint4 *)y, nparts); }, {} });
  }
  if (P == 32 << 10) {
    vs.push_back({ "rows", [&](cudaStream_t s) { rows<2><<<nparts, 1024, 0, s>>>((const uint4 *)x, (uint4 *)y); }, {} });
    vs.push_back({ "prows/2sm", [&](cudaStream_t s) { prows<2><<<2 * sms, 1024, 0, s>>>((const uint4 *)x, (uint4 *)y, nparts); }, {} });
  }
  CK(cudaFuncSetAttribute(tma_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)P));
  vs.push_back({ "tma_rows", [&](cudaStream_t s) { tma_rows<<<nparts, 1024, P, s>>>(x, y, P); }, {} });
  CK(cudaFuncSetAttribute(tix, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)P));
  u32 *counter;
  unsigned long long *slots;
  CK(cudaMalloc(&counter, 4)); CK(cudaMemset(counter, 0, 4));
  CK(cudaMalloc(&slots, nparts * 8)); CK(cudaMemset(slots, 0, nparts * 8));
  u32 epoch = 0;
  CK(cudaFuncSetAttribute(ring_dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, smax));
  u32 *counter2, base2 = 0;   // every block of ring_dyn takes one ticket past the last part
  CK(cudaMalloc(&counter2, 4)); CK(cudaMemset(counter2, 0, 4));
  for (int g : { sms, 2 * sms })
    for (int d : { 3, dmax }) {
      const int th = g == sms ? 1024 : 512;
      if (g != sms && (size_t)d * P * 2 + 2048 > (size_t)prop.sharedMemPerMultiprocessor) continue;
      vs.push_back({ "ring.dyn/" + std::to_string(g) + "/d" + std::to_string(d), [&, g, d, th](cudaStream_t s) {
        ring_dyn<<<g, th, (size_t)d * P, s>>>(x, y, nparts, P, d, counter2, base2);
        base2 += (u32)(nparts + g);
      }, {} });
    }
  for (u32 S : { 32u, 128u })
    if (nparts % S == 0)
      vs.push_back({ "tix/S" + std::to_string(S), [&, S](cudaStream_t s) {
        epoch++;
        tix<<<nparts, 1024, P, s>>>(x, y, P, S, counter, (u64)(epoch - 1) * nparts, slots, epoch);
      }, {} });
  if (3 * P <= (u32)optin / 2 - 1024) {   // two blocks an SM, 512 threads each
    const size_t sb = 3 * (size_t)P;
    vs.push_back({ "ring2x512/d3", [=](cudaStream_t s) { ring<false><<<2 * sms, 512, sb, s>>>(x, y, nparts, P, 3, 1); }, {} });
  }
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  for (auto &v : vs) {   // each output byte for byte, from a poisoned start
    CK(cudaMemset(y, 0xff, bytes));
    v.run(st);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    CK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));
    if (memcmp(hx.data(), hy.data(), bytes)) { fprintf(stderr, "ringcopy: %s: output differs from input\n", v.name.c_str()); return 1; }
  }
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int r = 0; r < rounds; r++)
    for (size_t k = 0; k < vs.size(); k++) {
      Variant &v = vs[(k + r) % vs.size()];   // rotating order
      CK(cudaMemsetAsync(flush, r, fb, st));
      CK(cudaEventRecord(a, st));
      v.run(st);
      CK(cudaEventRecord(b, st));
      CK(cudaEventSynchronize(b));
      float ms;
      CK(cudaEventElapsedTime(&ms, a, b));
      if (r > 0) v.ms.push_back(ms);   // round 0 warms up
    }
  CK(cudaGetLastError());
  printf("# ringcopy on %s (%d SMs), %ld MB, parts of %ld KB, /G blocks, /dD stages; median of %d rounds\n", prop.name, sms, MB, KBP, rounds - 1);
  printf("variant\tus\tGB/s\tfrac_of_memcpy\n");
  double floor_us = 0;
  for (auto &v : vs) {
    std::sort(v.ms.begin(), v.ms.end());
    const double us = 1e3 * v.ms[v.ms.size() / 2];
    if (v.name == "memcpy") floor_us = us;
    printf("%s\t%.1f\t%.0f\t%.3f\n", v.name.c_str(), us, 2.0 * bytes / us / 1e3, floor_us / us);
  }
  return 0;
}
