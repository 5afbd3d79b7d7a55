// split.cu — the split family (split>1): one row spread over `split` blocks. Each block reduces
// its part of the row to a (max, sum) pair, the blocks swap their pairs, then each block
// normalizes its own part. xchg=dsmem: the blocks are a thread-block cluster and swap through
// distributed shared memory (sm_90+, split <= 16), flat: every warp (reduce=shfl; the block's
// pair with reduce=smem) writes its pair into a slot of every block by a remote store that
// completes on that block's mbarrier, every warp waits on its own block's mbarrier and folds all
// the slots: no block-wide reduction and no cluster barrier stand between the loads and the
// outputs (one cluster barrier before the first post, so no block posts into a block whose
// barriers are not set up yet).
// xchg=global: any split; the grid is persistent and cooperative (all its blocks resident, so
// waiting for a row's other blocks cannot deadlock), pairs go through a workspace in global
// memory, double-buffered by row, each pair one 8-byte word tagged with its row, so a block
// waits on the pairs themselves: no counter, no fence. The last block out (a departure counter)
// zeroes the group's pairs for the next launch. The counters of every group sit at the front of
// the workspace, at the same place whatever the split, so kernels of any config can share one
// workspace that stays zeroed.
// Knobs: threads, split, xchg, items, vec, reduce, hint,
//        passes (1: the part is held in registers, one read; 2: an online pass over the part,
//        then a second read that mostly hits L2), hold (reg | packed | pipe | none | mix): packed
//        holds raw 16-bit words (f16, bf16: twice the part fits); pipe also loads
//        the block's part of its next row while the blocks swap pairs, so DRAM keeps busy;
//        mix (passes=2) holds the part's last ITEMS vectors per thread and reads the rest twice;
//        ahead (xchg=global) is mix with the next row's streamed pass run while the pairs travel;
//        ring (xchg=global, passes=1, sm_90+): warps in three roles over a ring of DEPTH stages
//        in shared memory: a bulk copy of each row's part, reducers that post the block's pair,
//        finishers that wait for the row's pairs and write it out (see below).
// Regime: long rows and few rows (32x16384, 2048x128256, 256x1048576): a handful of rows
//         still fill the GPU, and a row is read from DRAM once where it fits across the cluster;
//         ring: many long rows (256x1048576), a block per SM, no block waiting on its row's slowest.
% -- xchg=claim (hold=ring only; a Lua comment, so the other kernels' text stays as it was): the
% -- ring's blocks do not own parts; each claims its next (row, rank) from a ticket counter when
% -- a stage frees, so a block on a slower SM takes fewer parts (blocks owning parts b, b+G, ...
% -- end at the slowest SM's pace: 3-4% of a copy on an H100, lab/ringcopy.cu). Pairs go to
% -- NB = 32 buffers by row; a row's buffer is posted to and read only once the row NB back has
% -- been read by all its parts. The grid is every resident block (132, not split=32's 128).
% team = threads
% include("common.cu")
% -- the pieces the backward ops' ring shares (mbarriers, the workspace's tagged words, fold, the
% -- ring's roles and loader) are ring.cu's, emitted by its functions (not a comment of the kernel's:
% -- the kernels' text stays as it was before they moved, and the default table with it)
% include("ring.cu")
#define S $(split)

% if hold == "ring" or xchg == "dsmem" then
% ring_barriers(xchg == "dsmem" and "cluster" or "cta")   -- dsmem: the bytes come from other blocks of the cluster
% end

% if xchg == "dsmem" then
%   -- early: the barriers are set up once the first row's loads are issued, so that the setup (a
%   -- fence, a cluster arrive and wait) runs while they are in flight: f32 32x16384's last block
%   -- stores 190 ns sooner. Not where a 16-bit load unpacks into floats as it is made (reg, pipe):
%   -- the warp would stall on the loads before the barrier, and the wait would come after them
%   early = hold == "packed" or es == 4 and (hold == "reg" or hold == "pipe")
// an arrive that orders nothing but the mbarrier inits before it (fence.mbarrier_init)
__device__ __forceinline__ void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// This block's pair barriers set up and the cluster told; with wait, also until every block of
// the cluster has done so (no block may post into one whose barriers are not set up yet).
__device__ __forceinline__ void cluster_start(u64 *got, bool wait)
{
  if (threadIdx.x < 2) bar_init(&got[threadIdx.x], 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  cluster_arrive_relaxed();
  if (wait) cluster_wait();
}

// Pairs posted per block: one per warp, or the block's one after a shared-memory tree.
#define POSTS $(reduce == "shfl" and threads // 32 or 1)

// t into `slot` of block `rank` of this cluster by a remote store that completes its 8 bytes
// on that block's barrier `got` (the same offsets in every block's copy): no cluster barrier.
__device__ __forceinline__ void post_remote(MS *slot, u64 *got, u32 rank, MS t)
{
  u32 rs, rb;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rs) : "r"(smem_addr(slot)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(smem_addr(got)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];"
               :: "r"(rs), "r"(__float_as_uint(t.m)), "r"(__float_as_uint(t.s)), "r"(rb) : "memory");
}
% else
% ring_words()
% end

% ring_fold()
% if hold == "pipe" then

// This block's part of the row at x into v (pipe: a row ahead of the one being finished).
__device__ __forceinline__ void load_part(const elem_t *x, i64 n, u32 rank, int lane, held_t *v)
{
  Geo g;
  int begin, end;
  part_of(x, n, rank, &g, &begin, &end);
  hold_load<true>(x + g.h, begin, end, lane, true, v);
}
% end

% if hold == "mix" or hold == "ahead" then
// hold=mix's split of a block's part of the row at x: streamed [begin, mid), held [mid, end).
__device__ __forceinline__ void shares(const elem_t *x, i64 n, u32 rank, Geo *g, int *begin, int *mid, int *end)
{
  part_of(x, n, rank, g, begin, end);
  *mid = max(*begin, *end - ITEMS * TEAM);
}

// The held share [mid, end) of the body into v, with the edges e, and the thread's (max, sum)
// over them combined with `rest`, the streamed share's; *held gets the pair v is relative to.
__device__ __forceinline__ MS held_share(const elem_t *body, int mid, int end, int lane, held_t *v, float *e, MS rest,
                                         MS *held)
{
  hold_load<true>(body, mid, end, lane, true, v);
  *held = hold_pair(v, e);
  return combine(rest, *held);
}
% end
% if xchg == "global" then

// Warp 0 waits for the pairs of row k and folds them; the block takes the result. With more
// pairs than lanes, warp c folds pairs 32c.. (one a lane) and the chunks are combined in order:
// a lane that waited for pair i and then i + 32 paid a round trip to L2 for the second, however
// early it landed (f16 1x1000000 split=64, H100: the whole wait is ~0.85 us of a 7.7 us kernel).
__device__ __forceinline__ MS group_pairs(const u64 *parts, u64 k)
{
% if split > 32 then
  __shared__ MS folded[S / 32];
  for (int c = threadIdx.x / 32; c < S / 32; c += $(threads // 32)) {
    const MS a = fold<32>([&](int i) { return wait_part(&parts[c * 32 + i], k); });
    if (threadIdx.x % 32 == 0) folded[c] = a;
  }
  __syncthreads();
  MS all = folded[0];
  #pragma unroll
  for (int c = 1; c < S / 32; c++) all = combine(all, folded[c]);
  return all;
% else
  __shared__ MS folded;
  if (threadIdx.x < 32) {
    const MS a = fold<S>([&](int r) { return wait_part(&parts[r], k); });
    if (threadIdx.x == 0) folded = a;
  }
  __syncthreads();
  return folded;
% end
}

// The row count k goes on, but after the block's last fold of pairs (last) thread 0 counts the
// block out of the group instead: k then holds the count before it, looked at only by depart()
// at the kernel's end, so the count's round trip overlaps the block's stores (in k's register:
// a register of its own would stay live across them, and spill where registers are tight).
__device__ __forceinline__ void next_row(u32 &k, bool last, Count *xg)
{
  if (last && threadIdx.x == 0) k = atomicAdd(&xg->depart, 1u);
  else k++;
}

// The group's last block out (every block counted itself out after its last read of the
// pairs) zeroes them and the count for the next launch. A block without rows never counted:
// its k is 0, never S - 1.
__device__ __forceinline__ void depart(Count *xg, Parts *xp, u32 k)
{
  if (threadIdx.x < 32 && __shfl_sync(~0u, k, 0) == S - 1) {
    for (int i = threadIdx.x; i < NB * S; i += 32) xp->part[i / S][i % S] = 0;
    if (threadIdx.x == 0) atomicExch(&xg->depart, 0u);
  }
}
% end

% if hold == "ring" then
// hold=ring: a block's warps in three roles over a ring of DEPTH stages in shared memory, each
// stage a block's part of one row. Warp 0 (one lane) copies each row's part into a free stage
// with one bulk copy (TMA) that completes on the stage's `full` barrier; NR reducer warps reduce
// a full stage to the block's pair and post it; the other warps wait for the row's pairs,
// normalize the stage into the output. Each reducer and finisher warp marks the stage free on
// its `empty` barrier once done reading it. So the loads run DEPTH rows ahead, and waiting for
// a row's slowest block stalls no load and no reduction.
% -- EARLY (3 stages): a finisher copies its vectors of the stage into registers and frees the
% -- stage before it waits for the row's pairs (a Lua comment: other kernels' text stays as it was)
% ring_defs()
// The max of m and the stage's vectors r, r + NR*32, ... below n (a reducer's share); 16-bit
// values by pairs of the raw words, unpacked once at the end.
__device__ __forceinline__ float stage_max(const elem_t *st, int r, int n, float m)
{
% if es == 2 then
  u32 mw = NEG_WORD, w[NW];
  for (int v = r; v < n; v += NR * 32) {
    ldw<true, false>(st + v * VEC, w);
    #pragma unroll
    for (int i = 0; i < NW; i++) mw = max2(mw, w[i]);
  }
  float f[PER_WORD];
  unpack(mw, f);
  return max_of<PER_WORD>(f, m);
% else
  float f[VEC];
  for (int v = r; v < n; v += NR * 32) {
    ldv<true, false>(st + v * VEC, f);
    m = max_of<VEC>(f, m);
  }
  return m;
% end
}

%   if EARLY then
#define FV ((RV + NF * 32 - 1) / (NF * 32))   // a finisher's vectors of a part, at most
%   end
% ring_tail()
% end
extern "C" __global__ void __launch_bounds__($(threads)$(minb > 1 and ", " .. minb or ""))
$(kernel)(const elem_t *in, elem_t *out, i64 rows, i64 cols, void *ws)
{
  const u32 rank = blockIdx.x % S;   // a cluster's blocks are consecutive: this is its rank
  const int lane = threadIdx.x;
  const bool edges = rank == 0;      // block 0 also owns the row's unaligned head and tail
  const i64 ngroups = gridDim.x / S;
% if xchg == "dsmem" then
  // the row's pairs from every block of the cluster, by row parity, each buffer with the barrier
  // its remote stores complete on. A block posts row k+2 only after every block posted row k+1,
  // which each warp does after it folded row k: a buffer is never written while it is read.
  __shared__ MS slots[2][S * POSTS];
  __shared__ __align__(8) u64 got[2];
%   if not early then
  cluster_start(got, false);
%   end
  u32 k = 0;
% else
% ring_groups()
%   if hold ~= "ring" then
  u32 k = 0;   // rows done; a u32 wraps in step with the NB = 2 buffers
%   end
% end
% if hold == "pipe" then
  held_t v[HELD];   // the first row's part; each later one is prefetched
  if ((i64)(blockIdx.x / S) < rows) load_part(in + (i64)(blockIdx.x / S) * COLS, COLS, rank, lane, v);
% end
% if hold == "ring" then
% ring_setup()
% ring_loader()
%   -- ring_loader() ends in a reducer's loop at row s's stage st; ring_handover() posts the
%   -- block's pair t and goes on into a finisher's loop, up to row j's pair `all`
      float f[VEC], e = edges && r < 32 ? edge_in(x, g, r) : NEG_INF;
      MS t;
      t.m = stage_max(st, r, end - begin, e);
      t.s = exp_sum<1, false>(&e, t.m);
      // a max of -inf: every value is -inf, and the sum 0
      for (int v = r; t.m != NEG_INF && v < end - begin; v += NR * 32) {
        ldv<true, false>(st + v * VEC, f);
        t.s += exp_sum<VEC, false, true>(f, t.m);
      }
% ring_handover(EARLY and function() ring_take("FV") end)
      const float k = row_k(all);
      elem_t *y = out + $(xchg == "claim" and "row" or "(first + j * ngroups)") * COLS;
      if (edges && q < 32) {
        const float e = edge_in(x, g, q);   // read again: in == out is allowed
        if (q < g.h + g.t) store1(y + edge_pos(g, q), finish(e, all.m, k));
      }
%   if not EARLY then
      bar_wait(&full[j % DEPTH], (u32)(j / DEPTH) & 1);   // the copy's bytes, seen by this thread too
      const elem_t *st = stage(j);
      elem_t *yb = y + g.h + (i64)begin * VEC;
      float f[VEC];
      for (int v = q; v < end - begin; v += NF * 32) {
        ldv<true, false>(st + v * VEC, f);
        finish_all<VEC>(f, all.m, k);
        stv<false>(yb + (i64)v * VEC, f);
      }
      __syncwarp();
      if (lane32 == 0) bar_arrive(&empty[j % DEPTH]);
%   else
      elem_t *yb = y + g.h + (i64)begin * VEC;
      #pragma unroll
      for (int i = 0; i < FV; i++) {
        const int v = q + i * NF * 32;
        if (v < end - begin) {
          float f[VEC];
          #pragma unroll
          for (int n = 0; n < NW; n++) unpack(w[i][n], f + n * PER_WORD);
          finish_all<VEC>(f, all.m, k);
          stv<false>(yb + (i64)v * VEC, f);
        }
      }
%   end
    }
  }
% elseif hold == "ahead" then
  // mix a row ahead: the next row's streamed share is read while this row's pairs travel; its
  // held share and its post follow this row's output, so a block posts row k+1 only after it
  // read row k's pairs, and two pair buffers still suffice
  i64 row = blockIdx.x / S;
  held_t v[HELD];
  float e[EDGE_SLOTS];
  MS held;
  // each step works the geometry of its row out again: carried across the loop, it costs
  // registers (96 instead of 63 for 512 threads, one block per SM fewer)
  auto stream = [&](const elem_t *x) {
    Geo g;
    int begin, mid, end;
    shares(x, COLS, rank, &g, &begin, &mid, &end);
    return online_stats(x + g.h, begin, mid, lane, true);
  };
  // the held share and edges of the row at x (its streamed share's pair is `rest`), then post
  auto hold_and_post = [&](const elem_t *x, MS rest, u64 kk) {
    Geo g;
    int begin, mid, end;
    shares(x, COLS, rank, &g, &begin, &mid, &end);
    edge_load(x, g, lane, edges, e);
    const MS t = group_reduce(held_share(x + g.h, mid, end, lane, v, e, rest, &held), OpMS());
    if (threadIdx.x == 0) post_part(&xp->part[kk % NB][rank], t, kk);
  };
  if (row < rows) hold_and_post(in + row * COLS, stream(in + row * COLS), 0);
  for (; row < rows; row += ngroups) {
    const bool more = row + ngroups < rows;
    const elem_t *const nx = in + (row + ngroups) * COLS;
    MS ahead = { NEG_INF, 0.f };
    if (more) ahead = stream(nx);
    const MS all = group_pairs(xp->part[k % NB], k);
    next_row(k, !more, xg);
    const elem_t *x = in + row * COLS;
    elem_t *y = out + row * COLS;
    Geo g;
    int begin, mid, end;
    shares(x, COLS, rank, &g, &begin, &mid, &end);
    normalize(x + g.h, y + g.h, begin, mid, lane, true, all.m, row_k(all));
    hold_out(y, g, mid, end, lane, true, edges, v, e, held, all);
    if (more) hold_and_post(nx, ahead, k);
  }
% else
  for (i64 row = blockIdx.x / S; row < rows; row += ngroups) {
    const elem_t *x = in + row * COLS;
    elem_t *y = out + row * COLS;
    Geo g;
    int begin, end;
% if hold == "mix" then
    int mid;
    shares(x, COLS, rank, &g, &begin, &mid, &end);
% else
    part_of(x, COLS, rank, &g, &begin, &end);
% end
    float e[EDGE_SLOTS];
    edge_load(x, g, lane, edges, e);
% if hold == "reg" or hold == "packed" then
    held_t v[HELD];
    hold_load<true>(x + g.h, begin, end, lane, true, v);
% end
% if xchg == "dsmem" and early then
    if (k == 0) cluster_start(got, true);   // the first row's loads are in flight meanwhile
% end
% if hold == "mix" then
    // the part's last ITEMS*TEAM vectors are held; those before them are streamed now, read
    // again after the swap (from L2: the rows in flight keep only that much between passes)
    held_t v[HELD];
    MS held;
    const MS mine = held_share(x + g.h, mid, end, lane, v, e, online_stats(x + g.h, begin, mid, lane, true), &held);
% elseif hold ~= "none" then
    const MS mine = hold_pair(v, e);
% else
    const MS mine = with_edges(online_stats(x + g.h, begin, end, lane, true), e);
% end
% if xchg == "dsmem" then
%   if reduce == "shfl" then
    const MS t = warp_reduce(mine, OpMS());
%   else
    const MS t = group_reduce(mine, OpMS());
%   end
%   if not early then
    if (k == 0) cluster_wait();   // every block of the cluster has started
%   end
    // the row's bytes may land before this expect (the tx-count runs below zero until it): the
    // phase still cannot complete without this thread's arrival. Arming earlier, or a release
    // arrive at the start, measured 3-7% slower (a release waits for the thread's stores)
    if (threadIdx.x == 0) bar_expect(&got[k & 1], S * POSTS * 8);
    if (threadIdx.x % 32 < S && threadIdx.x < 32 * POSTS)
      post_remote(&slots[k & 1][rank * POSTS + threadIdx.x / 32], &got[k & 1], threadIdx.x % 32, t);
% else
    const MS t = group_reduce(mine, OpMS());
    u64 *const parts = xp->part[k % NB];
    if (threadIdx.x == 0) post_part(&parts[rank], t, k);
% end
% if hold == "pipe" then
    held_t nxt[HELD];   // the next row's part, in flight while the other blocks arrive
    if (row + ngroups < rows) load_part(x + ngroups * COLS, COLS, rank, lane, nxt);
% end
% if xchg == "dsmem" then
    bar_wait(&got[k & 1], (k >> 1) & 1);   // every pair of the row is in
    const MS all = fold<S * POSTS>([&](int r) { return slots[k & 1][r]; });
    k++;
% else
    const MS all = group_pairs(parts, k);
    next_row(k, row + ngroups >= rows, xg);
% end
% if hold == "mix" then
    normalize(x + g.h, y + g.h, begin, mid, lane, true, all.m, row_k(all));
    hold_out(y, g, mid, end, lane, true, edges, v, e, held, all);
% elseif hold ~= "none" then
    hold_out(y, g, begin, end, lane, true, edges, v, e, mine, all);
% end
% if hold == "pipe" then
    #pragma unroll
    for (int i = 0; i < HELD; i++) v[i] = nxt[i];
% elseif hold == "none" then
    normalize(x + g.h, y + g.h, begin, end, lane, true, all.m, edges_out(y, g, lane, edges, e, all));
% end
  }
% end
% if hold == "ring" then
% ring_depart()
% elseif xchg == "global" then
  depart(xg, xp, k);
% end
}
