// attn_bw.cu — attention_softmax_backward: dx = k * y * (dy - s), s = sum(dy * y) over the row's
// visible keys [lo, hi) (attn_mask.h), k = scale * (1 - tanh(scale * x / cap)^2) under a softcap
// (x the forward's scores, read only then and only where visible), else k = scale. y is the
// forward's output (attn.cu). Only the visible keys of y and dy are read (whole vectors inside,
// single elements where a vector straddles an end); every dx is written, masked ones as 0
// whatever dy holds there. A bias (ALiBi) adds a constant to a score: the backward has no bias
// kind. A NaN among a row's visible y or dy makes its visible dx NaN. Math in float32.
// Knobs: the forward's row family: threads, rows (a group of G = threads/rows threads per row),
//        items, vec, reduce, hint; passes=1 hold=reg (y and dy held in registers as
//        floats, one read), passes=1 hold=packed (16-bit: as their raw words, two a register) or
//        passes=2 hold=none (the sum over the visible vectors, then y and dy read again for dx);
//        mask (a constant here); split=2 or 4 with xchg=dsmem (hold=packed, causal, sm_90+): a
//        row over a cluster of blocks, each holding its share of the row's visible vectors,
//        writing its share of the masked ones as zeros, the sums swapped by cluster.cu's exchange;
//        pair=mirror (mask=causal, hold=reg): a group
//        holds y and dy of query q's row and of Q-1-q's in one row's registers (attn_head.cu), where
//        the launch's offset is 0 and Q == K, else one row a group.
// A softcap's kernel is a source of its own by name (`capped`, as attn.cu's), its value a launch
// argument; both hold both row loops (or pairs' loops), chosen once by the launch's softcap: a
// plain kernel of one loop ran up to 2% slower (H200, untuned bf16 4x16x2048x2048 causal: 275.0
// against 269.1 us; docs/design/attention.md).
% include("attn_head.cu")

// A row's visible keys [lo, hi) and the factor's constants.
struct Vis {
  int lo, hi;
  float scale, icap, k;   // k: x's factor in softcap.cu's r (16-bit)
  __device__ bool in(int c) const { return c >= lo && c < hi; }
};

__device__ __forceinline__ Vis vis_of(const AttnParams &p, i64 row)
{
  Vis v;
  long long lo, hi;
  am_range(MASK, &p, (const int *)p.key_lengths, COLS, row, &lo, &hi);
  v.lo = (int)lo, v.hi = (int)hi;
  v.scale = p.scale, v.icap = p.softcap > 0.f ? 1.f / p.softcap : 0.f;
  v.k = v.scale * v.icap * (2.f * LOG2E);
  return v;
}

// The VEC values of a tensor at keys c0.., 0 for the masked: one vector load where any is visible
// (set_masked's reason), none where none is. FINAL: the last read of them.
template <bool FINAL>
__device__ __forceinline__ void vis_vector(const elem_t *t, int c0, const Vis &r, float *f)
{
  if (c0 < r.hi && c0 + VEC > r.lo) {
    ldv<false, FINAL>(t + c0, f);
    if (c0 < r.lo || c0 + VEC > r.hi) {
      #pragma unroll
      for (int q = 0; q < VEC; q++) f[q] = r.in(c0 + q) ? f[q] : 0.f;
    }
  } else {
    #pragma unroll
    for (int q = 0; q < VEC; q++) f[q] = 0.f;
  }
}

// ITEMS body vectors of y and of dy from `base` (vector base + i*TEAM + lane in slot i), 0 past `end`.
template <bool FINAL>
__device__ __forceinline__ void vis_slots(const elem_t *y, const elem_t *d, Geo g, int base, int end, int lane, bool live,
                                          const Vis &r, float *vy, float *vd)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane;
    #pragma unroll
    for (int q = 0; q < VEC; q++) vy[i * VEC + q] = vd[i * VEC + q] = 0.f;
    if (live && j < end) {
      vis_vector<FINAL>(y, g.h + j * VEC, r, vy + i * VEC);
      vis_vector<FINAL>(d, g.h + j * VEC, r, vd + i * VEC);
    }
  }
}

// This thread's edge elements of y and dy (edge_load's slots), 0 where masked or absent.
__device__ __forceinline__ void vis_edges(const elem_t *y, const elem_t *d, Geo g, int lane, bool live, const Vis &r,
                                          float *ey, float *ed)
{
  #pragma unroll
  for (int i = 0; i < EDGE; i++) {
    const int k = i * TEAM + lane, c = edge_pos(g, k);
    const bool seen = live && k < g.h + g.t && r.in(c);
    ey[i] = seen ? load1(y + c) : 0.f;
    ed[i] = seen ? load1(d + c) : 0.f;
  }
}

// sum(dy * y) of N pairs (N may be 0: EDGE), by halves; the last slot a 0 that adds nothing.
template <int N>
__device__ __forceinline__ float dots(const float *vy, const float *vd)
{
  float t[N + 1];
  t[N] = 0.f;
  #pragma unroll
  for (int i = 0; i < N; i++) t[i] = vd[i] * vy[i];
  return tree<N + 1>(t, OpSum());
}

// The factor k at visible key c from input x there (CAP), the scale without a softcap.
template <bool CAP>
__device__ __forceinline__ float factor(const Vis &r, float x)
{
  if (!CAP) return r.scale;
% if dtype ~= "f32" then
  const float q = cap_r(x, r.k);   // 1 - t^2 = 4 r (1 - r), t = 1 - 2 r
  return 4.f * r.scale * fmaf(-q, q, q);
% else
  const float t = tanh_cap(x * r.scale * r.icap);
  return r.scale * (1.f - t * t);
% end
}

// dx of a visible element: k * y * (dy - s), r for the factor's constants (every row's).
template <bool CAP>
__device__ __forceinline__ float dx_seen(const Vis &r, float y, float d, float s, float x) { return y * (d - s) * factor<CAP>(r, x); }

// dx of one element in place of its y: dx_seen's where visible, 0 where masked.
template <bool CAP>
__device__ __forceinline__ float dx_of(const Vis &r, int c, float y, float d, float s, float x)
{
  return r.in(c) ? dx_seen<CAP>(r, y, d, s, x) : 0.f;
}

// The scores x of the VEC keys from c0 where visible, under CAP and where `in` (the slot is the
// row's); 0 elsewhere, and without a softcap (x is then not read).
template <bool CAP>
__device__ __forceinline__ void slot_x(const elem_t *x, int c0, bool in, const Vis &r, float *vx)
{
  #pragma unroll
  for (int q = 0; q < VEC; q++) vx[q] = 0.f;
  if (CAP && in) vis_vector<true>(x, c0, r, vx);
}

// dx of the ITEMS body vectors from `base` in place of vy (x read where visible, under CAP), no key
// tested: a masked slot holds y = dy = 0 (and x = 0), so its dx is 0 (or -0) where s is finite
// (else masked_fix mends it after the store).
template <bool CAP>
__device__ __forceinline__ void slot_grads(const elem_t *x, Geo g, int base, int end, int lane, bool live, const Vis &r,
                                           float *vy, const float *vd, float s)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane, c0 = g.h + j * VEC;
    float vx[VEC];
    slot_x<CAP>(x, c0, live && j < end, r, vx);
    #pragma unroll
    for (int q = 0; q < VEC; q++) vy[i * VEC + q] = dx_seen<CAP>(r, vy[i * VEC + q], vd[i * VEC + q], s, vx[q]);
  }
}

// Where s is not finite (a NaN or inf among the row's visible y or dy): the masked keys of this
// thread's body slots from `base`, just stored by it as NaN, stored again as 0.
__device__ __forceinline__ void masked_fix(elem_t *dx, Geo g, int base, int end, int lane, bool live, const Vis &r, float s)
{
  if (fabsf(s) < -NEG_INF) return;
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane;
    for (int c = g.h + j * VEC; live && j < end && c < g.h + (j + 1) * VEC; c++)
      if (!r.in(c)) store1(dx + c, 0.f);
  }
}

template <bool CAP>
__device__ __forceinline__ void edge_grads(const elem_t *x, Geo g, int lane, bool live, const Vis &r, float *ey,
                                           const float *ed, float s)
{
  #pragma unroll
  for (int i = 0; i < EDGE; i++) {
    const int k = i * TEAM + lane, c = edge_pos(g, k);
    const float vx = CAP && live && k < g.h + g.t && r.in(c) ? load1(x + c) : 0.f;
    ey[i] = dx_of<CAP>(r, c, ey[i], ed[i], s, vx);
  }
}

// split>1: this block's share of the row's masked vectors written as zeros (its slots hold its
// share of the visible ones only); split=1: the group's slots cover them.
__device__ __forceinline__ void split_zeros(elem_t *dx, Geo g, const Vis &r, int lane)
{
% if split > 1 then
  int jlo, jhi;
  vis_span(g, r.lo, r.hi, &jlo, &jhi);
  masked_fill(dx, g, jlo, jhi, lane, 0.f);
% end
}

% if hold == "packed" then
// hold=packed (16-bit): y and dy of the ITEMS body vectors from `base` as words, two values a
// register: the loads' raw words where a vector is fully visible, its visible elements packed
// with 0 for the masked where partly, 0 (masked or past `end`) where not at all.
__device__ __forceinline__ void word_slots(const elem_t *y, const elem_t *d, Geo g, int base, int end, int lane, bool live,
                                           const Vis &r, u32 *wy, u32 *wd)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane, c0 = g.h + j * VEC;
    #pragma unroll
    for (int q = 0; q < NW; q++) wy[i * NW + q] = wd[i * NW + q] = 0u;
    if (live && j < end && c0 < r.hi && c0 + VEC > r.lo) {   // any key visible: one load each
      ldw<false, true>(y + c0, wy + i * NW);
      ldw<false, true>(d + c0, wd + i * NW);
      if (c0 < r.lo || c0 + VEC > r.hi) set_masked(wy + i * NW, c0, r.lo, r.hi), set_masked(wd + i * NW, c0, r.lo, r.hi);
    }
  }
}

// sum(dy * y) of the held words, unpacked one word at a time.
__device__ __forceinline__ float word_dots(const u32 *wy, const u32 *wd)
{
  float t[HELD];
  #pragma unroll
  for (int n = 0; n < HELD; n++) {
    float fy[PER_WORD], fd[PER_WORD];
    unpack(wy[n], fy);
    unpack(wd[n], fd);
    t[n] = dots<PER_WORD>(fy, fd);
  }
  return tree<HELD>(t, OpSum());
}

// dx of the held vectors from the row's sum s, stored; the words unpacked anew (unpack_again), no
// key tested (slot_grads' rule: masked_fix after it where s is not finite).
template <bool CAP>
__device__ __forceinline__ void word_grads(const elem_t *x, elem_t *dx, Geo g, int base, int end, int lane, bool live, const Vis &r,
                                           const u32 *wy, const u32 *wd, float s)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane, c0 = g.h + j * VEC;
    float vx[VEC];
    slot_x<CAP>(x, c0, live && j < end, r, vx);
    u32 o[NW];
    #pragma unroll
    for (int q = 0; q < NW; q++) {
      float fy[PER_WORD], fd[PER_WORD];
      unpack_again(wy[i * NW + q], fy);
      unpack_again(wd[i * NW + q], fd);
      #pragma unroll
      for (int e = 0; e < PER_WORD; e++) fy[e] = dx_seen<CAP>(r, fy[e], fd[e], s, vx[q * PER_WORD + e]);
      o[q] = pack(fy);
    }
    if (live && j < end) stw<false>(dx + c0, o);
  }
}

% end
template <bool CAP>
__device__ __forceinline__ void rows_loop(const elem_t *xin, const elem_t *yin, const elem_t *dyin, elem_t *dxout, i64 rows,
                                          const AttnParams &p)
{
  const int lane = threadIdx.x % $(G);
  for_rows(rows, [&](i64 row, bool live, bool edges, int kr) {
    const i64 at = (live ? row : 0) * COLS;
    const elem_t *y = yin + at, *d = dyin + at, *x = CAP ? xin + at : xin;
    elem_t *dx = dxout + at;
    const Geo g = geometry(y, COLS);
    const Vis r = vis_of(p, live ? row : 0);
    float ey[EDGE_SLOTS], ed[EDGE_SLOTS];
    vis_edges(y, d, g, lane, edges, r, ey, ed);
% if passes == 1 then
    int begin, end;   // the body vectors this group holds
    held_span(g, r.lo, r.hi, &begin, &end);
% end
% if hold == "packed" then
    u32 wy[HELD], wd[HELD];
    word_slots(y, d, g, begin, end, lane, live, r, wy, wd);
    split_zeros(dx, g, r, lane);
    const float s = row_reduce(word_dots(wy, wd) + dots<EDGE>(ey, ed), OpSum(), kr);
    word_grads<CAP>(x, dx, g, begin, end, lane, live, r, wy, wd, s);
    masked_fix(dx, g, begin, end, lane, live, r, s);
% elseif passes == 1 then
    float vy[ITEMS * VEC], vd[ITEMS * VEC];
    vis_slots<true>(y, d, g, begin, end, lane, live, r, vy, vd);
    split_zeros(dx, g, r, lane);
    const float s = row_reduce(dots<ITEMS * VEC>(vy, vd) + dots<EDGE>(ey, ed), OpSum(), kr);
    slot_grads<CAP>(x, g, begin, end, lane, live, r, vy, vd, s);
    store_step(dx + g.h, begin, end, lane, live, vy);
    masked_fix(dx, g, begin, end, lane, live, r, s);
% else
    // the sum over the body vectors that hold a visible key
    int jlo, jhi;
    vis_span(g, r.lo, r.hi, &jlo, &jhi);
    float a = dots<EDGE>(ey, ed);
    for (int base = jlo; base < jhi; base += ITEMS * TEAM) {
      float vy[ITEMS * VEC], vd[ITEMS * VEC];
      vis_slots<false>(y, d, g, base, jhi, lane, live, r, vy, vd);
      a += dots<ITEMS * VEC>(vy, vd);
    }
    const float s = row_reduce(a, OpSum(), kr);
    for (int base = 0; base < g.nv; base += ITEMS * TEAM) {   // every vector written, the masked ones unread
      float vy[ITEMS * VEC], vd[ITEMS * VEC];
      vis_slots<true>(y, d, g, base, g.nv, lane, live, r, vy, vd);
      slot_grads<CAP>(x, g, base, g.nv, lane, live, r, vy, vd, s);
      store_step(dx + g.h, base, g.nv, lane, live, vy);
      masked_fix(dx, g, base, g.nv, lane, live, r, s);
    }
% end
    edge_grads<CAP>(x, g, lane, edges, r, ey, ed, s);
    edge_store(dx, g, lane, edges, ey);
  });
}

% if pair == "mirror" then
// pair=mirror: a group's two mirrored rows (attn_head.cu) at once: y and dy of their full visible
// vectors in the slots of one row, the rest edge elements; both rows' masked dx zeroed first, as
// attn.cu's. x read under CAP only, a vector at a time as dx is made.
template <bool CAP>
__device__ __forceinline__ void pairs_loop(const elem_t *x, const elem_t *y, const elem_t *dy, elem_t *dx, i64 rows,
                                           const AttnParams &p)
{
  const int lane = threadIdx.x % $(G);
  for_pairs(rows, p.q, [&](i64 ra, i64 rb, bool live, bool liveb) {
    const i64 oa = ra * COLS, ob = rb * COLS;
    const Vis va = vis_of(p, ra), vb = vis_of(p, rb);
    const Half a = half_of(geometry(y + oa, COLS), va.hi, live), b = half_of(geometry(y + ob, COLS), vb.hi, liveb);
    int c[PEDGE_SLOTS];   // the edge slots' keys
    pair_keys(a, b, lane, c);
    zero_masked(dx + oa, dx + ob, a, b, lane);
    const auto body_b = [&](int i) { return slot_b(i, lane, a.n); };
    const auto edges_b = [&](int i) { return edge_b(i, lane, a.ne); };
    const auto seen = [&](int i) {   // whether edge slot i holds a visible key (fields picked, not a Vis)
      return c[i] >= 0 && c[i] >= (edges_b(i) ? vb.lo : va.lo) && c[i] < (edges_b(i) ? vb.hi : va.hi);
    };
    const auto none = [](int, float *) {};
    float vy[ITEMS * VEC], vd[ITEMS * VEC], ey[PEDGE_SLOTS], ed[PEDGE_SLOTS], xe[PEDGE_SLOTS];
    pair_load<true>(y + oa, y + ob, a, b, lane, vy, 0.f, none);
    pair_load<true>(dy + oa, dy + ob, a, b, lane, vd, 0.f, none);
    pair_edges(y + oa, y + ob, a.ne, lane, c, seen, ey, 0.f);
    pair_edges(dy + oa, dy + ob, a.ne, lane, c, seen, ed, 0.f);
    Two<float> s = { 0.f, 0.f };
    two_add<ITEMS>([&](int i) { return dots<VEC>(vy + i * VEC, vd + i * VEC); }, body_b, s.a, s.b);
    two_add<PEDGE>([&](int i) { return dots<1>(ey + i, ed + i); }, edges_b, s.a, s.b);
    s = group_reduce(s, OpTwo<OpSum>());
    pair_store(dx + oa, dx + ob, a, b, lane, vy, [&](int i, float *f) {   // dx in place of y, every key visible
      float vx[VEC] = {};
      if (CAP) ldv<false, true>(slot_at(x + oa, x + ob, a, b, lane, i), vx);
      #pragma unroll
      for (int q = 0; q < VEC; q++) f[q] = dx_seen<CAP>(va, f[q], vd[i * VEC + q], body_b(i) ? s.b : s.a, vx[q]);
    });
    pair_edges(x + oa, x + ob, a.ne, lane, c, [&](int i) { return CAP && seen(i); }, xe, 0.f);
    #pragma unroll
    for (int i = 0; i < PEDGE; i++) ey[i] = seen(i) ? dx_seen<CAP>(va, ey[i], ed[i], edges_b(i) ? s.b : s.a, xe[i]) : 0.f;
    pair_edges_store(dx + oa, dx + ob, a.ne, lane, c, ey);
  });
}

% end
// hold=packed names its blocks a SM even where 1: ptxas left to itself took 64 registers and spilled
// (the backward's 512 threads items=4, NVRTC 13.0 sm_90)
extern "C" __global__ void __launch_bounds__($(threads)$((minb > 1 or hold == "packed") and ", " .. minb or ""))
$(kernel)(const elem_t *x, const elem_t *y, const elem_t *dy, elem_t *dx, i64 rows, void *ws, const AttnParams p)
{
% if pair == "mirror" then
  if (pairable(rows, p)) {
    if (p.softcap > 0.f) pairs_loop<true>(x, y, dy, dx, rows, p);
    else pairs_loop<false>(x, y, dy, dx, rows, p);
    return;
  }
% end
  if (p.softcap > 0.f) rows_loop<true>(x, y, dy, dx, rows, p);
  else rows_loop<false>(x, y, dy, dx, rows, p);
}
