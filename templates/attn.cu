// attn.cu — attention_softmax: y = softmax over each row of mask(bias + softcap(scale * x)), the
// scores [B, H, Q, K] viewed as rows of K = cols (attn_params.h, attn_mask.h). A row reads only
// the keys its mask lets it see, [lo, hi): whole vectors inside, single elements where a vector
// straddles an end, nothing outside; every output is written, masked ones as 0. A row that sees
// nothing (or only scores of -inf) is zeros (torch gives NaN); a NaN or +inf score makes its row
// NaN, as torch's. Math in float32: z = x * scale, z = cap * tanh(z / cap) under a softcap
// (softcap.cu's tanh_cap), z -= slope[h] * |d - k| under ALiBi, z += t[b, h, q, k] under a bias
// tensor (float32, float16, bfloat16 or bool: bias_type, a kernel each; read where visible only;
// -inf or false there masks), then the softmax of the visible z by ex2. Where the tensor is
// broadcast over batches or heads, rows are taken in an order that puts its sharers together
// (attn_mask.h's am_row), so the L2 serves the repeats.
// Knobs: the forward's row family (split=1): threads, rows (a group of G = threads/rows threads per
//        row), items, vec, reduce, hint; passes=1 hold=reg (the row's scores held in registers as
//        floats), passes=1 hold=packed (16-bit, bias=none: the inputs' raw words, two a register,
//        scores made again in each pass) or passes=2 hold=none (statistics in one read, outputs in
//        a second); mask and bias,
//        the kinds (constants here, so a kind's kernel has no code of the others'); pair=mirror
//        (mask=causal, hold=reg): a group holds query q's row and Q-1-q's in one row's registers
//        (attn_head.cu), where the launch's offset is 0 and Q == K, else one row a group.
// A softcap's kernel is a source of its own (`capped`: $(kernel) ends in _cap; its value a launch
// argument), so a plain kernel of bias none (the kinds of the kernel set) holds one row loop (or
// pairs' loop) and compiles in half the time. The others hold both, chosen once by the launch's
// softcap: the softcap's loop alone took 65 more instructions (S2R and index math made again)
// and 5% more time (H200, tuned bf16 2x16x4096x4096 causal softcap 50: 626 against 594 us), and
// the bias tensor's plain loop alone read 1-6% under both in two tunes (docs/design/attention.md).
% include("attn_head.cu")

// What turns a row's inputs into scores: its visible keys [lo, hi), diagonal d and ALiBi slope.
struct Scores {
  int lo, hi;
  long long d;
  float slope, scale, cap, icap, k;   // k: x's factor in softcap.cu's r (16-bit)
% if bias == "tensor" then
  const char *t;   // the row's bias tensor (bias_type's elements), read where a key is visible
% end
};

__device__ __forceinline__ Scores scores_of(const AttnParams &p, i64 row)
{
  Scores r;
  long long lo, hi;
  r.d = am_range(MASK, &p, (const int *)p.key_lengths, COLS, row, &lo, &hi);
  r.lo = (int)lo, r.hi = (int)hi;
% if bias == "alibi" then
  r.slope = ((const float *)p.slopes)[row / p.q % p.h];
% else
  r.slope = 0.f;
% end
% if bias == "tensor" then
  r.t = (const char *)p.bias + am_bias_row(&p, row) * $(({ f32 = 4, f16 = 2, bf16 = 2, bool = 1 })[bias_type]);
% end
  r.scale = p.scale, r.cap = p.softcap, r.icap = p.softcap > 0.f ? 1.f / p.softcap : 0.f;
  r.k = r.scale * r.icap * (2.f * LOG2E);
  return r;
}

% if bias == "tensor" then
// The bias at key c as a float: its type (bias_type) is the source's, each type a kernel of its own.
__device__ __forceinline__ float bias_at(const Scores &r, int c)
{
%   if bias_type == "f32" then
  return ((const float *)r.t)[c];
%   elseif bias_type == "bf16" then
  return __uint_as_float((u32)((const u16 *)r.t)[c] << 16);
%   elseif bias_type == "f16" then
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(((const u16 *)r.t)[c]));
  return f;
%   else
  return r.t[c] ? 0.f : NEG_INF;   // bool: a byte, nonzero seen
%   end
}

% end
// The score of input x at visible key c.
template <bool CAP>
__device__ __forceinline__ float seen_score(const Scores &r, float x, int c)
{
  float z = x * r.scale;
% if dtype ~= "f32" then
  if (CAP) z = fmaf(-2.f * r.cap, cap_r(x, r.k), r.cap);   // cap (1 - 2 r): two float ops fewer
% else
  if (CAP) z = r.cap * tanh_cap(z * r.icap);
% end
% if bias == "alibi" then
  z -= r.slope * fabsf((float)(r.d - c));
% end
% if bias == "tensor" then
  z += bias_at(r, c);
% end
  return z;
}

// The score of input x at key c; -inf where c is masked.
template <bool CAP>
__device__ __forceinline__ float score(const Scores &r, float x, int c)
{
  return c >= r.lo && c < r.hi ? seen_score<CAP>(r, x, c) : NEG_INF;
}

// The scores of the VEC keys from c0 (-inf where masked): one vector load where any is visible,
// none where none is. FINAL: the last read of them.
template <bool CAP, bool FINAL>
__device__ __forceinline__ void vector_scores(const elem_t *x, int c0, const Scores &r, float *f)
{
  if (c0 >= r.lo && c0 + VEC <= r.hi) {   // no key of it to test again
    ldv<false, FINAL>(x + c0, f);
    #pragma unroll
    for (int q = 0; q < VEC; q++) f[q] = seen_score<CAP>(r, f[q], c0 + q);
  } else if (c0 < r.hi && c0 + VEC > r.lo) {   // partly visible (set_masked's reason)
    ldv<false, FINAL>(x + c0, f);
    #pragma unroll
    for (int q = 0; q < VEC; q++) f[q] = c0 + q >= r.lo && c0 + q < r.hi ? seen_score<CAP>(r, f[q], c0 + q) : NEG_INF;
  } else {
    #pragma unroll
    for (int q = 0; q < VEC; q++) f[q] = NEG_INF;
  }
}

// ITEMS body vectors from `base` (vector base + i*TEAM + lane in slot i), -inf past `end`.
template <bool CAP, bool FINAL>
__device__ __forceinline__ void slot_scores(const elem_t *x, Geo g, int base, int end, int lane, bool live, const Scores &r,
                                            float *v)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane;
    if (live && j < end) {
      vector_scores<CAP, FINAL>(x, g.h + j * VEC, r, v + i * VEC);
    } else {
      #pragma unroll
      for (int q = 0; q < VEC; q++) v[i * VEC + q] = NEG_INF;
    }
  }
}

// This thread's N scalar scores at the keys key(i) of their slots (-1: none), -inf where masked
// or absent.
template <int N, bool CAP, class Key>
__device__ __forceinline__ void scalar_scores(const elem_t *x, Key key, const Scores &r, float *e)
{
  #pragma unroll
  for (int i = 0; i < N; i++) {
    const int c = key(i);
    e[i] = c >= 0 && c >= r.lo && c < r.hi ? score<CAP>(r, load1(x + c), c) : NEG_INF;
  }
}

// This thread's edge scores (edge_load's slots).
template <bool CAP>
__device__ __forceinline__ void edge_scores(const elem_t *x, Geo g, int lane, bool live, const Scores &r, float *e)
{
  scalar_scores<EDGE, CAP>(x, [&](int i) { return edge_key(g, lane, live, i); }, r, e);
}

// The factor of the outputs from the row's (max, sum): 0 for a row that sees no finite score.
__device__ __forceinline__ float row_factor(MS all) { return all.m == NEG_INF ? 0.f : 1.f / all.s; }

// Outputs exp(z - m) * k of N scores in place: 0 * k where z is -inf (masked).
template <int N>
__device__ __forceinline__ void outputs(float *v, float m, float k)
{
  #pragma unroll
  for (int i = 0; i < N; i++) v[i] = ex_finite(v[i], safe_max(m)) * k;
}

% if hold == "packed" then
// hold=packed (16-bit, bias=none): a row's body vectors held as the loads' raw words, two inputs a
// register, their scores made again in each of three passes (max, sum, outputs). Without a bias a
// score rises with its input (falls, where scale < 0), so the row's max comes from the words' max
// (the sign bits flipped first where scale < 0), a max2 a word. A slot's vector is wholly visible
// (its words as loaded), partly (loaded whole) or not at all. Without a softcap and where scale != 0
// a partly visible vector's masked keys hold the input whose score is -inf (fold), and it counts as
// wholly visible: max2 keeps the max, exp gives 0, the output 0 (0 * k). Else they are cleared and
// each key is tested.
enum { NONE_SEEN, PART_SEEN, ALL_SEEN };

template <bool CAP>
__device__ __forceinline__ bool fold(const Scores &r) { return !CAP && r.scale != 0.f; }

template <bool CAP>
__device__ __forceinline__ int seen_of(Geo g, int j, int end, bool live, const Scores &r)
{
  const int c0 = g.h + j * VEC;
  if (!live || j >= end || c0 + VEC <= r.lo || c0 >= r.hi) return NONE_SEEN;
  return c0 >= r.lo && c0 + VEC <= r.hi || fold<CAP>(r) ? ALL_SEEN : PART_SEEN;
}

// The ITEMS body vectors from `base` (vector base + i*TEAM + lane in slot i) below `end` as words.
template <bool CAP>
__device__ __forceinline__ void word_load(const elem_t *x, Geo g, int base, int end, int lane, bool live, const Scores &r, u32 *w)
{
  const u32 masked = fold<CAP>(r) ? (r.scale > 0.f ? NEG_WORD : NEG_WORD ^ 0x80008000u) : 0u;   // inputs of score -inf
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane, c0 = g.h + j * VEC, seen = seen_of<CAP>(g, j, end, live, r);
    #pragma unroll
    for (int q = 0; q < NW; q++) w[i * NW + q] = 0u;
    if (seen != NONE_SEEN) ldw<false, true>(x + c0, w + i * NW);
    if (seen != NONE_SEEN && (c0 < r.lo || c0 + VEC > r.hi)) set_masked(w + i * NW, c0, r.lo, r.hi, masked);
  }
}

// f(k, score) of each visible element of slot i's words (AGAIN: by unpack_again, which ptxas does
// not merge with an earlier pass's unpack of the same word).
template <bool CAP, bool AGAIN, class F>
__device__ __forceinline__ void slot_each(const u32 *w, int i, int c0, int seen, const Scores &r, F f)
{
  #pragma unroll
  for (int q = 0; q < NW; q++) {
    float x[PER_WORD];
    if (AGAIN) unpack_again(w[i * NW + q], x);
    else unpack(w[i * NW + q], x);
    #pragma unroll
    for (int e = 0; e < PER_WORD; e++) {
      const int k = q * PER_WORD + e, c = c0 + k;
      if (seen == ALL_SEEN || c >= r.lo && c < r.hi) f(k, seen_score<CAP>(r, x[e], c));
    }
  }
}

// The thread's max score over its words and edge max me: the wholly visible words by max2, the
// partly visible vectors' visible elements one by one.
template <bool CAP>
__device__ __forceinline__ float word_max(const u32 *w, Geo g, int base, int end, int lane, bool live, const Scores &r, float me)
{
  const u32 flip = r.scale < 0.f ? 0x80008000u : 0u;
  u32 mw = NEG_WORD;
  bool any = false;
  float m = me;
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane, seen = seen_of<CAP>(g, j, end, live, r);
    if (seen == ALL_SEEN) {
      #pragma unroll
      for (int q = 0; q < NW; q++) mw = max2(mw, w[i * NW + q] ^ flip);
      any = true;
    } else if (seen == PART_SEEN) {
      slot_each<CAP, false>(w, i, g.h + j * VEC, seen, r, [&](int, float z) { m = fmaxf(m, z); });
    }
  }
  float x[PER_WORD];
  unpack(mw ^ flip, x);
  #pragma unroll
  for (int e = 0; e < PER_WORD; e++) m = any ? fmaxf(m, seen_score<CAP>(r, x[e], 0)) : m;
  return m;
}

// sum(exp(score - m)) over the thread's visible words (m: safe_max's).
template <bool CAP>
__device__ __forceinline__ float word_sum(const u32 *w, Geo g, int base, int end, int lane, bool live, const Scores &r, float m)
{
  float t[ITEMS];
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane, seen = seen_of<CAP>(g, j, end, live, r);
    t[i] = 0.f;
    if (seen != NONE_SEEN) slot_each<CAP, false>(w, i, g.h + j * VEC, seen, r, [&](int, float z) { t[i] += ex_finite(z, m); });
  }
  return tree<ITEMS>(t, OpSum());
}

// The outputs exp(score - m) * k of the thread's body vectors that hold a visible key stored
// (their masked elements 0 * k, as outputs() gives them: 0, or NaN in a row made NaN); those with
// none were written when the row began (masked_fill).
template <bool CAP>
__device__ __forceinline__ void word_out(elem_t *y, const u32 *w, Geo g, int base, int end, int lane, bool live, const Scores &r,
                                         float m, float k)
{
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane, seen = seen_of<CAP>(g, j, end, live, r);
    float f[VEC];
    #pragma unroll
    for (int q = 0; q < VEC; q++) f[q] = 0.f * k;
    if (seen == NONE_SEEN) continue;
    slot_each<CAP, true>(w, i, g.h + j * VEC, seen, r, [&](int q, float z) { f[q] = ex_finite(z, m) * k; });
    stv<false>(y + g.h + j * VEC, f);
  }
}

% end
template <bool CAP>
__device__ __forceinline__ void rows_loop(const elem_t *in, elem_t *out, i64 rows, const AttnParams &p)
{
  const int lane = threadIdx.x % $(G);
  for_rows(rows, [&](i64 i, bool live, bool edges, int kr) {
% if bias == "tensor" then
    const i64 row = p.order && live ? am_row(&p, i, rows) : i;   // a broadcast bias's sharers together
% else
    const i64 row = i;
% end
    const elem_t *x = in + (live ? row * COLS : 0);   // the offset selected, not the row: NVRTC 13.0
    elem_t *y = out + (live ? row * COLS : 0);         // kept 20 registers more otherwise (width classes)
    const Geo g = geometry(x, COLS);
    const Scores r = scores_of(p, live ? row : 0);
    float e[EDGE_SLOTS];
    edge_scores<CAP>(x, g, lane, edges, r, e);
    const float me = max_of<EDGE>(e, NEG_INF);
% if passes == 1 then
    int begin, end;   // the body vectors this group holds
    held_span(g, r.lo, r.hi, &begin, &end);
% end
% if hold == "packed" then
    u32 w[HELD];
    word_load<CAP>(x, g, begin, end, lane, live, r, w);
    int jlo, jhi;   // masked outputs written while the loads are in flight (0; 0 * k again below)
    vis_span(g, r.lo, r.hi, &jlo, &jhi);
    if (live) masked_fill(y, g, jlo, jhi, lane, 0.f);
    MS mine;
    mine.m = word_max<CAP>(w, g, begin, end, lane, live, r, me);
    const float ms = safe_max(mine.m);
    mine.s = word_sum<CAP>(w, g, begin, end, lane, live, r, ms) + exp_sum<EDGE, false, true>(e, ms);
    const MS all = row_reduce(mine, OpMS(), kr);
    const float k = row_factor(all);
    outputs<EDGE>(e, all.m, k);
    edge_store(y, g, lane, edges, e);
    word_out<CAP>(y, w, g, begin, end, lane, live, r, safe_max(all.m), k);
    if (live && !(fabsf(k) < -NEG_INF)) masked_fill(y, g, jlo, jhi, lane, 0.f * k);   // a row made NaN
% elseif passes == 1 then
    float v[ITEMS * VEC];
    slot_scores<CAP, true>(x, g, begin, end, lane, live, r, v);
    MS mine;
    mine.m = max_of<ITEMS * VEC>(v, me);
    const float ms = safe_max(mine.m);
    mine.s = exp_sum<ITEMS * VEC, true, true>(v, ms) + exp_sum<EDGE, false, true>(e, ms);   // v: exp(z - mine.m), or 0s
    const MS all = row_reduce(mine, OpMS(), kr);
    const float k = row_factor(all);
    outputs<EDGE>(e, all.m, k);
    edge_store(y, g, lane, edges, e);
    const float f = ex(mine.m, all.m) * k;
    #pragma unroll
    for (int i = 0; i < ITEMS * VEC; i++) v[i] *= f;
    store_step(y + g.h, begin, end, lane, live, v);
% else
    // pass 1 over the body vectors that hold a visible key
    int jlo, jhi;
    vis_span(g, r.lo, r.hi, &jlo, &jhi);
    if (live) masked_fill(y, g, jlo, jhi, lane, 0.f);   // masked outputs first, not read (0 * k again below)
    MS a = { me, exp_sum<EDGE, false, true>(e, safe_max(me)) };
    for (int base = jlo; base < jhi; base += ITEMS * TEAM) {
      float v[ITEMS * VEC];
      slot_scores<CAP, false>(x, g, base, jhi, lane, live, r, v);
      const float m = max_of<ITEMS * VEC>(v, a.m);
      a.s = a.s * ex(a.m, m) + exp_sum<ITEMS * VEC, false, true>(v, safe_max(m));
      a.m = m;
    }
    const MS all = row_reduce(a, OpMS(), kr);
    const float k = row_factor(all);
    outputs<EDGE>(e, all.m, k);
    edge_store(y, g, lane, edges, e);
    for (int base = jlo; base < jhi; base += ITEMS * TEAM) {   // the vectors holding a visible key
      float v[ITEMS * VEC];
      slot_scores<CAP, true>(x, g, base, jhi, lane, live, r, v);
      outputs<ITEMS * VEC>(v, all.m, k);
      store_step(y + g.h, base, jhi, lane, live, v);
    }
    if (live && !(fabsf(k) < -NEG_INF)) masked_fill(y, g, jlo, jhi, lane, 0.f * k);   // a row made NaN
% end
  });
}

% if pair == "mirror" then
// Row B's scores where b, else row A's: field by field, as selects (a struct picked by reference
// would be kept in local memory).
__device__ __forceinline__ Scores pick(bool b, const Scores &sa, const Scores &sb)
{
  Scores r;
  r.lo = b ? sb.lo : sa.lo, r.hi = b ? sb.hi : sa.hi, r.d = b ? sb.d : sa.d;
  r.slope = b ? sb.slope : sa.slope, r.scale = sa.scale, r.cap = sa.cap, r.icap = sa.icap, r.k = sa.k;
% if bias == "tensor" then
  r.t = b ? sb.t : sa.t;
% end
  return r;
}

// pair=mirror: a group's two mirrored rows (attn_head.cu) at once, one read of their visible keys
// into the slots of one row; both rows' masked vectors zeroed first (no value is held then: ptxas
// keeps the zeroing's state through the reduction otherwise, 16 registers more).
template <bool CAP>
__device__ __forceinline__ void pairs_loop(const elem_t *in, elem_t *out, i64 rows, const AttnParams &p)
{
  const int lane = threadIdx.x % $(G);
  for_pairs(rows, p.q, [&](i64 ra, i64 rb, bool live, bool liveb) {
    const elem_t *xa = in + ra * COLS, *xb = in + rb * COLS;
    elem_t *ya = out + ra * COLS, *yb = out + rb * COLS;
    const Scores sa = scores_of(p, ra), sb = scores_of(p, rb);
    const Half a = half_of(geometry(xa, COLS), sa.hi, live), b = half_of(geometry(xb, COLS), sb.hi, liveb);
    float v[ITEMS * VEC], e[PEDGE_SLOTS];
    int c[PEDGE_SLOTS];   // the edge slots' keys: kept, not the rows' geometry
    pair_keys(a, b, lane, c);
    zero_masked(ya, yb, a, b, lane);
    pair_load<true>(xa, xb, a, b, lane, v, NEG_INF, [&](int i, float *f) {   // a full visible vector's scores
      const bool inb = slot_b(i, lane, a.n);
      const int c0 = slot_key(a, b, lane, i);   // its first key in its row
      #pragma unroll
      for (int q = 0; q < VEC; q++) f[q] = seen_score<CAP>(pick(inb, sa, sb), f[q], c0 + q);
    });
    #pragma unroll
    for (int i = 0; i < PEDGE; i++) {
      const bool inb = edge_b(i, lane, a.ne);
      scalar_scores<1, CAP>(inb ? xb : xa, [&](int) { return c[i]; }, pick(inb, sa, sb), e + i);
    }
    const auto body_b = [&](int i) { return slot_b(i, lane, a.n); };
    const auto edges_b = [&](int i) { return edge_b(i, lane, a.ne); };
    Two<MS> mine = { { NEG_INF, 0.f }, { NEG_INF, 0.f } };
    two_max<ITEMS, VEC>(v, body_b, mine);
    two_max<PEDGE, 1>(e, edges_b, mine);
    two_sum<ITEMS, VEC, true>(v, body_b, mine);   // v: exp(z - its row's max)
    two_sum<PEDGE, 1, false>(e, edges_b, mine);
    const Two<MS> all = group_reduce(mine, OpTwo<OpMS>());
    const float ka = row_factor(all.a), kb = row_factor(all.b);
    #pragma unroll
    for (int i = 0; i < PEDGE; i++) {
      const bool inb = edge_b(i, lane, a.ne);
      e[i] = ex_finite(e[i], safe_max(inb ? all.b.m : all.a.m)) * (inb ? kb : ka);
    }
    pair_edges_store(ya, yb, a.ne, lane, c, e);
    const float fa = ex(mine.a.m, all.a.m) * ka, fb = ex(mine.b.m, all.b.m) * kb;
    pair_store(ya, yb, a, b, lane, v, [&](int i, float *f) {
      #pragma unroll
      for (int q = 0; q < VEC; q++) f[q] *= slot_b(i, lane, a.n) ? fb : fa;
    });
  });
}

% end
// hold=packed names its blocks a SM even where 1: ptxas left to itself took 64 registers and spilled
// (the backward's 512 threads items=4, NVRTC 13.0 sm_90)
extern "C" __global__ void __launch_bounds__($(threads)$((minb > 1 or hold == "packed") and ", " .. minb or ""))
$(kernel)(const elem_t *in, elem_t *out, i64 rows, void *ws, const AttnParams p)
{
% local both = capped or bias ~= "none"   -- both loops (the head comment says why)
% if pair == "mirror" then
  if (pairable(rows, p)) {
%   if both then
    if (p.softcap > 0.f) pairs_loop<true>(in, out, rows, p);
    else pairs_loop<false>(in, out, rows, p);
%   else
    pairs_loop<false>(in, out, rows, p);
%   end
    return;
  }
% end
% if both then
  if (p.softcap > 0.f) rows_loop<true>(in, out, rows, p);
  else rows_loop<false>(in, out, rows, p);
% else
  rows_loop<false>(in, out, rows, p);
% end
}
