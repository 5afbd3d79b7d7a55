% -- attn_head.cu — what both attention kernels (attn.cu, attn_bw.cu) start with: the common
% -- pieces for a group of G threads a row, the launch block, the masks (attn_mask.h), R rows a
% -- block and the mask kind as a constant (so a kind's kernel has no code of the others').
% team = G
% include("common.cu")
% include("attn_params.h")
#define AM_FN __device__ __forceinline__
% include("attn_mask.h")
#define R $(R)
#define MASK $((mask:find("causal") and 1 or 0) + (mask:find("window") and 2 or 0) + (mask:find("padding") and 4 or 0))
