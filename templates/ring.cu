% -- ring.cu — the pieces of a row exchanged between blocks that split.cu (the forward, split>1) and
% -- backward.cu (hold=ring) share, as Lua functions that emit them where a template calls them:
% -- including this file emits nothing. The forward posts a block's (max, sum) pair, the backward
% -- its one float sum; the rest is the same text:
% --   ring_barriers(scope)  mbarriers (init, arrive, wait, expect); scope: who completes them
% --   ring_words()          the xchg=global workspace (Count, Parts, NB), tagged 8-byte words
% --                         (post_part, wait_part)
% --   ring_fold()           fold (a row's parts, one fixed order) and part_of (a block's part)
% --   ring_defs()           hold=ring's DEPTH, NR, NF, CHUNKS, bulk_load (one bulk copy)
% --   ring_tail()           role_sync, edge_in (a row's edge element, or what adds nothing)
% --   ring_groups()         the kernel's group counter and parts in the workspace
% --   ring_setup()          the kernel's ring: stages, barriers, part(s) and stage(s)
% --   ring_loader()         warp 0's loop: each row's part into a stage (backward: y and dy, two
% --                         copies; YDIRECT: dy alone);
% --                         then a reducer's loop up to its row's stage
% --   ring_take(n)          EARLY: a finisher's n vectors of the stage (backward: y's and dy's)
% --                         into registers, then the stage freed for the next load
% --   ring_handover(f)      a reducer's post of the block's part; a finisher's loop (f(), if
% --                         given, first in each row) up to the row's folded parts (`all`)
% --   ring_depart()         the group's last block out zeroes its parts for the next launch
% -- xchg=claim (forward only) changes the roles' loops, not their work: the loader claims each
% -- stage's part (row, rank) from a ticket and leaves it in `tick`, every role reads it there
% -- (claim_head), pairs go by row to NB = 32 buffers guarded by read counts (wait_read), and the
% -- grid's last block out zeroes them.
% local bw = op == "softmax_backward" or op == "log_softmax_backward"
% local part_t = bw and "float" or "MS"   -- what a block posts for a row
% local src = bw and "yin" or "in"        -- the (first) input
% local function add(a, b) return bw and a .. " + " .. b or "combine(" .. a .. ", " .. b .. ")" end
% local zero = bw and "0.f" or "MS{ NEG_INF, 0.f }"   -- what adds nothing
% local both = bw and not YDIRECT   -- a stage holds y and dy; else (YDIRECT) dy alone
% -- xchg=claim (forward): a block claims each next part (row, rank) from a ticket counter when a
% -- stage frees, instead of owning parts rank of rows first, first + ngroups, ...
% local claim = xchg == "claim"
%
% function ring_barriers(bar_scope)
// mbarriers: the ring's stages (bulk copies), the cluster's pair slots (remote stores)
__device__ __forceinline__ u32 smem_addr(const void *p) { return (u32)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void bar_init(u64 *b, u32 count)
{
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(b)), "r"(count) : "memory");
}

__device__ __forceinline__ void bar_arrive(u64 *b)
{
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(smem_addr(b)) : "memory");
}

// Until the barrier's phase of this parity has completed.
__device__ __forceinline__ void bar_wait(u64 *b, u32 parity)
{
  u32 done;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.$(bar_scope).shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(smem_addr(b)), "r"(parity) : "memory");
  } while (!done);
}

// One arrival on b that also expects `bytes` more of asynchronous copies or stores on it.
__device__ __forceinline__ void bar_expect(u64 *b, u32 bytes)
{
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(b)), "r"(bytes) : "memory");
}

% end
%
% function ring_words()
// A group's counters; the first $(WS_GROUPS) of them lead the workspace, then the groups' $(bw and "sums" or "pairs")
% if bw then
// in NB buffers, row k in buffer k % NB: the block's sum in the low word, the tag alone in the
// high one's top bit (a sum may be negative, so it cannot carry the tag), which flips each time
// a buffer is reused. A zeroed word has tag 0, which rows 0..NB-1 do not take.
% else
// in NB buffers, row k in buffer k % NB: m in the low word, s in the high one with its sign bit
// replaced by the tag, which flips each time a buffer is reused. s is never below zero (or is a
// NaN, whose sign means nothing), and a zeroed pair has tag 0, which rows 0..NB-1 do not take.
% end
#define NB $(NB)
struct Count { u32 spare, depart; };
struct Parts { u64 part[NB][S]; };

__device__ __forceinline__ u32 tag_of(u64 k) { return (u32)(~(k / NB)) & 1u; }

__device__ __forceinline__ void post_part(u64 *p, $(part_t) t, u64 k)
{
% if bw then
  const u64 w = (u64)(tag_of(k) << 31) << 32 | __float_as_uint(t);
% else
  const u64 w = (u64)(__float_as_uint(t.s) & 0x7fffffffu | tag_of(k) << 31) << 32 | __float_as_uint(t.m);
% end
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" :: "l"(p), "l"(w) : "memory");
}

// The $(bw and "sum" or "pair") at p once it carries row k's tag. One 8-byte access is single-copy atomic, so the
// $(bw and "word" or "pair") read is whole; a block only rewrites it after every block posted the next row.
__device__ __forceinline__ $(part_t) wait_part(const u64 *p, u64 k)
{
  u64 w;
  for (;;) {
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
    if ((u32)(w >> 63) == tag_of(k)) break;
    __nanosleep(20);
  }
% if bw then
  return __uint_as_float((u32)w);
% else
  MS r;
  r.m = __uint_as_float((u32)w);
  r.s = __uint_as_float((u32)(w >> 32) & 0x7fffffffu);
  return r;
% end
}
% if claim then

// xchg=claim: until the count at d reaches n. A buffer's count is the parts whose block has read
// the pairs of its rows so far; row k may use buffer k % NB once row k - NB's S parts did.
__device__ __forceinline__ void wait_read(const u32 *d, u32 n)
{
  u32 v;
  for (;;) {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(d) : "memory");
    if (v >= n) break;
    __nanosleep(20);
  }
}
% end
% end
%
% function ring_fold()
% if bw then
// N sums folded by a warp in one fixed order, every lane gets the result: every finisher warp
// of every block of the row gets bit-identical sums.
% else
// N pairs folded by a warp in one fixed order, every lane gets the result: every warp that
// folds (all of them with dsmem, warp 0 of each block with global) gets bit-identical (max, sum).
% end
template <int N, class Get>
__device__ __forceinline__ $(part_t) fold(Get get)
{
  const int lane = threadIdx.x % 32;
% if bw then
  float a = lane < N ? get(lane) : 0.f;
  for (int r = lane + 32; r < N; r += 32) a += get(r);
  return lanes_reduce<32>(a, OpSum());   // a butterfly: a + b == b + a, so every lane's bits match
% else
  MS a = lane < N ? get(lane) : MS{ NEG_INF, 0.f };   // not combine()d into an empty pair: an exp saved
  for (int r = lane + 32; r < N; r += 32) a = combine(a, get(r));
  return lanes_reduce<32>(a, OpMS());
% end
}

% if hold == "ring" then
% if MIDLINE then
// hold=ring: parts begin and end on the 128-byte lines of memory (LV vectors a line; rows of
// their width are not whole lines, so a row's body may begin inside one, `off` vectors
// past its start), split as evenly as lines allow, so no two blocks' bulk copies share a line
// whatever the split or the row; a part has at most RV vectors, a stage's room.
% -- (Lines of the body, not of memory, cost such rows 3-4% on an H100: bf16 256x1048572 claim
% -- 0.949 -> 0.982 of copy, global 0.890 -> 0.921.)
% else
// hold=ring: parts begin and end on 128-byte lines of the row's body (LV vectors a line), split
// as evenly as lines allow, so no two blocks' bulk copies share a line whatever the split (a
// block on each SM: split=132); a part has at most RV vectors, a stage's room.
% -- Rows of whole lines begin where the tensor does, on a line (cudaMalloc, torch): the body's
% -- lines are memory's, and the stage needs no line more (MIDLINE, space.lua).
% end
#define LV $(LV)
#define RV $(RV)

% end
// This block's part [begin, end) of the row at x, by vectors of its body.
__device__ __forceinline__ void part_of(const elem_t *x, i64 n, u32 rank, Geo *g, int *begin, int *end)
{
  *g = geometry(x, n);
% if hold == "ring" then
%   local o, c0, c1 = MIDLINE and " - off" or "", MIDLINE and "max(" or "", MIDLINE and ", 0)" or ""
%   if MIDLINE then
  const int off = (int)((u64)(x + g->h) % 128 / $(VB));
%   end
  const u32 lines = (u32)(g->nv + $(MIDLINE and "off + " or "")LV - 1) / LV;
  *begin = $(c0)min((int)(rank * lines / S) * LV$(o), g->nv)$(c1);
  *end = $(c0)min((int)((rank + 1) * lines / S) * LV$(o), g->nv)$(c1);
% else
  *begin = min((int)rank * CV_OF(n), g->nv);
  *end = min(*begin + CV_OF(n), g->nv);
% end
}
% end
%
% function ring_defs()
#define DEPTH $(DEPTH)
#define NR $(math.max(1, (threads // 32 - 1) // 3))   // a third of the warps reduce: 10 of 31 beat 7 by 3-10% in bf16, level in f32
#define NF ($(threads // 32) - 1 - NR)
#define CHUNKS ((S + 31) / 32)

// `bytes` from global src into the stage dst; completes on barrier b (the copy's arrival).
__device__ __forceinline__ void bulk_load(void *dst, const void *src, u32 bytes, u64 *b)
{
  bar_expect(b, bytes);
  if (bytes)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(b)) : "memory");
}

% end
%
% function ring_tail()
// A barrier over the n threads of one role (ids 1 and 2; 0 is __syncthreads).
__device__ __forceinline__ void role_sync(u32 id, u32 n) { asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory"); }

// The edge elements of a row (head, then tail): element k for k < h + t, by lane k of a role.
__device__ __forceinline__ float edge_in(const elem_t *x, Geo g, int k) { return k < g.h + g.t ? load1(x + edge_pos(g, k)) : $(bw and "0.f" or "NEG_INF"); }

% end
%
% function ring_groups()
% if claim then
  // one group: the grid's departures (Count 0), the ticket (word 1), NB read counts, the pairs
  Count *const xg = (Count *)ws;
  unsigned long long *const ticket = (unsigned long long *)ws + 1;
  u32 *const reads = (u32 *)((u64 *)ws + 2);
  Parts *const xp = (Parts *)((Count *)ws + $(WS_GROUPS));
% else
  Count *const xg = (Count *)ws + blockIdx.x / S;
  Parts *const xp = (Parts *)((Count *)ws + $(WS_GROUPS)) + blockIdx.x / S;
% end
% end
%
% function ring_setup()
  extern __shared__ __align__(128) unsigned char ring_bytes[];
  __shared__ __align__(8) u64 full[DEPTH], empty[DEPTH];
  __shared__ $(part_t) red[2][NR], folded[2][CHUNKS];   // by row parity: a role's next row needs no second barrier
  elem_t *const ring = (elem_t *)ring_bytes;
% if not bw then
  (void)lane;   // the roles index their own threads
% end
% if claim then
  __shared__ i64 tick[DEPTH];   // each stage's part: its ticket row * S + rank, or -1: no more
  (void)ngroups, (void)edges;   // the block's own; a step takes its part's
% else
  const i64 first = blockIdx.x / S;
  const i64 steps = first < rows ? (rows - first + ngroups - 1) / ngroups : 0;
% end
  const int warp = threadIdx.x / 32, lane32 = threadIdx.x % 32;
  if (threadIdx.x < DEPTH) {
    bar_init(&full[threadIdx.x], $(both and 2 or 1));$(both and "   // a copy of y and one of dy" or "")
    bar_init(&empty[threadIdx.x], NR + NF);   // a stage is free once every reducer and finisher warp is done with it
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  auto part = [&](i64 s, const elem_t **x, Geo *g, int *begin, int *end) {
% if claim then
    const i64 t = tick[s % DEPTH];
    *x = $(src) + t / S * COLS;
    part_of(*x, COLS, (u32)(t % S), g, begin, end);
% else
    *x = $(src) + (first + s * ngroups) * COLS;
    part_of(*x, COLS, rank, g, begin, end);
% end
  };
  auto stage = [&](i64 s) { return ring + (int)(s % DEPTH) * ($(both and "2 * " or "")RV * VEC); };
% end
%
% -- xchg=claim: a role's step i reads its stage's ticket (after the stage's `full`): the row, and
% -- rank and edges of its part, in place of the block's
% function claim_head(i)
      const i64 tk = tick[$(i) % DEPTH];
      if (tk < 0) break;   // no more parts
      const i64 row = tk / S;
      const u32 rank = (u32)(tk % S);
      const bool edges = rank == 0;
% end
%
% function ring_loader()
  if (warp == 0) {
    for (i64 s = 0; lane32 == 0$(claim and "" or " && s < steps"); s++) {
% if claim then
      if (s >= DEPTH) bar_wait(&empty[s % DEPTH], (u32)(s / DEPTH - 1) & 1);
      const i64 t = (i64)atomicAdd(ticket, 1ull);
      tick[s % DEPTH] = t < rows * S ? t : -1;   // seen by the roles through the stage's `full`
      if (t >= rows * S) {
        bar_arrive(&full[s % DEPTH]);
        break;
      }
% end
      const elem_t *x;
      Geo g;
      int begin, end;
      part(s, &x, &g, &begin, &end);
% if not claim then
      if (s >= DEPTH) bar_wait(&empty[s % DEPTH], (u32)(s / DEPTH - 1) & 1);
% end
      bulk_load(stage(s), $(bw and not both and "dyin + (x - yin)" or "x") + g.h + (i64)begin * VEC, (u32)(end - begin) * $(VB), &full[s % DEPTH]);
% if both then
      bulk_load(stage(s) + RV * VEC, dyin + (x - yin) + g.h + (i64)begin * VEC, (u32)(end - begin) * $(VB), &full[s % DEPTH]);
% end
    }
  } else if (warp <= NR) {
    const int r = threadIdx.x - 32;   // reducer thread r of NR * 32
    for (i64 s = 0;$(claim and "" or " s < steps"); s++) {
% if claim then
      bar_wait(&full[s % DEPTH], (u32)(s / DEPTH) & 1);
% claim_head("s")
% end
      const elem_t *x;
      Geo g;
      int begin, end;
      part(s, &x, &g, &begin, &end);
% if not claim then
      bar_wait(&full[s % DEPTH], (u32)(s / DEPTH) & 1);
% end
      const elem_t *st = stage(s);
% end
%
% function ring_take(n)
      u32 $(both and "wy[" .. n .. "][NW], wd[" .. n .. "][NW]" or "w[" .. n .. "][NW]");   // this thread's vectors of the stage, as loaded
      bar_wait(&full[j % DEPTH], (u32)(j / DEPTH) & 1);   // the $(both and "copies'" or "copy's") bytes, seen by this thread too
      {
        const elem_t *st = stage(j);
        #pragma unroll
% if both then
        for (int i = 0; i < $(n); i++) {
          const int v = q + i * NF * 32;
          if (v < end - begin) {
            ldw<true, false>(st + v * VEC, wy[i]);
            ldw<true, false>(st + (RV + v) * VEC, wd[i]);
          }
        }
% else
        for (int i = 0; i < $(n); i++)
          if (q + i * NF * 32 < end - begin) ldw<true, false>(st + (q + i * NF * 32) * VEC, w[i]);
% end
      }
      __syncwarp();
      if (lane32 == 0) bar_arrive(&empty[j % DEPTH]);
% end
%
% function ring_handover(after_part)   -- after_part(): what a finisher does first in each row
% local ks, kj = claim and "row" or "s", claim and "row" or "j"   -- whose pairs: the row, or the group's step
      __syncwarp();
      if (lane32 == 0) bar_arrive(&empty[s % DEPTH]);   // this warp's reads of the stage are done
      t = warp_reduce(t, $(bw and "OpSum" or "OpMS")());
      if (lane32 == 0) red[s & 1][warp - 1] = t;
      role_sync(1, NR * 32);
      if (r == 0) {
        $(part_t) a = red[s & 1][0];
        for (int w = 1; w < NR; w++) a = $(add("a", "red[s & 1][w]"));
% if claim then
        wait_read(&reads[row % NB], (u32)(row / NB) * S);   // row - NB's pairs all read
% end
        post_part(&xp->part[$(ks) % NB][rank], a, $(ks));
      }
    }
  } else {
    const int fw = warp - 1 - NR, q = threadIdx.x - 32 * (1 + NR);   // finisher warp, thread
    for (i64 j = 0;$(claim and "" or " j < steps"); j++) {
% if claim then
      bar_wait(&full[j % DEPTH], (u32)(j / DEPTH) & 1);
% claim_head("j")
% end
      const elem_t *x;
      Geo g;
      int begin, end;
      part(j, &x, &g, &begin, &end);
% if after_part then after_part() end
      const u64 *parts = xp->part[$(kj) % NB];
      for (int c = fw; c < CHUNKS; c += NF) {
% if claim then
        wait_read(&reads[row % NB], (u32)(row / NB) * S);   // the buffer holds row - NB's pairs or this row's
% end
        const $(part_t) a = fold<(S < 32 ? S : 32)>([&](int i) {
          return c * 32 + i < S ? wait_part(&parts[c * 32 + i], $(kj)) : $(zero);
        });
        if (lane32 == 0) folded[j & 1][c] = a;
      }
      role_sync(2, NF * 32);
% if claim then
      // this part's block has read the row's pairs (their loads have returned: folded above). No
      // fence: one waits for this thread's stores in flight (f32 256x1048576, H100: 0.919 of copy
      // with it, 0.997 without)
      if (q == 0) atomicAdd(&reads[row % NB], 1u);
% end
      $(part_t) all = folded[j & 1][0];
      #pragma unroll
      for (int c = 1; c < CHUNKS; c++) all = $(add("all", "folded[j & 1][c]"));
% end
%
% function ring_depart()
  // the last block of the $(claim and "grid" or "group") out zeroes its pairs and $(claim and "counters" or "counter"): everyone has stopped reading
  __shared__ u32 last;
  __syncthreads();   // every warp is past its last read of `folded`
  if (threadIdx.x == 0) last = atomicAdd(&xg->depart, 1u) == $(claim and "gridDim.x" or "S") - 1;
  __syncthreads();
  if (last) {
    for (int i = threadIdx.x; i < NB * S; i += $(threads)) xp->part[i / S][i % S] = 0;
% if claim then
    if (threadIdx.x < NB) reads[threadIdx.x] = 0;
    if (threadIdx.x == 0) *ticket = 0;
% end
    if (threadIdx.x == 0) atomicExch(&xg->depart, 0u);
  }
% end
