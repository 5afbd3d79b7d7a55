// fill.cu — random inputs for verification and timing, drawn on the GPU from a seed so every
// check gets fresh data cheaply. Row kinds mix ordinary logits, wide rows where most exps
// underflow, large magnitudes (|x| ~ 1000) and large offsets (x ~ +-1e4, where x - max must
// be taken before exp). With `specials`, rows 1..3 hold the edge cases: some -inf, all -inf
// (torch gives NaN), and one NaN (the whole row NaN). Rendered inside aux.cu.

__device__ __forceinline__ u64 mix(u64 z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The row's hash, from which its kind and every element follow.
__device__ __forceinline__ u64 row_hash(u64 seed, i64 r) { return mix(seed ^ mix((u64)r + 0x9e3779b97f4a7c15ull)); }

// Element c of row r (hash hr): its kind's scale and offset, and the specials.
__device__ __forceinline__ float logit(u64 hr, i64 r, i64 c, int specials)
{
  const int kind = (int)(hr % 8);
  const float scale = kind <= 2 ? 3.f : kind == 3 ? 12.f : kind == 4 ? 40.f : kind == 5 ? 1000.f : 4.f;
  const float offset = kind == 6 ? 1e4f : kind == 7 ? -1e4f : 0.f;
  const u64 h = mix(hr + (u64)c);
  const float u = (float)(h >> 40) * (2.f / 16777216.f) - 1.f;   // uniform in [-1, 1)
  float v = offset + scale * u;
  if (specials && r == 1 && (h & 3) == 0) v = NEG_INF;
  if (specials && r == 2) v = NEG_INF;
  if (specials && r == 3 && c == (i64)(hr % COLS)) v = __int_as_float(0x7fc00000);
  return v;
}

extern "C" __global__ void __launch_bounds__(256)
st_fill(elem_t *x, i64 rows, u64 seed, int specials)
{
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const u64 hr = row_hash(seed, r);
    for (i64 c = threadIdx.x; c < COLS; c += blockDim.x) store1(x + r * COLS + c, logit(hr, r, c, specials));
  }
}
