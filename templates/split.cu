// split.cu — the split family (split>1, sm_90+): one row spread over a thread-block cluster of
// `split` blocks. Each block reduces its part of the row, the blocks swap their (max, sum)
// through distributed shared memory, then each block normalizes its own part.
// Knobs: threads, split (blocks per row = cluster size), items, vec, reduce,
//        passes (1: the part is held in registers, one read; 2: an online pass over the part,
//        then a second read that mostly hits L2), hold (reg | none).
// Regime: long rows and few rows (32x16384, 2048x128256, 256x1048576): a handful of rows
//         still fill the GPU, and a row is read from DRAM once where it fits across the cluster.
% team = threads
% include("common.cu")
#define S $(split)
#define CV $(CV)

__device__ __forceinline__ u32 cluster_rank()
{
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// The (max, sum) that block `rank` of this cluster posted in its copy of `part`.
__device__ __forceinline__ MS remote_part(const MS *part, u32 rank)
{
  u64 generic = (u64)part, local;
  u32 remote;
  MS r;
  asm volatile("cvta.to.shared.u64 %0, %1;" : "=l"(local) : "l"(generic));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"((u32)local), "r"(rank));
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(r.m), "=f"(r.s) : "r"(remote) : "memory");
  return r;
}

extern "C" __global__ void __launch_bounds__($(threads))
$(kernel)(const elem_t *in, elem_t *out, i64 rows)
{
  __shared__ MS part;
  const u32 rank = cluster_rank();
  const int lane = threadIdx.x;
  const bool edges = rank == 0;   // block 0 also owns the row's unaligned head and tail
  const i64 nclusters = gridDim.x / S;
  for (i64 row = blockIdx.x / S; row < rows; row += nclusters) {
    const elem_t *x = in + row * COLS;
    elem_t *y = out + row * COLS;
    const Geo g = geometry(x);
    const int begin = min((int)rank * CV, g.nv), end = min(begin + CV, g.nv);
    MS t = { NEG_INF, 0.f };
% if EDGE > 0 then
    float e[EDGE];
    edge_load(x, g, lane, edges, e);
% end
% if hold == "reg" then
    float v[ITEMS * VEC];
    load_step(x + g.h, begin, end, lane, true, v);
    t.m = max_of<ITEMS * VEC>(v, t.m);
%   if EDGE > 0 then
    t.m = max_of<EDGE>(e, t.m);
%   end
    t.m = group_reduce(t.m, OpMax());
    t.s = exp_sum<ITEMS * VEC, $(op == "softmax")>(v, t.m);
%   if EDGE > 0 then
    t.s += exp_sum<EDGE, false>(e, t.m);
%   end
    t.s = group_reduce(t.s, OpSum());
% else
    t = online_stats(x + g.h, begin, end, lane, true);
%   if EDGE > 0 then
    { MS te = { max_of<EDGE>(e, NEG_INF), 0.f }; te.s = exp_sum<EDGE, false>(e, te.m); t = combine(t, te); }
%   end
    t = group_reduce(t, OpMS());
% end
    // every block posts its part; all blocks fold the parts in the same order, so agree exactly
    if (threadIdx.x == 0) part = t;
    cluster_arrive();
    cluster_wait();
    MS all = { NEG_INF, 0.f };
    #pragma unroll
    for (int r = 0; r < S; r++) all = combine(all, remote_part(&part, r));
    cluster_arrive();   // done reading parts; the matching wait comes before part is rewritten
    const float k = row_k(all);
% if EDGE > 0 then
    finish_all<EDGE>(e, all.m, k);
    edge_store(y, g, lane, edges, e);
% end
% if hold == "reg" then
%   if op == "softmax" then
    // v holds exp(x - t.m): rescale to the row's max and sum
    const float scale = ex(t.m, all.m) * k;
    #pragma unroll
    for (int i = 0; i < ITEMS * VEC; i++) v[i] *= scale;
%   else
    finish_all<ITEMS * VEC>(v, all.m, k);
%   end
    store_step(y + g.h, begin, end, lane, true, v);
% else
    normalize(x + g.h, y + g.h, begin, end, lane, true, all.m, k);
% end
    cluster_wait();
  }
}
