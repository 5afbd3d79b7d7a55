% -- attn_head.cu — what both attention kernels (attn.cu, attn_bw.cu) start with: the common
% -- pieces for a group of G threads a row, the launch block, the masks (attn_mask.h), R rows a
% -- block and the mask kind as a constant (so a kind's kernel has no code of the others'); with
% -- pair=mirror, the pairing of causal rows for both (their slots' and edge elements' loads and
% -- stores, zeroing, two reductions).
% team = G
% include("common.cu")
% include("attn_params.h")
% include("softcap.cu")
#define AM_FN __device__ __forceinline__
% include("attn_mask.h")
#define R $(R)
#define MASK $((mask:find("causal") and 1 or 0) + (mask:find("window") and 2 or 0) + (mask:find("padding") and 4 or 0))

// A max to take exps against with ex_finite, no guard an element: 0 where m is -inf (every score
// then -inf, and exp(-inf - 0) is 0 as ex() gives).
__device__ __forceinline__ float safe_max(float m) { return m == NEG_INF ? 0.f : m; }

#ifdef NW   // (vector accesses of 4 bytes or more: the packed families')
// A partly visible vector's words as loaded whole, its keys outside [lo, hi) set to the raw bits
// of `bits` (0: +0). Its 32-byte sector is read either way; one vector load instead of a load a key
// spares the warp a wait that cost key padding 15-25% where lengths are not a multiple of VEC
// (H100, bf16 4x8192).
__device__ __forceinline__ void set_masked(u32 *w, int c0, int lo, int hi, u32 bits = 0u)
{
  #pragma unroll
  for (int q = 0; q < NW; q++) {
    #pragma unroll
    for (int e = 0; e < PER_WORD; e++) {
      const int c = c0 + q * PER_WORD + e;
      const u32 part = PER_WORD == 1 ? ~0u : 0xffffu << (16 * e);
      if (c < lo || c >= hi) w[q] = (w[q] & ~part) | (bits & part);
    }
  }
}
#endif

// The key of this thread's edge slot i (common.cu's edge_load), -1 where it has none.
__device__ __forceinline__ int edge_key(Geo g, int lane, bool live, int i)
{
  const int k = i * TEAM + lane;
  return live && k < g.h + g.t ? edge_pos(g, k) : -1;
}

// This thread's N scalars e stored at the keys key(i) of their slots (-1: none).
template <int N, class Key>
__device__ __forceinline__ void scalars_store(elem_t *y, Key key, const float *e)
{
  #pragma unroll
  for (int i = 0; i < N; i++) {
    const int c = key(i);
    if (c >= 0) store1(y + c, e[i]);
  }
}

// The body vectors [*jlo, *jhi) of a row of geometry g that hold a visible key of [lo, hi).
__device__ __forceinline__ void vis_span(Geo g, int lo, int hi, int *jlo, int *jhi)
{
  *jlo = lo <= g.h ? 0 : min((lo - g.h) / VEC, g.nv);
  *jhi = hi <= g.h ? *jlo : max(*jlo, min((hi - g.h + VEC - 1) / VEC, g.nv));
}
% if split > 1 then

// split>1 (the backward): a row over a cluster of S blocks (xchg=dsmem), each holding its share
// of the row's body vectors that hold a visible key, so the cluster's reads are even whatever
// the mask, and writing its share of the masked ones; block 0 also owns the row's head and tail.
#define S $(split)
static_assert(ITEMS * TEAM * S >= $(cols) / VEC, "split: a block's share of a row's vectors in its slots");
% include("cluster.cu")
% end

// The kernel's rows: f(row, live, edges, k), k the block's rows before it. split=1: R groups a
// block, one row each (dead groups, live false, still take part in the block's barriers);
// split>1: a cluster's S consecutive blocks a row, block 0 of them owning its edges.
template <class F>
__device__ __forceinline__ void for_rows(i64 rows, F f)
{
  int k = 0;
% if split > 1 then
  for (i64 row = blockIdx.x / S; row < rows; row += gridDim.x / S, k++) f(row, true, blockIdx.x % S == 0, k);
  cluster_sync();   // no block leaves while another may still read its slots
% else
  for (i64 blk = blockIdx.x; blk * R < rows; blk += gridDim.x, k++) {
    const i64 row = blk * R + threadIdx.x / $(G);
    f(row, row < rows, row < rows, k);
  }
% end
}

// The body vectors [*begin, *end) a group holds of a row of geometry g seeing keys [lo, hi): all
// of them (split=1), or this block's share of those that hold a visible key (split>1).
__device__ __forceinline__ void held_span(Geo g, int lo, int hi, int *begin, int *end)
{
% if split > 1 then
  int jlo, jhi;
  vis_span(g, lo, hi, &jlo, &jhi);
  const int per = (jhi - jlo + S - 1) / S;
  *begin = min(jlo + (int)(blockIdx.x % S) * per, jhi);
  *end = min(*begin + per, jhi);
% else
  *begin = 0, *end = g.nv;
% end
}

// The row's body vectors that hold no visible key (those outside [jlo, jhi), vis_span's) stored
// as VEC copies of v, over the group's lanes (split=1) or the cluster's threads (split>1).
__device__ __forceinline__ void masked_fill(elem_t *y, Geo g, int jlo, int jhi, int lane, float v)
{
  float z[VEC];
  #pragma unroll
  for (int q = 0; q < VEC; q++) z[q] = v;
  const int n = g.nv - (jhi - jlo);
% if split > 1 then
  for (int i = (int)(blockIdx.x % S) * TEAM + lane; i < n; i += S * TEAM)
% else
  for (int i = lane; i < n; i += TEAM)
% end
    stv<false>(y + g.h + (i64)(i < jlo ? i : i + jhi - jlo) * VEC, z);
}

// t reduced over its row's threads: the group's (split=1), or every block's of the cluster
// (split>1, the backward's sum: each block's in its slot of the row's parity k; a block writes
// row k+2's only after row k+1's barrier, which every block passes only after it read row k's).
template <class T, class Op>
__device__ __forceinline__ T row_reduce(T t, Op op, int k)
{
  t = group_reduce(t, op);
% if split > 1 then
  __shared__ T slot[2];
  if (threadIdx.x == 0) slot[k & 1] = t;
  cluster_sync();
  t = cluster_sum(&slot[k & 1]);
% end
  return t;
}
% if pair == "mirror" then

// pair=mirror (mask=causal): where the causal offset is 0 and Q == K, a group holds query q's row
// (A) and its mirror Q-1-q's (B), whose visible keys number K + 1 together. A's full visible body
// vectors fill the group's slots (vector i*TEAM + lane of the list in slot i) first, then B's; a
// row's partly visible vector joins its head and tail as edge elements, at most 3*VEC - 2 a row;
// A's edge elements then B's are a list of their own, element i*TEAM + lane in edge slot i.
% PEDGE = vec > 1 and (6 * vec - 4 + team - 1) // team or 0
#define PEDGE $(PEDGE)
#define PEDGE_SLOTS (PEDGE > 0 ? PEDGE : 1)
static_assert(ITEMS * TEAM >= $(cols) / VEC + ($(cols) % VEC == VEC - 1), "pair=mirror: a slot for every full visible vector");

// Whether the launch's rows pair: causal offset 0, Q == K and whole (batch, head)s. Chosen once a
// launch (else one row a group, rows_loop), so no row pays for a branch on it.
__device__ __forceinline__ bool pairable(i64 rows, const AttnParams &p) { return p.offset == 0 && p.q == COLS && rows % p.q == 0; }

// The pairs' loop, R groups a block over ceil(Q/2) pairs a (batch, head): pair i there is rows q = i
// and Q-1-q, f(row a, row b, live, liveb); b is a again, not liveb, for the middle row of an odd Q.
template <class F>
__device__ __forceinline__ void for_pairs(i64 rows, i64 q, F f)
{
  const i64 half = (q + 1) / 2, pairs = rows / q * half;
  for (i64 blk = blockIdx.x; blk * R < pairs; blk += gridDim.x) {
    const i64 pair = blk * R + threadIdx.x / $(G);
    const bool live = pair < pairs;   // dead groups still take part in the block's barriers
    const i64 i = live ? pair : 0, base = i / half * q, qa = i % half;
    f(base + qa, base + q - 1 - qa, live, live && 2 * qa + 1 != q);
  }
}

// A pair's row of geometry g seeing keys [0, hi): n full visible body vectors (held in slots), m
// holding a visible key (n, or n + 1 with the partly visible one), ne edge elements (head, the
// partly visible vector, tail). A dead one holds, writes and zeroes nothing.
struct Half { Geo g; int n, m, ne; };

__device__ __forceinline__ Half half_of(Geo g, int hi, bool live)
{
  Half a;
  int jlo;
  vis_span(g, 0, hi, &jlo, &a.m);
  a.g = g;
  a.n = live ? min(max(hi - g.h, 0) / VEC, g.nv) : 0;
  a.m = live ? a.m : g.nv;
  a.ne = live ? g.h + (a.m - a.n) * VEC + g.t : 0;
  return a;
}

// The keys in their rows of this thread's edge slots (-1: none): element k = i*TEAM + lane of the
// pair's edge list, in its row's head, then its partly visible vector, then its tail.
__device__ __forceinline__ void pair_keys(const Half &a, const Half &b, int lane, int *c)
{
  #pragma unroll
  for (int i = 0; i < PEDGE; i++) {
    const int k = i * TEAM + lane;
    const bool inb = k >= a.ne;   // fields picked one by one: a struct picked by reference goes to local memory
    const int h = inb ? b.g.h : a.g.h, n = inb ? b.n : a.n, nv = inb ? b.g.nv : a.g.nv, ne = inb ? b.ne : a.ne;
    const int e = inb ? k - a.ne : k, p = ((inb ? b.m : a.m) - n) * VEC;
    c[i] = e >= ne ? -1 : e < h ? e : e < h + p ? n * VEC + e : nv * VEC + e - p;
  }
}

// Whether edge slot i of this lane is row B's.
__device__ __forceinline__ bool edge_b(int i, int lane, int nea) { return i * TEAM + lane >= nea; }

// Slot i of this lane holds vector s = i*TEAM + lane of the pair's list: row B's (s >= na) or A's;
// one of theirs where s < na + nb. Its address is the lane's base in its row (row_base) + i*TEAM*VEC.
__device__ __forceinline__ bool slot_b(int i, int lane, int na) { return i * TEAM + lane >= na; }
__device__ __forceinline__ bool slot_ok(int i, int lane, int nab) { return i * TEAM + lane < nab; }

// The address of this lane's slot 0 in a row of geometry g (t: its output or input) whose body
// vectors start at list entry `first` (0 for A, na for B): vector lane - first of it.
template <class T>
__device__ __forceinline__ T *row_base(T *t, Geo g, int first, int lane) { return t + g.h + (i64)(lane - first) * VEC; }

// The address of this lane's slot i in a tensor of the pair's rows (ta row A's, tb row B's).
template <class T>
__device__ __forceinline__ T *slot_at(T *ta, T *tb, const Half &a, const Half &b, int lane, int i)
{
  return (slot_b(i, lane, a.n) ? row_base(tb, b.g, a.n, lane) : row_base(ta, a.g, 0, lane)) + i * TEAM * VEC;
}

// The key in its row of the first element of this lane's slot i.
__device__ __forceinline__ int slot_key(const Half &a, const Half &b, int lane, int i)
{
  return (slot_b(i, lane, a.n) ? b.g.h - a.n * VEC : a.g.h) + (i * TEAM + lane) * VEC;
}

// This lane's slots of a tensor of the pair's rows: their full visible vectors, each then f(i, its
// VEC values) (in the loop: ptxas spills 4 bytes at 64 registers when a second loop does it), `dead`
// in the rest.
template <bool FINAL, class F>
__device__ __forceinline__ void pair_load(const elem_t *ta, const elem_t *tb, const Half &a, const Half &b, int lane, float *v,
                                          float dead, F f)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    if (slot_ok(i, lane, a.n + b.n)) {
      ldv<false, FINAL>(slot_at(ta, tb, a, b, lane, i), v + i * VEC);
      f(i, v + i * VEC);
    } else {
      #pragma unroll
      for (int q = 0; q < VEC; q++) v[i * VEC + q] = dead;
    }
  }
}

// And f(i, its VEC values) of each stored there (the full visible vectors).
template <class F>
__device__ __forceinline__ void pair_store(elem_t *ta, elem_t *tb, const Half &a, const Half &b, int lane, float *v, F f)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    if (!slot_ok(i, lane, a.n + b.n)) continue;
    f(i, v + i * VEC);
    stv<false>(slot_at(ta, tb, a, b, lane, i), v + i * VEC);
  }
}

// This lane's edge elements of a tensor of the pair's rows (keys c, pair_keys): its row's element
// c[i] where seen(i), else `dead`; nea: row A's edge elements.
template <class Seen>
__device__ __forceinline__ void pair_edges(const elem_t *ta, const elem_t *tb, int nea, int lane, const int *c, Seen seen,
                                           float *e, float dead)
{
  #pragma unroll
  for (int i = 0; i < PEDGE; i++) e[i] = seen(i) ? load1((edge_b(i, lane, nea) ? tb : ta) + c[i]) : dead;
}

// e stored at those keys, masked ones included (every edge slot with a key).
__device__ __forceinline__ void pair_edges_store(elem_t *ta, elem_t *tb, int nea, int lane, const int *c, const float *e)
{
  #pragma unroll
  for (int i = 0; i < PEDGE; i++) scalars_store<1>(edge_b(i, lane, nea) ? tb : ta, [&](int) { return c[i]; }, e + i);
}

// Zeros in both rows' body vectors that hold no visible key ([m, nv) of each), over the group's lanes.
__device__ __forceinline__ void zero_masked(elem_t *ya, elem_t *yb, const Half &a, const Half &b, int lane)
{
  float z[VEC];
  #pragma unroll
  for (int q = 0; q < VEC; q++) z[q] = 0.f;
  const int za = a.g.nv - a.m, n = za + b.g.nv - b.m;
  for (int s = lane; s < n; s += TEAM)
    stv<false>(s < za ? ya + a.g.h + (i64)(a.m + s) * VEC : yb + b.g.h + (i64)(b.m + s - za) * VEC, z);
}

// The two rows' values reduced together: two chains of shuffles side by side.
template <class T> struct Two { T a, b; };
template <class Op> struct OpTwo {
  template <class T> __device__ Two<T> operator()(Two<T> x, Two<T> y) const { return { Op()(x.a, y.a), Op()(x.b, y.b) }; }
};
template <class T> __device__ __forceinline__ Two<T> shfl_x(Two<T> v, int o) { return { shfl_x(v.a, o), shfl_x(v.b, o) }; }
template <class T> __device__ __forceinline__ Two<T> shfl_0(Two<T> v) { return { shfl_0(v.a), shfl_0(v.b) }; }
template <int W, class T, class Op>
__device__ __forceinline__ Two<T> lanes_reduce(Two<T> v, OpTwo<Op>) { return { lanes_reduce<W>(v.a, Op()), lanes_reduce<W>(v.b, Op()) }; }

// Values f(i) of N slots added to their rows' sums sa and sb, slot i row B's where inb(i).
template <int N, class F, class InB>
__device__ __forceinline__ void two_add(F f, InB inb, float &sa, float &sb)
{
  #pragma unroll
  for (int i = 0; i < N; i++) {
    const float s = f(i);
    const bool b = inb(i);
    sa += b ? 0.f : s;
    sb += b ? s : 0.f;
  }
}

// The two rows' maxima folded over N slots of W values v, slot i row B's where inb(i).
template <int N, int W, class InB>
__device__ __forceinline__ void two_max(const float *v, InB inb, Two<MS> &t)
{
  #pragma unroll
  for (int i = 0; i < N; i++) {
    const float m = max_of<W>(v + i * W, NEG_INF);
    const bool b = inb(i);
    t.a.m = b ? t.a.m : fmaxf(t.a.m, m);
    t.b.m = b ? fmaxf(t.b.m, m) : t.b.m;
  }
}

// And their sums of exp(v - its row's max); with keep, v becomes those exps.
template <int N, int W, bool keep, class InB>
__device__ __forceinline__ void two_sum(float *v, InB inb, Two<MS> &t)
{
  const float ma = safe_max(t.a.m), mb = safe_max(t.b.m);
  two_add<N>([&](int i) { return exp_sum<W, keep, true>(v + i * W, inb(i) ? mb : ma); }, inb, t.a.s, t.b.s);
}
% end
