// common.cu — what the softmax families share: vector loads and stores, the (max, sum) pair,
// reductions over a team of threads (warp shuffle with one cross-warp step, or a
// shared-memory tree), and the per-segment steps (load a held segment, online statistics,
// normalize). A family sets `team` (threads sharing one row segment) before including it.
// Knobs used: dtype, vec, items, reduce, hint, G (threads per row group), team.
% include("types.cu")
% local NW = VB // 4                                   -- 32-bit words per vector access
% EDGE = vec > 1 and (2 * vec - 2 + team - 1) // team or 0

#define VEC $(vec)
#define ITEMS $(items)
#define TEAM $(team)
#define EDGE $(EDGE)
// A split row's share: the vectors a block of a row of n elements takes (S, the blocks a row, is
// the split families'), and that of this kernel's width.
#define CV_OF(n) ((int)(((n) / VEC + S - 1) / S))
#define CV CV_OF(COLS)

// A row: h scalar elements up to the first $(VB)-byte boundary, nv vectors, t scalars after.
// Output rows must share the input rows' alignment mod $(VB) bytes.
struct Geo { int h, nv, t; };

__device__ __forceinline__ Geo geometry(const elem_t *x, i64 n)
{
  Geo g;
% if vec > 1 then
  g.h = (int)(($(VB) - (u64)x % $(VB)) % $(VB) / $(es));
  if (g.h > n) g.h = (int)n;
% else
  g.h = 0;
% end
  g.nv = (int)((n - g.h) / VEC);
  g.t = (int)(n - g.h - (i64)g.nv * VEC);
  return g;
}

% if NW == 0 then
template <bool SH, bool FINAL> __device__ __forceinline__ void ldv(const elem_t *p, float *f) { f[0] = load1(p); }
template <bool SH> __device__ __forceinline__ void stv(elem_t *p, const float *f) { store1(p, f[0]); }
% else
%   local sfx = ({ [1] = ".u32", [2] = ".v2.u32", [4] = ".v4.u32" })[NW]
%   local ops, outs, ins = {}, {}, {}
%   for i = 0, NW - 1 do
%     ops[#ops + 1] = "%" .. i
%     outs[#outs + 1] = '"=r"(w[' .. i .. '])'
%     ins[#ins + 1] = '"r"(w[' .. i .. '])'
%   end
%   local list = NW == 1 and ops[1] or "{" .. table.concat(ops, ",") .. "}"
%   local slist = NW == 1 and "%1" or "{" .. table.concat(ops, ","):gsub("%d", function(d) return tostring(d + 1) end) .. "}"
%   outs, ins = table.concat(outs, ", "), table.concat(ins, ", ")
%   if dtype == "f32" then
__device__ __forceinline__ void unpack(u32 w, float *f) { f[0] = __uint_as_float(w); }
__device__ __forceinline__ u32 pack(const float *f) { return __float_as_uint(f[0]); }
%   elseif dtype == "bf16" then
__device__ __forceinline__ void unpack(u32 w, float *f)
{
  f[0] = __uint_as_float(w << 16);
  f[1] = __uint_as_float(w & 0xffff0000u);
}
%     if has.bf16 then
__device__ __forceinline__ u32 pack(const float *f)
{
  u32 w;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(f[1]), "f"(f[0]));
  return w;
}
%     else
__device__ __forceinline__ u32 pack(const float *f) { return bf16_bits(f[0]) | bf16_bits(f[1]) << 16; }
%     end
%   else
__device__ __forceinline__ void unpack(u32 w, float *f)
{
  asm("{ .reg .f16 lo, hi; mov.b32 {lo, hi}, %2; cvt.f32.f16 %0, lo; cvt.f32.f16 %1, hi; }"
      : "=f"(f[0]), "=f"(f[1]) : "r"(w));
}
__device__ __forceinline__ u32 pack(const float *f)
{
  u32 w;
%     if has.bf16 then
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(f[1]), "f"(f[0]));
%     else
  asm("{ .reg .f16 lo, hi; cvt.rn.f16.f32 lo, %1; cvt.rn.f16.f32 hi, %2; mov.b32 %0, {lo, hi}; }"
      : "=r"(w) : "f"(f[0]), "f"(f[1]));   // no f16x2 conversion before sm_80
%     end
  return w;
}
%   end
#define PER_WORD $(4 // es)

#define NW $(NW)

// One $(VB)-byte access of NW raw words, global (SH false) or into the shared-memory stage (SH
// true: by its 32-bit shared address, no generic address to form and translate); FINAL marks
// the last read of the data (cache operator "$(ld_final)"). volatile keeps loads and stores in
// program order: in == out is allowed.
%   if hint == "keep" then
// An L2 policy that keeps the lines a load brings in ahead of others (evict-last).
__device__ __forceinline__ u64 keep_policy()
{
  u64 p;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
%   end
template <bool SH, bool FINAL>
__device__ __forceinline__ void ldw(const elem_t *p, u32 *w)
{
  if (SH) asm volatile("ld.shared$(sfx) $(list), [%$(NW)];" : $(outs) : "r"((u32)__cvta_generic_to_shared(p)));
  else if (FINAL) asm volatile("ld.global$(ld_final)$(sfx) $(list), [%$(NW)];" : $(outs) : "l"(p));
%   if hint == "keep" then
  else asm volatile("ld.global.L2::cache_hint$(sfx) $(list), [%$(NW)], %$(NW + 1);" : $(outs) : "l"(p), "l"(keep_policy()));
%   else
  else asm volatile("ld.global$(sfx) $(list), [%$(NW)];" : $(outs) : "l"(p));
%   end
}

template <bool SH>
__device__ __forceinline__ void stw(elem_t *p, const u32 *w)
{
  if (SH) asm volatile("st.shared$(sfx) [%0], $(slist);" :: "r"((u32)__cvta_generic_to_shared(p)), $(ins) : "memory");
  else asm volatile("st.global$(st_op)$(sfx) [%0], $(slist);" :: "l"(p), $(ins) : "memory");
}

template <bool SH, bool FINAL>
__device__ __forceinline__ void ldv(const elem_t *p, float *f)
{
  u32 w[NW];
  ldw<SH, FINAL>(p, w);
  #pragma unroll
  for (int i = 0; i < NW; i++) unpack(w[i], f + i * PER_WORD);
}

template <bool SH>
__device__ __forceinline__ void stv(elem_t *p, const float *f)
{
  u32 w[NW];
  #pragma unroll
  for (int i = 0; i < NW; i++) w[i] = pack(f + i * PER_WORD);
  stw<SH>(p, w);
}
% end

% if es == 2 and NW > 0 then
#define NEG_WORD $(dtype == "bf16" and "0xff80ff80u" or "0xfc00fc00u")   // two -inf

// Lane-wise max of two words of 16-bit pairs (a NaN loses, as with fmaxf: the sum keeps it).
__device__ __forceinline__ u32 max2(u32 a, u32 b)
{
%   if has.bf16 then
  u32 r;
  asm("max.$(dtype == "bf16" and "bf16" or "f16")x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
%   else
  float x[2], y[2];   // no 16-bit pair max before sm_80: as floats (a max of two words is exact)
  unpack(a, x);
  unpack(b, y);
  x[0] = fmaxf(x[0], y[0]);
  x[1] = fmaxf(x[1], y[1]);
  return pack(x);
%   end
}

% end
// The softmax of a segment is summed up by its max m and s = sum(exp(x - m)).
struct MS { float m, s; };

// One exp: the pair with the larger max keeps its sum as it is. Both -inf: ex() gives 0, so the
// sum stays 0; a NaN sum stays NaN either way.
__device__ __forceinline__ MS combine(MS a, MS b)
{
  MS r;
  const bool ahead = a.m >= b.m;
  r.m = ahead ? a.m : b.m;
  r.s = ahead ? a.s + b.s * ex(b.m, a.m) : b.s + a.s * ex(a.m, b.m);
  return r;
}

struct OpMax { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct OpSum { __device__ float operator()(float a, float b) const { return a + b; } };
struct OpMS { __device__ MS operator()(MS a, MS b) const { return combine(a, b); } };

__device__ __forceinline__ float shfl_x(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ MS shfl_x(MS v, int o)
{
  MS r;
  r.m = shfl_x(v.m, o);
  r.s = shfl_x(v.s, o);
  return r;
}

// Lane 0's value in every lane.
__device__ __forceinline__ float shfl_0(float v) { return __shfl_sync(0xffffffffu, v, 0); }
__device__ __forceinline__ MS shfl_0(MS v)
{
  MS r;
  r.m = shfl_0(v.m);
  r.s = shfl_0(v.s);
  return r;
}

// Reduce over aligned groups of W lanes of a warp; every lane of a group gets the result (a
// butterfly: both lanes of a step apply op to the same two values).
template <int W, class T, class Op>
__device__ __forceinline__ T lanes_reduce(T v, Op op)
{
  #pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v = op(v, shfl_x(v, o));
  return v;
}

% if has.async then
// A whole warp's max in one redux (sm_80+) on the floats' bits, mapped to ints of the same order.
template <int W>
__device__ __forceinline__ float lanes_reduce(float v, OpMax op)
{
  if constexpr (W < 32) return lanes_reduce<W, float, OpMax>(v, op);
  else {
    int k = __float_as_int(v);
    k ^= (k >> 31) & 0x7fffffff;   // negative floats: larger magnitude, smaller int
    asm volatile("redux.sync.max.s32 %0, %0, 0xffffffff;" : "+r"(k));
    return __int_as_float(k ^ ((k >> 31) & 0x7fffffff));
  }
}
% end

// (max, sum) pairs in two steps, the max and then the sums rescaled to it: one exp per lane,
// none in the chain of shuffles.
template <int W>
__device__ __forceinline__ MS lanes_reduce(MS v, OpMS)
{
  const float m = lanes_reduce<W>(v.m, OpMax());
  return MS{ m, lanes_reduce<W>(v.s * ex(v.m, m), OpSum()) };
}

// Reduce over the lanes of a warp that belong to one row group (all 32 when G >= 32).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) { return lanes_reduce<$(math.min(G, 32))>(v, op); }

% local SYNC = G > 32 and "__syncthreads()" or "__syncwarp()"
// Reduce over the G = $(G) threads of a row group (lanes [k*G, (k+1)*G) of the block);
// every thread of the group gets the result.
template <class T, class Op>
__device__ __forceinline__ T group_reduce(T v, Op op)
{
% if reduce == "shfl" then
  v = warp_reduce(v, op);
%   if G > 32 then
  // one cross-warp step: lane 0 of each warp posts; each warp folds its group's W = $(G // 32)
  // posts by shuffles and takes lane 0's result, so every warp of the group gets the same bits
  __shared__ T buf[$(threads // 32)];
  const int first = threadIdx.x / $(G) * $(G // 32), lane32 = threadIdx.x % 32;
  if (lane32 == 0) buf[threadIdx.x / 32] = v;
  __syncthreads();
  v = buf[first + (lane32 < $(G // 32) ? lane32 : 0)];
  v = shfl_0(lanes_reduce<$(G // 32)>(v, op));
  __syncthreads();   // buf is reused by the next reduction
%   end
% else
  __shared__ T buf[$(threads)];
  const int lane = threadIdx.x % $(G);
  buf[threadIdx.x] = v;
  $(SYNC);
  #pragma unroll
  for (int s = $(G) / 2; s > 0; s >>= 1) {
    if (lane < s) buf[threadIdx.x] = op(buf[threadIdx.x], buf[threadIdx.x + s]);
    $(SYNC);
  }
  v = buf[threadIdx.x - lane];
  $(SYNC);   // buf is reused by the next reduction
% end
  return v;
}

// Edge element k (0 <= k < h + t) of a row: the head, then the tail.
__device__ __forceinline__ int edge_pos(Geo g, int k) { return k < g.h ? k : g.h + g.nv * VEC + (k - g.h); }

#define EDGE_SLOTS (EDGE > 0 ? EDGE : 1)

// This thread's edge elements: slot i holds edge i*TEAM + lane, -inf where there is none.
__device__ __forceinline__ void edge_load(const elem_t *x, Geo g, int lane, bool live, float *e)
{
  #pragma unroll
  for (int i = 0; i < EDGE; i++) {
    const int k = i * TEAM + lane;
    e[i] = live && k < g.h + g.t ? load1(x + edge_pos(g, k)) : NEG_INF;
  }
}

__device__ __forceinline__ void edge_store(elem_t *y, Geo g, int lane, bool live, const float *e)
{
  #pragma unroll
  for (int i = 0; i < EDGE; i++) {
    const int k = i * TEAM + lane;
    if (live && k < g.h + g.t) store1(y + edge_pos(g, k), e[i]);
  }
}

// ITEMS vectors starting at body vector `base`: vector base + i*TEAM + lane into slot i (N
// values of v each, by ld(j, slot)), `dead` in the slots of vectors past `end`.
template <int N, class T, class Ld>
__device__ __forceinline__ void load_vectors(int base, int end, int lane, bool live, T *v, T dead, Ld ld)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane;
    if (live && j < end) {
      ld(j, v + i * N);
    } else {
      #pragma unroll
      for (int k = 0; k < N; k++) v[i * N + k] = dead;
    }
  }
}

// load_vectors as floats, -inf past `end`. SH: from the shared-memory stage instead of
// global; FINAL: the last read of these vectors.
template <bool SH, bool FINAL>
__device__ __forceinline__ void load_step(const elem_t *body, int base, int end, int lane, bool live, float *v)
{
  load_vectors<VEC>(base, end, lane, live, v, NEG_INF,
                    [&](int j, float *f) { ldv<SH, FINAL>(body + (i64)j * VEC, f); });
}

template <bool SH = false>
__device__ __forceinline__ void store_step(elem_t *body, int base, int end, int lane, bool live, const float *v)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane;
    if (live && j < end) stv<SH>(body + (i64)j * VEC, v + i * VEC);
  }
}

// op over N independent values by halves: log2(N) dependent steps instead of N.
template <int N, class Op>
__device__ __forceinline__ float tree(const float *v, Op op)
{
  if constexpr (N == 1) return v[0];
  else return op(tree<N / 2>(v, op), tree<N - N / 2>(v + N / 2, op));
}

template <int N>
__device__ __forceinline__ float max_of(const float *v, float m)
{
  if constexpr (N == 0) return m;
  else return fmaxf(m, tree<N>(v, OpMax()));
}

// Sum of exp(v - m); with keep, v is replaced by those exps (softmax reuses them). finite: m is
// not -inf, so the exps need no guard (see ex_finite).
template <int N, bool keep, bool finite = false>
__device__ __forceinline__ float exp_sum(float *v, float m)
{
  if constexpr (N == 0) return 0.f;
  else {
    float e[N];
    #pragma unroll
    for (int i = 0; i < N; i++) {
      e[i] = finite ? ex_finite(v[i], m) : ex(v[i], m);
      if (keep) v[i] = e[i];
    }
    return tree<N>(e, OpSum());
  }
}

// A thread's (max, sum) over N held values, starting from max m0 (its edges'); with keep, v
// becomes exp(v - max) for the output step to scale.
template <int N, bool keep>
__device__ __forceinline__ MS pair_of(float *v, float m0)
{
  MS t;
  t.m = max_of<N>(v, m0);
  t.s = exp_sum<N, keep>(v, t.m);
  return t;
}

// The output of one element from its input x, the max m and k = 1/sum (softmax) or
// k = log(sum) (log_softmax).
__device__ __forceinline__ float finish(float x, float m, float k)
{
% if op == "softmax" then
  // m is the row's max, -inf only for a row of -inf, whose outputs are NaN either way
  return ex_finite(x, m) * k;
% else
  return (x - m) - k;
% end
}

template <int N>
__device__ __forceinline__ void finish_all(float *v, float m, float k)
{
  #pragma unroll
  for (int i = 0; i < N; i++) v[i] = finish(v[i], m, k);
}

// k for finish() from the row's (max, sum).
__device__ __forceinline__ float row_k(MS t)
{
% if op == "softmax" then
  return 1.f / t.s;
% else
  return logf(t.s);
% end
}

// The outputs of the thread's edge elements e from the row's (max, sum); k for finish().
__device__ __forceinline__ float edges_out(elem_t *y, Geo g, int lane, bool live, float *e, MS all)
{
  const float k = row_k(all);
  finish_all<EDGE>(e, all.m, k);
  edge_store(y, g, lane, live, e);
  return k;
}

// The thread's (max, sum) over its edge elements folded into t.
__device__ __forceinline__ MS with_edges(MS t, float *e)
{
  MS te;
  te.m = max_of<EDGE>(e, NEG_INF);
  te.s = exp_sum<EDGE, false>(e, te.m);
  return combine(t, te);
}

% if not words then
// hold=reg, pipe, mix of f32: held vectors are floats, and softmax keeps their exps for the output
typedef float held_t;
#define HELD (ITEMS * VEC)

template <bool FINAL>
__device__ __forceinline__ void hold_load(const elem_t *body, int base, int end, int lane, bool live, float *v)
{
  load_step<false, FINAL>(body, base, end, lane, live, v);
}

// The thread's (max, sum) over its held vectors v and edge elements e; for softmax v becomes
// exp(v - max), scaled at the output by hold_out().
__device__ __forceinline__ MS hold_pair(float *v, float *e)
{
  const float m0 = max_of<EDGE>(e, NEG_INF);
  MS t = pair_of<ITEMS * VEC, $(op == "softmax")>(v, m0);
  t.s += exp_sum<EDGE, false>(e, t.m);
  return t;
}

// Write the outputs of held vectors [begin, end) and of the edges, given the thread's own
// (max, sum) `mine` (what hold_pair left in v is relative to) and the row's `all`.
__device__ __forceinline__ void hold_out(elem_t *y, Geo g, int begin, int end, int lane, bool live, bool edges,
                                         float *v, float *e, MS mine, MS all)
{
  const float k = edges_out(y, g, lane, live && edges, e, all);
% if op == "softmax" then
  const float scale = ex(mine.m, all.m) * k;
  #pragma unroll
  for (int i = 0; i < ITEMS * VEC; i++) v[i] *= scale;
% else
  finish_all<ITEMS * VEC>(v, all.m, k);
% end
  store_step(y + g.h, begin, end, lane, live, v);
}

% else
// hold=packed, mix of 16-bit types: held vectors stay the raw words their loads gave, half the
// registers of floats; exp is computed again at the output (the SFU has room: DRAM is the limit).
typedef u32 held_t;
#define HELD (ITEMS * NW)

template <bool FINAL>
__device__ __forceinline__ void hold_load(const elem_t *body, int base, int end, int lane, bool live, u32 *w)
{
  load_vectors<NW>(base, end, lane, live, w, NEG_WORD,
                   [&](int j, u32 *d) { ldw<false, FINAL>(body + (i64)j * VEC, d); });
}

// w, as a value the compiler cannot tell from w: unpacking it again at the output is then not
// merged with the sum's unpack, which would keep every float live across the reduction.
__device__ __forceinline__ u32 opaque(u32 w)
{
  u32 r;
  asm volatile("mov.b32 %0, %1;" : "=r"(r) : "r"(w));
  return r;
}

% if op ~= "softmax" then
// unpack() by other instructions (byte permutes): ptxas sees through opaque() and, with no exp
// at the output (log_softmax, the backward ops), reuses the sum's unpack of each word, keeping
// every float live across the reduction (spills, or twice the registers); this it cannot reuse.
__device__ __forceinline__ void unpack_again(u32 w, float *f)
{
%   if dtype == "bf16" then
  f[0] = __uint_as_float(__byte_perm(w, 0u, 0x1044));
  f[1] = __uint_as_float(__byte_perm(w, 0u, 0x3244));
%   else
  asm("{ .reg .f16 lo, hi; .reg .b32 t; prmt.b32 t, %2, 0, 0x1010; mov.b32 {lo, hi}, t; cvt.f32.f16 %0, hi;\n\t"
      "prmt.b32 t, %2, 0, 0x3232; mov.b32 {lo, hi}, t; cvt.f32.f16 %1, lo; }"
      : "=f"(f[0]), "=f"(f[1]) : "r"(w));
%   end
}

% end
__device__ __forceinline__ MS hold_pair(const u32 *w, float *e)
{
  MS t;
  u32 mw = NEG_WORD;
  #pragma unroll
  for (int i = 0; i < HELD; i++) mw = max2(mw, w[i]);
  float f2[PER_WORD];
  unpack(mw, f2);
  t.m = max_of<PER_WORD>(f2, max_of<EDGE>(e, NEG_INF));
  t.s = exp_sum<EDGE, false>(e, t.m);
  #pragma unroll
  for (int i = 0; i < HELD; i++) {
    float f[PER_WORD];
    unpack(w[i], f);
    t.s += exp_sum<PER_WORD, false>(f, t.m);
  }
  return t;
}

// The held vectors [begin, end) written at body: word n of them (n = i * NW + q) as out(n) gives it.
template <class Out>
__device__ __forceinline__ void store_words(elem_t *body, int begin, int end, int lane, bool live, Out out)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = begin + i * TEAM + lane;
    u32 o[NW];
    #pragma unroll
    for (int q = 0; q < NW; q++) o[q] = out(i * NW + q);
    if (live && j < end) stw<false>(body + (i64)j * VEC, o);
  }
}

// Outputs of held vectors [begin, end) and of the edges from the row's `all`; `mine` is unused.
__device__ __forceinline__ void hold_out(elem_t *y, Geo g, int begin, int end, int lane, bool live, bool edges,
                                         const u32 *w, float *e, MS mine, MS all)
{
  const float k = edges_out(y, g, lane, live && edges, e, all);
  store_words(y + g.h, begin, end, lane, live, [&](int n) {
    float f[PER_WORD];
% if op == "log_softmax" then
    unpack_again(w[n], f);
% else
    unpack(opaque(w[n]), f);
% end
    finish_all<PER_WORD>(f, all.m, k);
    return pack(f);
  });
}
% end

// Online (max, sum) over body vectors [begin, end): ITEMS vectors per thread in flight, the
// sum rescaled once per step.
__device__ __forceinline__ MS online_stats(const elem_t *body, int begin, int end, int lane, bool live)
{
  MS a = { NEG_INF, 0.f };
  for (int base = begin; base < end; base += ITEMS * TEAM) {
    float v[ITEMS * VEC];
    load_step<false, false>(body, base, end, lane, live, v);
    const float m = max_of<ITEMS * VEC>(v, a.m);
    a.s = a.s * ex(a.m, m) + exp_sum<ITEMS * VEC, false>(v, m);
    a.m = m;
  }
  return a;
}

// Second pass: read body vectors [begin, end) again (SH: from the shared-memory stage) and write
// the outputs.
template <bool SH = false>
__device__ __forceinline__ void normalize(const elem_t *xb, elem_t *yb, int begin, int end, int lane, bool live, float m, float k)
{
  for (int base = begin; base < end; base += ITEMS * TEAM) {
    float v[ITEMS * VEC];
    load_step<SH, !SH>(xb, base, end, lane, live, v);
    finish_all<ITEMS * VEC>(v, m, k);
    store_step(yb, base, end, lane, live, v);
  }
}
