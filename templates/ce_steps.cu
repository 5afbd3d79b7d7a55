// ce_steps.cu — the steps of a cross-entropy call around its loss kernel (ce.cu), one module a
// dtype whatever the config or width (no knob, no COLS: the width is p.cols), so the tuner's
// trials compile the loss kernel alone and a process loads these once:
//   st_ce_count   the gradient's factor: g / (the rows not ignored, weighted), the mean's divisor
//                 as torch takes it, g the grad_output predicted (the last one seen)
//   st_ce_reduce  the reduced loss (torch's sum or mean)
//   st_ce_scale   the backward's gradient times grad_output / g (no pass when they are equal)
//   st_vp_*       vocab-parallel cross-entropy's row steps (ce_vocab.cu)
% COLSX = "p.cols"
% include("types.cu")
% include("ce_params.h")
#define SV (16 / (int)sizeof(elem_t))   // elements in a 16-byte vector

// Programmatic dependent launch (sm_90 and up; elsewhere, or in a launch without it, nothing to
// do): wait until the kernel before this one in the stream has finished and its writes show.
// Only st_ce_reduce waits: in the loss kernel the wait cost about 0.7 us a block even with
// nothing to wait for (f32 1024x256000: 795 us against 755, H100), more than an early start of
// it after st_ce_count saves.
__device__ __forceinline__ void grid_wait()
{
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

struct __align__(16) V16 { u32 u[4]; };

// The weight of row i's label in the mean's count: 0 where ignored (or out of range), 1 without
// class weights.
__device__ __forceinline__ double row_weight(const CeParams &p, const void *labels, i64 i)
{
  const i64 y = label_of(p, labels, i);
  return y != p.ignore && y >= 0 && y < p.cols ? (p.weight ? (double)((const float *)p.weight)[y] : 1.) : 0.;
}

// The sums of a and b over one block (of whole warps), in thread 0: a fixed order, the same bits
// every run.
__device__ void block_sums(double &a, double &b)
{
  __shared__ double part[2][32];
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o), b += __shfl_xor_sync(0xffffffffu, b, o);
  if (threadIdx.x % 32 == 0) part[0][threadIdx.x / 32] = a, part[1][threadIdx.x / 32] = b;
  __syncthreads();
  if (threadIdx.x == 0) {
    a = b = 0.;
    for (int w = 0; w < (int)(blockDim.x + 31) / 32; w++) a += part[0][w], b += part[1][w];
  }
}

// a += f's first term and b += its second over rows i = threadIdx.x, + blockDim.x, ..., in that
// order (the same bits as one row at a time), the terms of 8 rows loaded at once so that their
// latencies overlap.
template <class F>
__device__ __forceinline__ void row_sums(i64 rows, F f, double &a, double &b)
{
  for (i64 i0 = threadIdx.x; i0 < rows; i0 += 8 * (i64)blockDim.x) {
    double x[8], y[8];
    #pragma unroll
    for (int k = 0; k < 8; k++) {
      const i64 i = i0 + k * (i64)blockDim.x;
      x[k] = y[k] = 0.;
      if (i < rows) f(i, x[k], y[k]);
    }
    #pragma unroll
    for (int k = 0; k < 8; k++) a += x[k], b += y[k];
  }
}

// The gradient's factor: g / the sum over rows not ignored of their label's weight (their count
// without weights) for a mean (0 when there is none), g for a sum; g the predicted grad_output:
// *pred, the last scalar grad_output st_ce_scale saw on this stream (0 before any: 1), or 1 where
// pred is NULL. *used keeps g for st_ce_scale (used NULL: not kept). One block.
extern "C" __global__ void __launch_bounds__(1024) st_ce_count(const void *labels, i64 rows, CeParams p, float *out,
                                                               const float *pred, float *used, int mean)
{
  const float g = pred && *pred != 0.f ? *pred : 1.f;
  double n = 0., unused = 0.;
  if (mean) row_sums(rows, [&](i64 i, double &w, double &) { w = row_weight(p, labels, i); }, n, unused);
  block_sums(n, unused);
  if (threadIdx.x == 0) *out = !mean ? g : n > 0. ? (float)((double)g / n) : 0.f;
  if (threadIdx.x == 0 && used) *used = g;
}

// The reduced loss: *out = the sum of loss[0, rows), over (mean) the sum of the labels' weights
// of the rows not ignored (their count without weights): torch's sum or mean, 0 / 0 a NaN as
// torch's. One block, in double, each thread's terms and the tree in a fixed order: the same
// bits every run. It reads the labels itself, so it needs no scratch (a graph capture's first
// call may run it). elem: *out in the logits' dtype, else float32.
extern "C" __global__ void __launch_bounds__(1024) st_ce_reduce(const float *loss, const void *labels, i64 rows, CeParams p,
                                                                int mean, int elem, void *out)
{
  grid_wait();   // the losses, from the kernel launched just before this one
  double t = 0., n = 0.;
  row_sums(rows, [&](i64 i, double &l, double &w) { l = (double)loss[i], w = mean ? row_weight(p, labels, i) : 0.; }, t, n);
  block_sums(t, n);
  if (threadIdx.x == 0 && elem) store1((elem_t *)out, (float)(mean ? t / n : t));
  if (threadIdx.x == 0 && !elem) *(float *)out = (float)(mean ? t / n : t);
}

// grad_output's value i: float32 (a float32 loss's, under autocast), else in the logits' dtype.
__device__ __forceinline__ float go_at(const void *go, i64 i, bool f32) { return f32 ? ((const float *)go)[i] : load1((const elem_t *)go + i); }

// The backward's step: the gradient [rows, cols] (contiguous) the kernel wrote, times grad_output:
// one scalar g (read here, so no host sync) or one value a row (flags & 1: reduction none); flags
// & 2: grad_output is float32. A scalar's gradient was written times u = *used (st_ce_count's g;
// used NULL: 1): g == u, nothing to do and no pass; else the gradient times g / u. Block 0 then
// predicts the next call's g (*pred = g where g is in [2^-24, 2^24], else 1; pred NULL: none).
// Grid-stride loops: a scalar's by 16-byte vectors between scalar ends up to the vectors'
// alignment; one value a row's by rows, a block a row at a time.
extern "C" __global__ void __launch_bounds__(256) st_ce_scale(elem_t *grad, const void *go, i64 rows, i64 cols, int flags,
                                                              const float *used, float *pred)
{
  const bool per_row = flags & 1, f32 = flags & 2;
  const float g = go_at(go, 0, f32), u = used && !per_row ? *used : 1.f;
  if (pred && !per_row && blockIdx.x == 0 && threadIdx.x == 0) *pred = g >= 0x1p-24f && g <= 0x1p24f ? g : 1.f;
  if (!per_row && g == u) return;
  const float s = g / u;
  const i64 n = rows * cols, step = (i64)gridDim.x * blockDim.x, first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (per_row) {
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
      const float k = go_at(go, r, f32);
      for (i64 c = threadIdx.x; c < cols; c += blockDim.x) store1(grad + r * cols + c, load1(grad + r * cols + c) * k);
    }
    return;
  }
  const i64 h = min(n, (i64)((16 - (unsigned long long)grad % 16) % 16 / sizeof(elem_t)));
  const i64 nv = (n - h) / SV;
  for (i64 i = first; i < nv; i += step) {
    V16 w = *(const V16 *)(grad + h + i * SV);
    elem_t *e = (elem_t *)w.u;
    #pragma unroll
    for (int k = 0; k < SV; k++) store1(e + k, load1(e + k) * s);
    *(V16 *)(grad + h + i * SV) = w;
  }
  for (i64 i = first; i < n - nv * SV; i += step) {   // the head, then the tail
    const i64 e = i < h ? i : nv * SV + i;
    store1(grad + e, load1(grad + e) * s);
  }
}

% include("ce_vocab.cu")
