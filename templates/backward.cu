// backward.cu — the backward ops from the forward's output y and the gradient dy, one sum per row:
//   softmax_backward      dx = y * (dy - sum(dy * y))
//   log_softmax_backward  dx = dy - exp(y) * sum(dy)
// in float32 for every dtype. A NaN in y or dy makes its row's sum, and so the row, NaN.
// Knobs: threads, rows (R rows per block, split=1: G = threads/rows threads per row), items, vec,
//        reduce (shfl | smem), passes (1, hold=reg: a thread's y and dy vectors held in registers,
//        one read; hold=packed (f16, bf16): the same as the raw words the loads gave, half the
//        registers; 2, hold=none: a sum pass, then y and dy read again for the write; the sum pass
//        of log_softmax_backward reads dy only), split with xchg (none, or dsmem: a cluster of
//        `split` blocks per row, sm_90+, each block its part of the row, one float per block
//        swapped through distributed shared memory, one cluster barrier per row; or global with
//        hold=ring, sm_90+: a persistent cooperative grid, `split` blocks per row, each bulk-copying
//        its part of y and of dy into a ring of DEPTH stages in shared memory and posting its sum
//        to a workspace in global memory, as split.cu's ring; its pieces are ring.cu's), hint
//        (stream: the last read of each line and every store evict-first; keep, passes=2: as
//        stream, and the sum pass's loads evict-last in L2, so the second pass finds them).
// Regime: split=1 passes=1: rows that fit a group's registers (up to 32 values of y and dy a
//         thread, 64 packed); split=1 passes=2: long rows, a block each; split>1: few rows or
//         long ones (32x16384, 2048x128256), a row spread over a cluster (passes=2 where even the
//         cluster's registers cannot hold it); hold=ring: long rows that not even a cluster
//         holds (y and dy 256 KB a row and more: 256x1048576, 2048x128256), read from DRAM once.
% team = split > 1 and threads or G
% include("common.cu")
#define R $(R)
#define S $(split)

// One element's term of the row's sum, and its output from the row's sum s.
% if op == "softmax_backward" then
__device__ __forceinline__ float term(float y, float d) { return d * y; }
__device__ __forceinline__ float grad(float y, float d, float s) { return y * (d - s); }
% else
__device__ __forceinline__ float term(float y, float d) { return d; }
// y <= 0 is a log-probability: exp(y) needs no max; y = -inf gives 0
__device__ __forceinline__ float grad(float y, float d, float s) { return d - ex2(y * LOG2E) * s; }
% end

template <int N>
__device__ __forceinline__ float terms(const float *vy, const float *vd)
{
  if constexpr (N == 0) return 0.f;
  else {
    float t[N];
    #pragma unroll
    for (int i = 0; i < N; i++) t[i] = term(vy[i], vd[i]);
    return tree<N>(t, OpSum());
  }
}

template <int N>
__device__ __forceinline__ void grads(float *vy, const float *vd, float s)
{
  #pragma unroll
  for (int i = 0; i < N; i++) vy[i] = grad(vy[i], vd[i], s);
}

// This thread's edge elements of y and dy (as edge_load: slot i is edge i*TEAM + lane), 0 where
// there is none, which adds nothing to the sum.
__device__ __forceinline__ void edges2(const elem_t *y, const elem_t *d, Geo g, int lane, bool live, float *ey, float *ed)
{
  #pragma unroll
  for (int i = 0; i < EDGE; i++) {
    const int k = i * TEAM + lane;
    const bool in = live && k < g.h + g.t;
    ey[i] = in ? load1(y + edge_pos(g, k)) : 0.f;
    ed[i] = in ? load1(d + edge_pos(g, k)) : 0.f;
  }
}

// ITEMS vectors of y and of dy from body vector `base` (load_step's layout), 0 past `end`.
template <bool FINAL>
__device__ __forceinline__ void load2(const elem_t *yb, const elem_t *db, int base, int end, int lane, bool live, float *vy,
                                      float *vd)
{
  load_vectors<VEC>(base, end, lane, live, vy, 0.f, [&](int j, float *f) { ldv<false, FINAL>(yb + (i64)j * VEC, f); });
  load_vectors<VEC>(base, end, lane, live, vd, 0.f, [&](int j, float *f) { ldv<false, FINAL>(db + (i64)j * VEC, f); });
}

// passes=2: the thread's share of the sum over body vectors [begin, end), ITEMS vectors a step.
__device__ __forceinline__ float stream_sum(const elem_t *yb, const elem_t *db, int begin, int end, int lane, bool live)
{
  float a = 0.f;
  for (int base = begin; base < end; base += ITEMS * TEAM) {
    float vd[ITEMS * VEC];
% if op == "softmax_backward" then
    float vy[ITEMS * VEC];
    load2<false>(yb, db, base, end, lane, live, vy, vd);
    a += terms<ITEMS * VEC>(vy, vd);
% else
    load_vectors<VEC>(base, end, lane, live, vd, 0.f, [&](int j, float *f) { ldv<false, false>(db + (i64)j * VEC, f); });
    a += tree<ITEMS * VEC>(vd, OpSum());
% end
  }
  return a;
}

// passes=2: body vectors [begin, end) read again and written out.
__device__ __forceinline__ void stream_out(const elem_t *yb, const elem_t *db, elem_t *xb, int begin, int end, int lane,
                                          bool live, float s)
{
  for (int base = begin; base < end; base += ITEMS * TEAM) {
    float vy[ITEMS * VEC], vd[ITEMS * VEC];
    load2<true>(yb, db, base, end, lane, live, vy, vd);
    grads<ITEMS * VEC>(vy, vd, s);
    store_step(xb, base, end, lane, live, vy);
  }
}

% if hold == "packed" then
// hold=packed: ITEMS vectors of y and of dy from body vector `base` as raw words (0 past `end`,
// which adds nothing to the sum).
__device__ __forceinline__ void load_words(const elem_t *yb, const elem_t *db, int base, int end, int lane, bool live,
                                           u32 *wy, u32 *wd)
{
  load_vectors<NW>(base, end, lane, live, wy, 0u, [&](int j, u32 *w) { ldw<false, true>(yb + (i64)j * VEC, w); });
  load_vectors<NW>(base, end, lane, live, wd, 0u, [&](int j, u32 *w) { ldw<false, true>(db + (i64)j * VEC, w); });
}

// The terms of HELD word pairs, unpacked one word at a time.
__device__ __forceinline__ float word_terms(const u32 *wy, const u32 *wd)
{
  float t[HELD];
  #pragma unroll
  for (int i = 0; i < HELD; i++) {
    float fy[PER_WORD], fd[PER_WORD];
    unpack(wy[i], fy);
    unpack(wd[i], fd);
    t[i] = terms<PER_WORD>(fy, fd);
  }
  return tree<HELD>(t, OpSum());
}

// dx of the held vectors [begin, end) from the row's sum s, the words unpacked anew (unpack_again).
__device__ __forceinline__ void word_out(elem_t *xb, int begin, int end, int lane, bool live, const u32 *wy,
                                         const u32 *wd, float s)
{
  store_words(xb, begin, end, lane, live, [&](int n) {
    float fy[PER_WORD], fd[PER_WORD];
    unpack_again(wy[n], fy);
    unpack_again(wd[n], fd);
    grads<PER_WORD>(fy, fd, s);
    return pack(fy);
  });
}

% end
// One row's part: body vectors [begin, end) and (edges) the row's head and tail, at y, dy, dx.
// reduce(t) turns a thread's share of the sum into the row's.
template <class Reduce>
__device__ __forceinline__ void row_part(const elem_t *y, const elem_t *d, elem_t *dx, Geo g, int begin, int end, int lane,
                                         bool live, bool edges, Reduce reduce)
{
  float ey[EDGE_SLOTS], ed[EDGE_SLOTS];
  edges2(y, d, g, lane, live && edges, ey, ed);
% if hold == "packed" then
  u32 wy[HELD], wd[HELD];
  load_words(y + g.h, d + g.h, begin, end, lane, live, wy, wd);
  const float s = reduce(word_terms(wy, wd) + terms<EDGE>(ey, ed));
  word_out(dx + g.h, begin, end, lane, live, wy, wd, s);
% elseif passes == 1 then
  float vy[ITEMS * VEC], vd[ITEMS * VEC];
  load2<true>(y + g.h, d + g.h, begin, end, lane, live, vy, vd);
  const float s = reduce(terms<ITEMS * VEC>(vy, vd) + terms<EDGE>(ey, ed));
  grads<ITEMS * VEC>(vy, vd, s);
  store_step(dx + g.h, begin, end, lane, live, vy);
% else
  const float s = reduce(stream_sum(y + g.h, d + g.h, begin, end, lane, live) + terms<EDGE>(ey, ed));
  stream_out(y + g.h, d + g.h, dx + g.h, begin, end, lane, live, s);
% end
  grads<EDGE>(ey, ed, s);
  edge_store(dx, g, lane, live && edges, ey);
}
% if xchg == "dsmem" then
% include("cluster.cu")
% elseif hold == "ring" then
% include("ring.cu")

% ring_barriers("cta")
% ring_words()

% ring_fold()

// hold=ring: split.cu's ring with two inputs. A stage holds the block's part of y, then its part
// of dy (two bulk copies on the stage's `full` barrier); or, YDIRECT (f32 log_softmax_backward,
// whose sum is over dy alone, where the pair leaves few stages), its part of dy, so twice the
// stages fit, and the finishers read y from global memory, in flight while they wait for the
// row's sums. NR reducer warps sum the part's terms and post the block's sum; the other warps
// fold the row's sums and write dx.
% -- EARLY (3 stages of a pair: a part at most a sixth of the block's shared memory, so 4 vectors
% -- of y and 4 of dy a finisher): a finisher copies its vectors of the stage into registers and
% -- frees the stage before it waits for the row's sums
% ring_defs()
%   if YDIRECT or EARLY then
#define YV ((RV + NF * 32 - 1) / (NF * 32))   // a finisher's vectors of a part, at most
%   end
% ring_tail()
// The term()s of the stage's vectors r, r + NR*32, ... below n (a reducer's share), y's at st and
// dy's at sd, added to a (log_softmax_backward's terms are dy alone: y is not read).
__device__ __forceinline__ float stage_sum(const elem_t *st, const elem_t *sd, int r, int n, float a)
{
  for (int v = r; v < n; v += NR * 32) {
    float fd[VEC];
    ldv<true, false>(sd + v * VEC, fd);
% if op == "softmax_backward" then
    float fy[VEC];
    ldv<true, false>(st + v * VEC, fy);
    a += terms<VEC>(fy, fd);
% else
    a += tree<VEC>(fd, OpSum());
% end
  }
  return a;
}
% end

% -- the ring: blocks per SM as its stages' share of shared memory allows (without it NVRTC's ptxas
% -- settles on 32 registers and spills in some f32 configs)
extern "C" __global__ void __launch_bounds__($(threads)$(hold == "ring" and ", " .. 1024 // threads or ""))
$(kernel)(const elem_t *yin, const elem_t *dyin, elem_t *dxout, i64 rows, i64 cols, void *ws)
{
% if split == 1 then
  const int lane = threadIdx.x % $(G), grp = threadIdx.x / $(G);
  const i64 nblocks = (rows + R - 1) / R;
  for (i64 blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
    const i64 row = blk * R + grp;
    const bool live = row < rows;   // dead groups still take part in the block's barriers
    const i64 at = (live ? row : 0) * COLS;
    const Geo g = geometry(yin + at, COLS);
    row_part(yin + at, dyin + at, dxout + at, g, 0, g.nv, lane, live, true,
             [&](float t) { return group_reduce(t, OpSum()); });
  }
% elseif hold == "ring" then
  const u32 rank = blockIdx.x % S;   // the block's part of each row
  const bool edges = rank == 0;      // block 0 also owns the row's unaligned head and tail
  const i64 ngroups = gridDim.x / S;
% ring_groups()
% ring_setup()
% ring_loader()
%   -- ring_loader() ends in a reducer's loop at row s's stage st; ring_handover() posts the
%   -- block's sum t and goes on into a finisher's loop, up to row j's sum `all`
      float t = edges && r < 32 ? term(edge_in(x, g, r), edge_in(dyin + (x - yin), g, r)) : 0.f;
      t = stage_sum(st, st$(YDIRECT and "" or " + RV * VEC"), r, end - begin, t);
%   local function row_start()
%     if EARLY then ring_take("YV") end
%     if YDIRECT then
      float py[YV][VEC];   // y of this thread's vectors of the part
      #pragma unroll
      for (int i = 0; i < YV; i++)
        if (q + i * NF * 32 < end - begin) ldv<false, true>(x + g.h + (i64)(begin + q + i * NF * 32) * VEC, py[i]);
%     end
%   end
% ring_handover(row_start)
      const i64 at = x - yin;
      if (edges && q < g.h + g.t)   // read again: dx may be y or dy
        store1(dxout + at + edge_pos(g, q), grad(edge_in(x, g, q), edge_in(dyin + at, g, q), all));
%   if not EARLY then
      bar_wait(&full[j % DEPTH], (u32)(j / DEPTH) & 1);   // the copies' bytes, seen by this thread too
      const elem_t *st = stage(j);
%   end
      elem_t *xb = dxout + at + g.h + (i64)begin * VEC;
%   if EARLY then
      #pragma unroll
      for (int i = 0; i < YV; i++) {
        const int v = q + i * NF * 32;
        if (v < end - begin) {
          float fy[VEC], fd[VEC];
          #pragma unroll
          for (int w = 0; w < NW; w++) unpack(wy[i][w], fy + w * PER_WORD), unpack(wd[i][w], fd + w * PER_WORD);
          grads<VEC>(fy, fd, all);
          stv<false>(xb + (i64)v * VEC, fy);
        }
      }
%   elseif not YDIRECT then
      for (int v = q; v < end - begin; v += NF * 32) {
        float fy[VEC], fd[VEC];
        ldv<true, false>(st + v * VEC, fy);
        ldv<true, false>(st + (RV + v) * VEC, fd);
        grads<VEC>(fy, fd, all);
        stv<false>(xb + (i64)v * VEC, fy);
      }
%   else
      #pragma unroll
      for (int i = 0; i < YV; i++) {
        const int v = q + i * NF * 32;
        if (v < end - begin) {
          float fd[VEC];
          ldv<true, false>(st + v * VEC, fd);
          grads<VEC>(py[i], fd, all);
          stv<false>(xb + (i64)v * VEC, py[i]);
        }
      }
%   end
%   if not EARLY then   -- EARLY freed the stage when the row began
      __syncwarp();
      if (lane32 == 0) bar_arrive(&empty[j % DEPTH]);
%   end
    }
  }
% ring_depart()
% else
  // a cluster's blocks are consecutive: rank is the block's part; block 0 also owns the edges.
  // Sums are double-buffered by row parity: a block writes row k+2's slot only after the
  // barrier of row k+1, which every block passes only once it has read row k's.
  const u32 rank = blockIdx.x % S;
  const i64 ngroups = gridDim.x / S;
  __shared__ float slot[2];
  int k = 0;
  for (i64 row = blockIdx.x / S; row < rows; row += ngroups, k++) {
    const i64 at = row * COLS;
    const Geo g = geometry(yin + at, COLS);
    const int begin = min((int)rank * CV, g.nv), end = min(begin + CV, g.nv);
    row_part(yin + at, dyin + at, dxout + at, g, begin, end, threadIdx.x, true, rank == 0, [&](float t) {
      t = group_reduce(t, OpSum());
      if (threadIdx.x == 0) slot[k & 1] = t;
      cluster_sync();
      return cluster_sum(&slot[k & 1]);
    });
  }
  cluster_sync();   // no block leaves while another may still read its slots
% end
}
