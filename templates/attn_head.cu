% -- attn_head.cu — what both attention kernels (attn.cu, attn_bw.cu) start with: the common
% -- pieces for a group of G threads a row, the launch block, the masks (attn_mask.h), R rows a
% -- block and the mask kind as a constant (so a kind's kernel has no code of the others').
% team = G
% include("common.cu")
% include("attn_params.h")
#define AM_FN __device__ __forceinline__
% include("attn_mask.h")
#define R $(R)
#define MASK $(({ none = 0, causal = 1, window = 2, causal_window = 3, padding = 4 })[mask])

// The body vectors from `base` (vector base + i*TEAM + lane in slot i) that hold a visible key of
// [lo, hi) get v (SEEN), or those that hold none get 0 (!SEEN). The zeros go out as soon as the
// loads are issued, before the row's reduction, so they overlap the reads: half of a causal
// row's writes.
template <bool SEEN>
__device__ __forceinline__ void store_vis(elem_t *y, Geo g, int base, int end, int lane, bool live, int lo, int hi,
                                          const float *v)
{
  const float zero[VEC] = {};
  #pragma unroll
  for (int i = 0; i < ITEMS; i++) {
    const int j = base + i * TEAM + lane, c0 = g.h + j * VEC;
    if (live && j < end && (c0 < hi && c0 + VEC > lo) == SEEN) stv<false>(y + c0, SEEN ? v + i * VEC : zero);
  }
}
