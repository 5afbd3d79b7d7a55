% -- cluster.cu — a split row's blocks as one thread-block cluster (xchg=dsmem, sm_90+) that swap
% -- their parts' reductions through distributed shared memory: each block writes its part's into
% -- a slot of its own, a cluster barrier, then every thread reads all S blocks' slots and folds
% -- them in one fixed order (every block gets the same bits): the backward ops' one sum
% -- (backward.cu, attn_bw.cu). Needs S, the blocks a row.

__device__ __forceinline__ void cluster_sync()
{
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The sum of `slot` over the cluster's S blocks, in one fixed order: every thread of every
// block gets the same bits.
__device__ __forceinline__ float cluster_sum(float *slot)
{
  const int lane = threadIdx.x % 32;
  float v = 0.f;
  if (lane < S) {
    u32 a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"((u32)__cvta_generic_to_shared(slot)), "r"(lane));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
  }
  return lanes_reduce<32>(v, OpSum());
}
