// ce.cu — cross-entropy over rows of logits z (softcapped first when asked) with a label per row:
//   lse = log(sum exp(z)), p = exp(z - lse), W the label's class weight (1 without weights),
//   loss = (1 - eps) W (lse - z[y]) + eps (lse - mean(z)) + zl lse^2,
//   dz   = scale ((1 - eps) W + eps + 2 zl lse) p - scale eps / cols - scale (1 - eps) W [j == y],
// and dx = dz (1 - (z / cap)^2) under a softcap. op cross_entropy writes loss, lse and dx (the
// logits read once, the gradient written once); cross_entropy_loss writes loss and lse only.
// Rows labelled ignore_index get loss 0 and dx 0; a label outside [0, cols) gets a NaN loss, dx 0
// and sets the flag. Options are launch arguments (CeParams, ce_params.h); eps with weights is
// refused by the callers. A module holds one entry point: st_cross_entropy, or st_cross_entropy_cap
// (capped: the softcap's row loop). The steps around it (the mean's count, the reduced loss, the
// backward's scale) are a module of their own, one a dtype: ce_steps.cu.
// Knobs: threads, rows (split=1: a group of G = threads/rows threads per row), items, vec, reduce,
//        hint, passes (1: the row held in registers, hold=reg as floats or hold=packed as 16-bit
//        words; 2: hold=none, statistics in one read, outputs in a second), split (> 1: a cluster
//        of `split` blocks per row, xchg=dsmem, each holding a part; every warp posts its (max, sum,
//        sum of z) to every block by remote stores on an mbarrier, as split.cu's pairs: no
//        block-wide reduction and no cluster barrier a row).
// Regime: a group's registers (short rows), a block's, a cluster's (up to 16 blocks: 256000 bf16
//         columns), and two reads beyond them or without clusters (before sm_90).
// 16-bit logits' softcap stays in softcap.cu's r (RCAP): exp(z - m) one FMA from r, 1 - t^2 =
// 4 r (1 - r). A softcap's gradient over a row held as floats (hold=reg) keeps r (16-bit) or z
// (float32) in their place after the statistics' tanh: the gradient pass computes none (held_cap).
% team = split > 1 and threads or G
% include("common.cu")
% include("ce_params.h")
% include("softcap.cu")
% local LOSS_ONLY = op == "cross_entropy_loss"
#define R $(R)
#define S $(split)

// A row segment's statistics: max m of z, s = sum(exp(z - m)), and t = sum(z) (for smoothing).
struct MST { float m, s, t; };

__device__ __forceinline__ MST combine3(MST a, MST b)
{
  const MS p = combine(MS{ a.m, a.s }, MS{ b.m, b.s });
  return MST{ p.m, p.s, a.t + b.t };
}
struct OpMST { __device__ MST operator()(MST a, MST b) const { return combine3(a, b); } };
__device__ __forceinline__ MST shfl_x(MST v, int o) { return MST{ shfl_x(v.m, o), shfl_x(v.s, o), shfl_x(v.t, o) }; }
__device__ __forceinline__ MST shfl_0(MST v) { return MST{ shfl_0(v.m), shfl_0(v.s), shfl_0(v.t) }; }

// CAP: a softcap is on (the kernel runs its rows through one of two instances of the row loop,
// so no element pays for a branch on it).
template <bool CAP> __device__ __forceinline__ float capz(float x, float cap, float icap) { return CAP ? cap * tanh_cap(x * icap) : x; }

// The exponent of exp(z - m) in log2 units from r (cap_r's, k = 2 log2e / cap): its FMA's terms.
struct Ex { float k, a, b; };
__device__ __forceinline__ Ex ex_of(float cap, float icap, float m)
{
  return Ex{ 2.f * LOG2E * icap, -2.f * LOG2E * cap, (cap - m) * LOG2E };
}

% -- 16-bit logits' softcap kept in softcap.cu's r: 4 float ops an element fewer in the
% -- statistics, 7 in the gradient (float32 keeps tanhf, and z)
% local RCAP = dtype ~= "f32"
% -- a gradient's row held as floats keeps r (RCAP) or z in their place: its pass then pays no
% -- second tanh
% local ZHELD = hold == "reg" and not LOSS_ONLY
% -- the loss-only kernel's r by softcap.cu's cap_rs (MUFU binds it: 7-14% on logits under the cap,
% -- H200); the gradient's kernels, short of issue slots as much, gained 2% at most and lost up to 11%
% local RPOLY = RCAP and LOSS_ONLY
// z of value v of a row: a logit x, or (Z) what held_cap made of it: r (RCAP) or z.
template <bool CAP, bool Z>
__device__ __forceinline__ float z_of(float v, float cap, float icap)
{
% if RCAP then
  if (CAP && Z) return fmaf(-2.f * cap, v, cap);
% end
  return capz<CAP && !Z>(v, cap, icap);
}
% if ZHELD then

// The held values softcapped in place, as r or z (slots past the part: -inf becomes r = 1, z =
// -cap; body_stats skips them).
template <bool CAP>
__device__ __forceinline__ void held_cap(float *v, float cap, float icap)
{
  #pragma unroll
  for (int k = 0; k < ITEMS * VEC; k++) {
% if RCAP then
    v[k] = CAP ? cap_r(v[k], 2.f * LOG2E * icap) : v[k];
% else
    v[k] = capz<CAP>(v[k], cap, icap);
% end
  }
}
% end

// What a row's outputs need, once its statistics are in.
struct Row {
  float lse, a, c, b;   // dz = a p - c - b [j == y], scale folded in
  float l0;             // the loss without the label's term: eps (lse - mean z) + zloss lse^2
  int y;                // the label's column, -1 when there is none (ignored or bad)
  float cap, icap;
};

// Row's label as a column: -1 ignored, -2 outside [0, COLS) (a bad label).
__device__ __forceinline__ int label_col(const CeParams &p, const void *labels, i64 row)
{
  const i64 y = label_of(p, labels, row);
  return y == p.ignore ? -1 : y < 0 || y >= COLS ? -2 : (int)y;
}

// The loss of a valid label y from its softcapped logit zy.
__device__ __forceinline__ float label_loss(const CeParams &p, const Row &r, float zy)
{
  const float wl = (1.f - p.smoothing) * (p.weight ? ((const float *)p.weight)[r.y] : 1.f);   // not held in Row
  return wl * (r.lse - zy) + r.l0;
}

// The row's scalars from its statistics, its label's column y (label_col) and the mean's factor,
// both loaded by rows_of before the statistics were in, so that their latency hides under the
// row's loads and exchange; `lead`, the one thread of the row that writes them, writes lse and
// the loss, the label's logit read again from x (a cached load). With a gradient
// it does so only for a label in the unaligned head or tail, which its own warp holds and has
// not stored yet (rows_of's __syncwarp); a body label's loss comes from the thread holding its
// logit (label_grad): in place, another block or warp may already have stored over it here.
template <bool CAP>
__device__ __forceinline__ Row row_of(const CeParams &p, int y, float scale, const elem_t *x, i64 row, MST all, bool lead,
                                      Geo g, float *loss, float *lse)
{
  Row r;
  r.cap = p.softcap;
  r.icap = p.softcap > 0.f ? 1.f / p.softcap : 0.f;
  r.lse = all.m + logf(all.s);
  const bool bad = y == -2;
  const float w = y < 0 ? 0.f : p.weight ? ((const float *)p.weight)[y] : 1.f;
  const float eps = p.smoothing;
  r.y = y < 0 ? -1 : y;
  r.b = scale * ((1.f - eps) * w);
  r.c = r.y < 0 ? 0.f : scale * eps / COLS;
  r.a = r.y < 0 ? 0.f : r.b + scale * (eps + 2.f * p.zloss * r.lse);
  r.l0 = eps * (r.lse - all.t / COLS) + p.zloss * r.lse * r.lse;
  if (lead) {
    lse[row] = r.lse;
% if LOSS_ONLY then
    const bool here = true;
    (void)g;
% else
    const bool here = r.y < g.h || r.y >= g.h + g.nv * VEC;
% end
    if (r.y >= 0 && here) loss[row] = label_loss(p, r, capz<CAP>(load1(x + r.y), r.cap, r.icap));
    if (r.y < 0) loss[row] = bad ? __int_as_float(0x7fc00000) : 0.f;
    if (bad && p.flag) *(volatile int *)p.flag = 1;   // a plain store: the flag may be mapped host memory
  }
  return r;
}

// dx of one element of logit x (Z: of held_cap's r or z); label: it is the label's column. One
// FMA for a p - c (- b).
template <bool CAP, bool Z = false>
__device__ __forceinline__ float grad(const Row &r, float x, bool label)
{
% if RCAP then
  if (CAP) {   // (a p - c) 4 r (1 - r)
    const Ex c = ex_of(r.cap, r.icap, r.lse);
    const float q = Z ? x : cap_r(x, c.k);
    return fmaf(4.f * r.a, ex2(fmaf(q, c.a, c.b)), label ? -4.f * (r.c + r.b) : -4.f * r.c) * fmaf(-q, q, q);
  }
% end
  const float z = capz<CAP && !Z>(x, r.cap, r.icap);
  float g = fmaf(r.a, ex_finite(z, r.lse), label ? -r.c - r.b : -r.c);
  if (CAP) g *= 1.f - z * r.icap * (z * r.icap);
  return g;
}

// Each held vector (slot i, body vector j, in the row, its VEC values) to f; words unpacked.
template <class H, class F>
__device__ __forceinline__ void each_vector(const H *v, int begin, int end, int lane, bool live, F f)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = begin + i * TEAM + lane;
    float x[VEC];
% if words then
    #pragma unroll
    for (int q = 0; q < NW; q++) unpack(opaque(v[i * NW + q]), x + q * PER_WORD);
% else
    #pragma unroll
    for (int k = 0; k < VEC; k++) x[k] = v[i * VEC + k];
% end
    f(i, j, live && j < end, x);
  }
}

// The largest held value, slots past the part included (they hold -inf).
__device__ __forceinline__ float raw_max(const float *v) { return max_of<ITEMS * VEC>(v, NEG_INF); }
% if ZHELD and RCAP then
// The largest of the negated held values (held_cap's r: minus their least).
__device__ __forceinline__ float raw_max_neg(const float *v)
{
  float m = NEG_INF;
  #pragma unroll
  for (int k = 0; k < ITEMS * VEC; k++) m = fmaxf(m, -v[k]);
  return m;
}
% end
% if words then
__device__ __forceinline__ float raw_max(const u32 *w)
{
  u32 mw = NEG_WORD;
  #pragma unroll
  for (int i = 0; i < ITEMS * NW; i++) mw = max2(mw, w[i]);
  float f[PER_WORD];
  unpack(mw, f);
  return max_of<PER_WORD>(f, NEG_INF);
}
% end

// A thread's statistics over its body vectors [begin, end) folded into a: the max first (of the
// raw words, by max2; a softcap is increasing, so it caps their max alone: one tanh an element
// less), then the sums, a vector's exps by a tree. Without a softcap, slots past the part (-inf)
// add exp(-inf) = 0; with one (capped, -inf is -cap), they are skipped. Z: v holds r (RCAP; z
// falls as r grows, so its max is of their least) or z already.
template <bool CAP, bool Z = false, class H>
__device__ __forceinline__ MST body_stats(const H *v, int begin, int end, int lane, bool live, float cap, float icap,
                                          bool smooth, MST a)
{
% if ZHELD and RCAP then
  const float xm = CAP && Z ? -raw_max_neg(v) : raw_max(v);
% else
  const float xm = raw_max(v);
% end
  const float m = xm == NEG_INF ? a.m : fmaxf(a.m, z_of<CAP, Z>(xm, cap, icap));
  if (m == NEG_INF) return a;   // nothing here but -inf: a is as it was
  float s = a.s * ex(a.m, m), t = a.t;
% if RCAP then
  const Ex c = ex_of(cap, icap, m);
% end
  each_vector(v, begin, end, lane, live, [&](int, int, bool in, const float *x) {
    float e[VEC], z[VEC];
% if RPOLY then
    float r[VEC];   // r of the vector by softcap.cu's cap_rs: the polynomial where the logits are under the cap
    if (CAP && !Z) cap_rs<VEC>(x, c.k, r);
% end
    #pragma unroll
    for (int k = 0; k < VEC; k++) {
% if RCAP then
      if (CAP) {
%   if RPOLY then
        const float q = Z ? x[k] : r[k];
%   else
        const float q = Z ? x[k] : cap_r(x[k], c.k);
%   end
        e[k] = !in ? 0.f : ex2(fmaf(q, c.a, c.b));
        z[k] = fmaf(-2.f * cap, q, cap);   // the sum of z alone needs it
        continue;
      }
% end
      z[k] = capz<CAP && !Z>(x[k], cap, icap);
      e[k] = CAP && !in ? 0.f : ex_finite(z[k], m);
    }
    s += tree<VEC>(e, OpSum());
    if (smooth && in) t += tree<VEC>(z, OpSum());
  });
  return MST{ m, s, t };
}

// The same over the thread's edge elements (at most a few), from nothing.
template <bool CAP>
__device__ __forceinline__ MST edge_stats(const float *e, Geo g, int lane, bool live, float cap, float icap)
{
  MST a = { NEG_INF, 0.f, 0.f };
  #pragma unroll
  for (int i = 0; i < EDGE; i++)
    if (live && i * TEAM + lane < g.h + g.t) a = combine3(a, MST{ capz<CAP>(e[i], cap, icap), 1.f, capz<CAP>(e[i], cap, icap) });
  return a;
}

// dx of the held vectors [begin, end) (or a streamed step's), written at y's body, the label's
// element without its term (label_out writes it again). Z: v holds z.
template <bool CAP, bool Z = false, class H>
__device__ __forceinline__ void held_out(const H *v, int begin, int end, int lane, bool live, const Row &r, elem_t *y, Geo g)
{
  each_vector(v, begin, end, lane, live, [&](int, int j, bool in, const float *xv) {
    float o[VEC];
    #pragma unroll
    for (int q = 0; q < VEC; q++) o[q] = grad<CAP, Z>(r, xv[q], false);
    if (in) stv<false>(y + g.h + j * VEC, o);
  });
}

// Held element e (slot e / VEC, element e % VEC) by selects, no indexed registers: floats, or
// the word that holds it, unpacked alone.
__device__ __forceinline__ float held_at(const float *v, int e)
{
  float x = 0.f;
  #pragma unroll
  for (int k = 0; k < ITEMS * VEC; k++) x = k == e ? v[k] : x;
  return x;
}
% if words then
__device__ __forceinline__ float held_at(const u32 *w, int e)
{
  u32 x = 0u;
  #pragma unroll
  for (int k = 0; k < ITEMS * NW; k++)   // selp by asm: a select chain over an index became a stack copy
    asm("{ .reg .pred p; setp.eq.s32 p, %2, %3; selp.b32 %0, %1, %0, p; }" : "+r"(x) : "r"(w[k]), "r"(k), "r"(e / PER_WORD));
  float f[PER_WORD];
  unpack(x, f);
  float r = f[0];
  #pragma unroll
  for (int k = 1; k < PER_WORD; k++)
    asm("{ .reg .pred p; setp.eq.s32 p, %2, %3; selp.f32 %0, %1, %0, p; }" : "+f"(r) : "f"(f[k]), "r"(k), "r"(e % PER_WORD));
  return r;
}
% end

// Whether column t is in a body vector among [begin, end) that this thread holds: vector
// (t - h) / VEC, each lane's every TEAM-th from begin.
__device__ __forceinline__ bool holds(i64 t, Geo g, int begin, int end, int lane, bool live)
{
  const i64 j = (t - g.h) / VEC;
  return live && t >= g.h && j >= begin && j < end && (j - begin) % TEAM == lane;
}

// The label's dx and loss, from the held vector that holds it (this thread's, if any: slot i)
// and before the row's stores: in place, the logits are the gradient once they ran. One exp, in
// the one thread that holds the label. Z: v holds z.
template <bool CAP, bool Z = false, class H>
__device__ __forceinline__ void label_grad(const H *v, int begin, int end, int lane, bool live, const CeParams &p, const Row &r,
                                           Geo g, float *loss, float &dxl)
{
  const int i = ((r.y - g.h) / VEC - begin) / TEAM;
  if (r.y < 0 || !holds(r.y, g, begin, end, lane, live) || i >= ITEMS) return;
  const float x = held_at(v, i * VEC + (r.y - g.h) % VEC);
  dxl = grad<CAP, Z>(r, x, true);
  *loss = label_loss(p, r, z_of<CAP, Z>(x, r.cap, r.icap));
}

// dxl (label_grad's) written over the label's body element by the thread whose vector held it,
// after its own first store of it; the label read again, so it holds no register through them.
__device__ __forceinline__ void label_out(const CeParams &p, const void *labels, elem_t *y, i64 row, int begin, int end,
                                          int lane, bool live, Geo g, float dxl)
{
  const int t = label_col(p, labels, row);
  if (t >= 0 && holds(t, g, begin, end, lane, live)) store1(y + t, dxl);
}

% if split > 1 then
% include("ring.cu")
% ring_barriers("cluster")   -- the posts come from the cluster's other blocks
// A row's statistics as one block's warp posts them (16 bytes: one remote vector store).
struct __align__(16) Post { float m, s, t, unused; };
#define POSTS $(threads // 32)

__device__ __forceinline__ u32 rank_of() { return blockIdx.x % S; }   // a cluster's blocks are consecutive

// This block's two post barriers set up, then until every block of the cluster has done so (no
// block may post into one whose barriers are not set up yet).
__device__ __forceinline__ void cluster_begin(u64 *got)
{
  if (threadIdx.x < 2) bar_init(&got[threadIdx.x], 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// t into `slot` of block `rank` of this cluster by a remote store that completes its 16 bytes on
// that block's barrier `got` (the same offsets in every block): no cluster barrier a row.
__device__ __forceinline__ void post_remote(Post *slot, u64 *got, u32 rank, MST t)
{
  u32 rs, rb;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rs) : "r"(smem_addr(slot)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(smem_addr(got)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];"
               :: "r"(rs), "r"(__float_as_uint(t.m)), "r"(__float_as_uint(t.s)), "r"(__float_as_uint(t.t)), "r"(0u), "r"(rb)
               : "memory");
}

// The row's statistics from every warp of every block: each warp posts its own to every block
// (lane r to block r) and waits for all S * POSTS of its block's slots, folded in one fixed order,
// so every thread of every block gets the same bits. Slots and barriers alternate by row parity k:
// a block posts row k+2 only after every warp of every block posted row k+1, which each does
// after it folded row k, so a slot is never written while it is read.
__device__ __forceinline__ MST exchange(MST t, Post (*slots)[S * POSTS], u64 *got, u32 k)
{
  // the posts may land before this expect (the tx-count runs below zero until it): the phase
  // still cannot complete without thread 0's arrival
  if (threadIdx.x == 0) bar_expect(&got[k & 1], S * POSTS * sizeof(Post));
  if (threadIdx.x % 32 < S) post_remote(&slots[k & 1][rank_of() * POSTS + threadIdx.x / 32], &got[k & 1], threadIdx.x % 32, t);
  bar_wait(&got[k & 1], (k >> 1) & 1);
  const int lane = threadIdx.x % 32;
  MST a = { NEG_INF, 0.f, 0.f };
  for (int r = lane; r < S * POSTS; r += 32) {
    const Post p = slots[k & 1][r];
    a = combine3(a, MST{ p.m, p.s, p.t });
  }
  return lanes_reduce<32>(a, OpMST());
}
% end

template <bool CAP>
__device__ __forceinline__ void rows_of(const elem_t *in, const void *labels, elem_t *out, float *loss, float *lse, i64 rows,
                                        const CeParams &p)
{
  const float cap = p.softcap, icap = CAP ? 1.f / cap : 0.f;
  const bool smooth = p.smoothing != 0.f;   // the sum of z is wanted
% if split > 1 then
  const u32 rank = rank_of();
  const int lane = threadIdx.x;
  __shared__ Post slots[2][S * POSTS];
  __shared__ __align__(8) u64 got[2];
  cluster_begin(got);
  u32 k = 0;
  for (i64 row = blockIdx.x / S; row < rows; row += gridDim.x / S, k++) {
    const bool live = true, edges = rank == 0;   // block 0 also owns the unaligned head and tail
% else
  const u32 rank = 0;
  const int lane = threadIdx.x % $(G), grp = threadIdx.x / $(G);
  const i64 nblocks = (rows + R - 1) / R;
  for (i64 blk = blockIdx.x; blk < nblocks; blk += gridDim.x) {
    const i64 row = blk * R + grp;
    const bool live = row < rows, edges = live;   // dead groups still take part in the barriers
% end
    const int label = label_col(p, labels, live ? row : 0);
    const elem_t *x = in + (live ? row : 0) * p.stride;
    elem_t *y = out + (live ? row : 0) * COLS;
    const Geo g = geometry(x, COLS);
    const bool lead = live && rank == 0 && lane == 0;
    int begin = 0, end = g.nv;
% if split > 1 then
    begin = (int)(rank * CV), end = min(g.nv, begin + CV);
% end
    float e[EDGE_SLOTS];
    edge_load(x, g, lane, edges, e);
    MST mine = edge_stats<CAP>(e, g, lane, edges, cap, icap);
% if hold ~= "none" then
    held_t v[HELD];
    hold_load<true>(x + g.h, begin, end, lane, live, v);
%   if ZHELD then
    held_cap<CAP>(v, cap, icap);
%   end
    mine = body_stats<CAP, $(ZHELD)>(v, begin, end, lane, live, cap, icap, smooth, mine);
% else
    for (int base = begin; base < end; base += ITEMS * TEAM) {
      float v[ITEMS * VEC];
      load_step<false, false>(x + g.h, base, end, lane, live, v);
      mine = body_stats<CAP>(v, base, end, lane, live, cap, icap, smooth, mine);
    }
% end
    // the mean's factor, its latency under the exchange's; loaded a row (a cached load), as held
    // from the kernel's start it spilled 8-16 bytes on the winners at the register cap
    const float scale = p.scale ? *(const float *)p.scale : 1.f;
% if split > 1 then
    const MST all = exchange(warp_reduce(mine, OpMST()), slots, got, k);
% else
    const MST all = group_reduce(mine, OpMST());
% end
    const Row r = row_of<CAP>(p, label, scale, x, live ? row : 0, all, lead, g, loss, lse);
% if not LOSS_ONLY then
    __syncwarp();   // the lead's load of an edge label before its warp's lanes store the edges
    #pragma unroll
    for (int i = 0; i < EDGE; i++) {
      const int k = i * TEAM + lane, col = edge_pos(g, k);
      if (edges && k < g.h + g.t) store1(y + col, grad<CAP>(r, e[i], col == r.y));
    }
% end
% if LOSS_ONLY then
    (void)y;
% else
    float dxl = 0.f;
%   if hold == "none" then
    for (int base = begin; base < end; base += ITEMS * TEAM) {
      float v[ITEMS * VEC];
      load_step<false, true>(x + g.h, base, end, lane, live, v);
      label_grad<CAP>(v, base, end, lane, live, p, r, g, loss + row, dxl);
      held_out<CAP>(v, base, end, lane, live, r, y, g);
    }
%   else
    label_grad<CAP, $(ZHELD)>(v, begin, end, lane, live, p, r, g, loss + row, dxl);
    held_out<CAP, $(ZHELD)>(v, begin, end, lane, live, r, y, g);
%   end
    label_out(p, labels, y, live ? row : 0, begin, end, lane, live, g, dxl);
% end
  }
  // no block leaves while a post may still come: every block of a cluster takes the same rows,
  // and each waited for all of its last row's posts
}

// One entry point a module: $(kernel), the row loop with a softcap when `capped` (whose tanh takes
// registers the other need not give up: one kernel holding both spilled, and compiling both cost
// twice a kernel's time in every tuning trial). The register cap (minb blocks a SM) is the plain
// one's alone: the softcap instance's tanhf (float32) spilled under it. A 16-bit softcap's kernel
// has a cap of its own (capminb, space_ce.lua): a gradient's two reads of steps of 16 elements or
// fewer at 64 registers, as the plain kernel takes (unbounded, r's gradient took 79-81: a block a
// SM fewer; longer steps took as many as before), rows held as floats (r held) at their values +
// 32 (unbounded, 128 threads of 64 values took 134 against 96 with z held).
% local mb = capped and capminb or minb
extern "C" __global__ void __launch_bounds__($(threads)$(mb > 1 and ", " .. mb or ""))
$(kernel)(const elem_t *in, const void *labels, elem_t *out, float *loss, float *lse, i64 rows, void *ws, CeParams p)
{
  rows_of<$(capped)>(in, labels, out, loss, lse, rows, p);
}
