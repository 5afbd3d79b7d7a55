// lat32.cu — where the time of a few-row softmax goes (32x16384, f32 and bf16), measured with
// plain hand-written kernels outside the tuner: copy kernels with and without a cluster launch
// and a cluster barrier, the softmax one block per row, split over a cluster (pairs swapped
// through distributed shared memory), and split over plain blocks (pairs swapped through global
// memory, tagged by launch). Each launch is timed alone by events after a 256 MB memset (as
// triton.testing.do_bench clears L2); rounds of every variant are interleaved; median. Every
// softmax variant is checked against a float64 softmax on the CPU first.
//
//     nvcc -O3 -arch=sm_90 -std=c++17 -o lat32 lab/lat32.cu && ./lat32 [rounds]
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cg = cooperative_groups;
#pragma nv_diag_suppress 128   // the softmax part of a copy variant is unreachable, by design

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "lat32: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const int ROWS = 32, COLS = 16384;

// A 16-byte vector as EPV floats: f32 (4) or bf16 (8).
struct F32 {
  static const int EPV = 4;
  static __device__ void unpack(uint4 q, float *f) {
    f[0] = __uint_as_float(q.x), f[1] = __uint_as_float(q.y), f[2] = __uint_as_float(q.z), f[3] = __uint_as_float(q.w);
  }
  static __device__ uint4 pack(const float *f) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
  }
  static float host(const void *p, size_t i) { return ((const float *)p)[i]; }
  static void host_set(void *p, size_t i, float v) { ((float *)p)[i] = v; }
};

struct BF16 {
  static const int EPV = 8;
  static __device__ void unpack(uint4 q, float *f) {
    const unsigned w[4] = { q.x, q.y, q.z, q.w };
    for (int i = 0; i < 4; i++) f[2 * i] = __uint_as_float(w[i] << 16), f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
  static __device__ uint4 pack(const float *f) {
    unsigned w[4];
    for (int i = 0; i < 4; i++) {
      __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
      w[i] = *(unsigned *)&h;
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
  static float host(const void *p, size_t i) {
    unsigned u = (unsigned)((const unsigned short *)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  static void host_set(void *p, size_t i, float v) {
    unsigned u;
    memcpy(&u, &v, 4);
    u += 0x7fffu + ((u >> 16) & 1);   // round to nearest even
    ((unsigned short *)p)[i] = (unsigned short)(u >> 16);
  }
};

struct MS { float m, s; };

__device__ __forceinline__ unsigned long long now()
{
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ float ex(float a, float b) { return exp2f((a - b) * 1.4426950408889634f); }

// one exp, as templates/common.cu: the pair with the larger max keeps its sum
__device__ __forceinline__ MS comb(MS a, MS b)
{
  if (a.m == -INFINITY && b.m == -INFINITY) return a;
  return a.m >= b.m ? MS{ a.m, a.s + b.s * ex(b.m, a.m) } : MS{ b.m, b.s + a.s * ex(a.m, b.m) };
}

__device__ __forceinline__ MS warp_fold(MS a)
{
  for (int o = 16; o > 0; o >>= 1) a = comb(a, { __shfl_xor_sync(~0u, a.m, o), __shfl_xor_sync(~0u, a.s, o) });
  return a;
}

enum Mode { COPY, COPY_SYNC, SMX, SMX_GLOBAL, FLAT, POLL };

__device__ __forceinline__ void arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
__device__ __forceinline__ void wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

#define NSTAMP 7
// With a trace buffer, thread 0 stamps the global timer: 0 entry, 1 its loads in, 2 its block's
// pair ready (SMX: block reduced; FLAT: its warp's pair posted), 3 past the barrier, 4 the row's
// pair folded, 5 stores issued, 6 end.
#define STAMP(i) do { if (stamp && threadIdx.x == 0) stamp[i] = now(); } while (0)

// Block b of a row's S blocks (consecutive) takes T*N vectors of the row, coalesced by thread.
// SMX: warp folds, a block reduction, the S block pairs swapped (cluster: distributed shared
// memory, arrive/wait split as templates/split.cu; global: tagged words). FLAT: every warp posts
// its pair straight into a slot of every block of the cluster, one barrier, every warp folds all
// S*W pairs: no block reduction.
template <class E, int T, int N, int S, int MODE>
__global__ void __launch_bounds__(T) kern(const uint4 *x, uint4 *y, unsigned long long *ws, unsigned epoch,
                                          unsigned long long *trace)
{
  constexpr int W = T / 32;
  unsigned long long *stamp = trace ? trace + (size_t)blockIdx.x * NSTAMP : nullptr;
  STAMP(0);
  const int row = blockIdx.x / S, rank = blockIdx.x % S;
  const size_t base = (size_t)row * (COLS / E::EPV) + (size_t)rank * T * N + threadIdx.x;
  uint4 q[N];
#pragma unroll
  for (int i = 0; i < N; i++) q[i] = __ldcs(x + base + i * T);
  // FLAT and POLL write into the other blocks' shared memory: they must have started (a wait
  // before it); POLL's slots are zeroed first, and the arrive releases that
  __shared__ unsigned long long tagged[S * W];
  if (MODE == POLL) {
    for (int i = threadIdx.x; i < S * W; i += T) tagged[i] = 0;
    arrive();
  }
  if (MODE == FLAT && S > 1) arrive_relaxed();
  if (MODE == COPY || MODE == COPY_SYNC) {
    if (MODE == COPY_SYNC) cg::this_cluster().sync();
#pragma unroll
    for (int i = 0; i < N; i++) __stcs(y + base + i * T, q[i]);
    return;
  }
  float f[N * E::EPV];
#pragma unroll
  for (int i = 0; i < N; i++) E::unpack(q[i], f + i * E::EPV);
  MS a = { -INFINITY, 0.f };
#pragma unroll
  for (int j = 0; j < N * E::EPV; j++) a.m = fmaxf(a.m, f[j]);
  if (stamp && threadIdx.x == 0) stamp[1] = now() + (a.m == 12345.f);   // after the loads it waits on
#pragma unroll
  for (int j = 0; j < N * E::EPV; j++) a.s += (f[j] = ex(f[j], a.m));   // kept, scaled at the output
  const float mine = a.m;
  a = warp_fold(a);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  MS all;
  if (MODE == POLL) {
    // each warp's pair as one 8-byte word, the sign bit of s set (s >= 0): a zeroed slot has it clear
    const unsigned long long w = (unsigned long long)(__float_as_uint(a.s) | 0x80000000u) << 32 | __float_as_uint(a.m);
    wait();
    if (lane < S) {
      unsigned local = (unsigned)__cvta_generic_to_shared(&tagged[rank * W + warp]), remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(lane));
      asm volatile("st.relaxed.cluster.shared::cluster.b64 [%0], %1;" :: "r"(remote), "l"(w) : "memory");
    }
    STAMP(2);
    MS b = { -INFINITY, 0.f };
    for (int r = lane; r < S * W; r += 32) {
      const unsigned at = (unsigned)__cvta_generic_to_shared(&tagged[r]);
      unsigned long long v;
      do asm volatile("ld.relaxed.cluster.shared::cta.b64 %0, [%1];" : "=l"(v) : "r"(at) : "memory");
      while (!(v >> 63));
      b = comb(b, { __uint_as_float((unsigned)v), __uint_as_float((unsigned)(v >> 32) & 0x7fffffffu) });
    }
    STAMP(3);
    all = warp_fold(b);
    STAMP(4);
  } else if (MODE == FLAT) {
    __shared__ MS slot[S * W];
    if (S == 1) {
      if (lane == 0) slot[warp] = a;
      STAMP(2);
      __syncthreads();
    } else {
      cg::cluster_group cl = cg::this_cluster();
      wait();
      if (lane < S) *cl.map_shared_rank(&slot[rank * W + warp], lane) = a;
      STAMP(2);
      arrive();
      wait();
    }
    STAMP(3);
    MS b = { -INFINITY, 0.f };
    for (int r = lane; r < S * W; r += 32) b = comb(b, slot[r]);
    all = warp_fold(b);
    STAMP(4);
    if (S > 1) arrive_relaxed();   // done reading; the wait before exit keeps slot alive
  } else {
    __shared__ MS wp[W];
    __shared__ MS part;
    if (lane == 0) wp[warp] = a;
    __syncthreads();
    if (warp == 0) {
      MS b = lane < W ? wp[lane] : MS{ -INFINITY, 0.f };
      b = warp_fold(b);
      if (lane == 0) part = b;
    }
    __syncthreads();
    all = part;
    STAMP(2);
    if (S > 1 && MODE == SMX) {
      cg::cluster_group cl = cg::this_cluster();
      arrive();
      wait();
      STAMP(3);
      MS b = lane < S ? *cl.map_shared_rank(&part, lane) : MS{ -INFINITY, 0.f };
      all = warp_fold(b);
      STAMP(4);
      arrive_relaxed();
    } else if (S > 1) {
      // one 8-byte word per block: m low, s high with its sign bit the launch's tag
      unsigned long long *slot = ws + (size_t)row * S;
      const unsigned tag = epoch & 1;
      __shared__ MS g;
      if (threadIdx.x == 0) {
        const unsigned long long w = (unsigned long long)(__float_as_uint(all.s) | tag << 31) << 32 | __float_as_uint(all.m);
        asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" :: "l"(slot + rank), "l"(w) : "memory");
      }
      if (warp == 0) {
        MS b = { -INFINITY, 0.f };
        if (lane < S) {
          unsigned long long w;
          for (;;) {
            asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(w) : "l"(slot + lane) : "memory");
            if ((unsigned)(w >> 63) == tag) break;
          }
          b = { __uint_as_float((unsigned)w), __uint_as_float((unsigned)(w >> 32) & 0x7fffffffu) };
        }
        STAMP(3);
        b = warp_fold(b);
        if (lane == 0) g = b;
      }
      __syncthreads();
      all = g;
      STAMP(4);
    }
  }
  const float k = ex(mine, all.m) / all.s;
#pragma unroll
  for (int j = 0; j < N * E::EPV; j++) f[j] *= k;
#pragma unroll
  for (int i = 0; i < N; i++) __stcs(y + base + i * T, E::pack(f + i * E::EPV));
  STAMP(5);
  if (S > 1 && MODE != SMX_GLOBAL && MODE != POLL) wait();
  STAMP(6);
}

__global__ void empty_kern() {}

struct Var {
  std::string name;
  std::function<void(unsigned long long *)> go;   // launch, with a trace buffer or null
  bool softmax;
  std::vector<float> us;
  int split;
};

static uint4 *gx, *gy;
static unsigned long long *gws;   // a region of ROWS * 32 pairs for each variant
static int gvariants;

template <class E, int T, int N, int S, int MODE>
static void add(std::vector<Var> &v, bool cluster)
{
  static_assert(S * T * N * E::EPV == COLS, "a row is S blocks of T threads of N vectors");
  const char *mode[] = { "copy", "copy+cluster.sync", "softmax", "softmax global swap", "softmax flat", "softmax poll" };
  char name[128];
  snprintf(name, sizeof name, "%-20s S=%-2d T=%-4d N=%d%s", mode[MODE], S, T, N, cluster ? " cluster" : "");
  unsigned long long *ws = gws + (size_t)gvariants++ * ROWS * 32;
  auto epoch = std::make_shared<unsigned>(0);   // each launch of a variant flips its tag
  if (cluster && S > 8) CK(cudaFuncSetAttribute(kern<E, T, N, S, MODE>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  v.push_back({ name, [cluster, ws, epoch](unsigned long long *trace) {
    cudaLaunchConfig_t c = {};
    cudaLaunchAttribute at[1];
    c.gridDim = dim3(ROWS * S), c.blockDim = dim3(T);
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = S, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
    c.attrs = at, c.numAttrs = cluster ? 1 : 0;
    CK(cudaLaunchKernelEx(&c, kern<E, T, N, S, MODE>, (const uint4 *)gx, gy, ws, ++*epoch, trace));
  }, MODE >= SMX, {}, S });
}

template <class E>
static double check(void *hx, void *hy)
{
  double worst = 0;
  for (int r = 0; r < ROWS; r++) {
    double m = -INFINITY, s = 0, sum = 0;
    for (int c = 0; c < COLS; c++) m = std::max(m, (double)E::host(hx, (size_t)r * COLS + c));
    for (int c = 0; c < COLS; c++) s += exp(E::host(hx, (size_t)r * COLS + c) - m);
    for (int c = 0; c < COLS; c++) {
      const double ref = exp(E::host(hx, (size_t)r * COLS + c) - m) / s, got = E::host(hy, (size_t)r * COLS + c);
      worst = std::max(worst, std::isfinite(got) ? fabs(got - ref) / ref : INFINITY);
      sum += got;
    }
    worst = std::max(worst, fabs(sum - 1));
  }
  return worst;
}

template <class E>
static void run(const char *dtype, std::vector<Var> &v, int rounds)
{
  const size_t n = (size_t)ROWS * COLS, bytes = n * (16 / E::EPV);
  std::vector<unsigned char> hx(bytes), hy(bytes);
  srand(7);
  for (size_t i = 0; i < n; i++) E::host_set(hx.data(), i, 3.f * ((rand() / (float)RAND_MAX) * 2 - 1));
  CK(cudaMemcpy(gx, hx.data(), bytes, cudaMemcpyHostToDevice));
  void *flush;
  const size_t fb = 256u << 20;
  CK(cudaMalloc(&flush, fb));
  for (Var &x : v) {
    if (!x.softmax) continue;
    CK(cudaMemset(gy, 0xff, bytes));   // NaN
    x.go(nullptr);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hy.data(), gy, bytes, cudaMemcpyDeviceToHost));
    const double e = check<E>(hx.data(), hy.data());
    if (e > (E::EPV == 4 ? 1e-4 : 1e-2)) printf("%s %s: WRONG, max rel err %.3g\n", dtype, x.name.c_str(), e);
  }
  const int reps = 20;
  cudaEvent_t ev[2 * reps];
  for (auto &e : ev) CK(cudaEventCreate(&e));
  for (int r = 0; r < rounds; r++)
    for (Var &x : v) {
      for (int i = 0; i < reps; i++) {
        CK(cudaMemsetAsync(flush, i + r, fb));
        CK(cudaEventRecord(ev[2 * i]));
        x.go(nullptr);
        CK(cudaEventRecord(ev[2 * i + 1]));
      }
      CK(cudaDeviceSynchronize());
      for (int i = 0; i < reps; i++) {
        float ms;
        CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        x.us.push_back(ms * 1e3f);
      }
    }
  unsigned long long *tr;
  const int nb = ROWS * 32, shots = 7;
  CK(cudaMalloc(&tr, nb * NSTAMP * 8));
  std::vector<unsigned long long> h(nb * NSTAMP);
  const char *phase[] = { "start", "loads", "pair", "wait", "barrier", "fold", "out", "end" };
  for (Var &x : v) {
    if (!x.softmax) continue;
    std::vector<std::pair<long long, std::vector<double>>> got;   // span, then median and max of each phase
    for (int shot = 0; shot < shots; shot++) {
      CK(cudaMemset(tr, 0, nb * NSTAMP * 8));
      CK(cudaMemsetAsync(flush, shot, fb));
      x.go(tr);
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(h.data(), tr, nb * NSTAMP * 8, cudaMemcpyDeviceToHost));
      const int blocks = ROWS * x.split;
      long long t0 = LLONG_MAX, t6 = 0;
      for (int b = 0; b < blocks; b++) {
        long long *st = (long long *)&h[b * NSTAMP];
        for (int i = 3; i < NSTAMP; i++) if (!st[i]) st[i] = st[i - 1];   // stamps a variant has not: no time
        t0 = std::min(t0, st[0]), t6 = std::max(t6, st[6]);
      }
      std::vector<double> d[8];
      for (int b = 0; b < blocks; b++) {
        const long long *st = (long long *)&h[b * NSTAMP];
        long long last = 0;   // the last pair of its cluster ready
        for (int c = b / x.split * x.split; c < (b / x.split + 1) * x.split; c++) last = std::max(last, (long long)h[c * NSTAMP + 2]);
        const double ph[8] = { (double)(st[0] - t0), (double)(st[1] - st[0]), (double)(st[2] - st[1]), (double)(last - st[2]),
                               (double)std::max(0ll, st[3] - last), (double)(st[4] - st[3]), (double)(st[5] - st[4]),
                               (double)(st[6] - st[5]) };
        for (int i = 0; i < 8; i++) d[i].push_back(ph[i]);
      }
      std::vector<double> fig;
      for (auto &q : d) std::sort(q.begin(), q.end()), fig.push_back(q[q.size() / 2]), fig.push_back(q.back());
      got.push_back({ t6 - t0, fig });
    }
    std::sort(got.begin(), got.end(), [](auto &a, auto &b) { return a.first < b.first; });
    const auto &m = got[shots / 2];
    printf("%s\t%-44s\tspan %lld ns;", dtype, x.name.c_str(), m.first);
    for (int i = 0; i < 8; i++) printf(" %s %.0f/%.0f", phase[i], m.second[2 * i], m.second[2 * i + 1]);
    printf("\n");
  }
  CK(cudaFree(tr));
  double copy = 0;
  for (Var &x : v) {
    std::sort(x.us.begin(), x.us.end());
    const double med = x.us[x.us.size() / 2];
    if (x.name == "memcpy") copy = med;
    printf("%s\t%-44s\t%7.2f us\t%6.1f GB/s\t%.3f of copy\t(p10 %.2f, p90 %.2f)\n", dtype, x.name.c_str(), med,
           2.0 * bytes / med / 1e3, copy / med, x.us[x.us.size() / 10], x.us[x.us.size() * 9 / 10]);
  }
  for (auto &e : ev) CK(cudaEventDestroy(e));
  CK(cudaFree(flush));
}

template <class E>
static void common(std::vector<Var> &v)
{
  const size_t bytes = (size_t)ROWS * COLS * (16 / E::EPV);
  v.push_back({ "memcpy", [bytes](unsigned long long *) { CK(cudaMemcpyAsync(gy, gx, bytes, cudaMemcpyDeviceToDevice)); }, false, {}, 1 });
  v.push_back({ "empty kernel", [](unsigned long long *) { empty_kern<<<1, 32>>>(); }, false, {}, 1 });
}

// Copy kernels with the 8-block geometry: plain, launched in clusters, and with a cluster barrier
// between the loads and the stores.
template <class E, int N>
static void copies(std::vector<Var> &v)
{
  add<E, 64, N, 8, COPY>(v, false);
  add<E, 64, N, 8, COPY>(v, true);
  add<E, 64, N, 8, COPY_SYNC>(v, true);
}

// The hierarchical, flat and polled swaps of one geometry (in clusters when S > 1).
template <class E, int T, int N, int S>
static void swaps(std::vector<Var> &v)
{
  add<E, T, N, S, SMX>(v, S > 1);
  add<E, T, N, S, FLAT>(v, S > 1);
  add<E, T, N, S, POLL>(v, S > 1);
}

int main(int argc, char **argv)
{
  const int rounds = argc > 1 ? atoi(argv[1]) : 10;
  CK(cudaMalloc(&gx, (size_t)ROWS * COLS * 4));
  CK(cudaMalloc(&gy, (size_t)ROWS * COLS * 4));
  CK(cudaMalloc(&gws, 64 * ROWS * 32 * 8));
  CK(cudaMemset(gws, 0, 64 * ROWS * 32 * 8));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  printf("# %s, %d SMs; %dx%d; median of rounds x 20 launches, 256 MB memset before each\n", p.name,
         p.multiProcessorCount, ROWS, COLS);
  std::vector<Var> f;
  common<F32>(f);
  copies<F32, 8>(f);
  swaps<F32, 1024, 4, 1>(f);
  swaps<F32, 512, 4, 2>(f);
  swaps<F32, 256, 4, 4>(f);
  swaps<F32, 128, 4, 8>(f);
  swaps<F32, 64, 8, 8>(f);
  swaps<F32, 64, 4, 16>(f);
  add<F32, 64, 4, 16, SMX_GLOBAL>(f, false);
  run<F32>("f32", f, rounds);
  std::vector<Var> b;
  common<BF16>(b);
  copies<BF16, 4>(b);
  add<BF16, 512, 4, 1, SMX>(b, false);
  swaps<BF16, 1024, 2, 1>(b);
  swaps<BF16, 256, 4, 2>(b);
  swaps<BF16, 128, 4, 4>(b);
  swaps<BF16, 64, 4, 8>(b);
  swaps<BF16, 64, 2, 16>(b);
  add<BF16, 64, 2, 16, SMX_GLOBAL>(b, false);
  run<BF16>("bf16", b, rounds);
  return 0;
}
