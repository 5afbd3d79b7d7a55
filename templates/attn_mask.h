/*
** attn_mask.h — which keys a row of attention scores sees, and its ALiBi anchor: in one place for
** the kernels (attn.cu), the tuner's check and floor kernels (attn_aux.cu) and the CPU check
** (tuner/ref_attn.c). Plain C that CUDA also compiles: AM_FN is `__device__` there. Needs
** attn_params.h.
**
** Row r of rows = B*H*Q is query q = r % Q of head h = (r / Q) % H of batch b = r / (Q*H); its
** diagonal is d = q + offset. It sees keys [lo, hi):
**   none           [0, K)
**   causal         [0, d + 1)
**   window         [d - window, K)             (a left width; with causal, FlashAttention's
**   causal_window  [d - window, d + 1)          window_size (window, 0))
**   padding        [0, key_lengths[b])
** and padding with the others (padding_causal, padding_window, padding_causal_window): their
** range with hi at most key_lengths[b]. A kind is a set of bits (causal 1, window 2, padding 4).
** Clamped to [0, K]; hi <= lo sees nothing: the row is written as zeros.
*/
#ifndef ATTN_MASK_H
#define ATTN_MASK_H

#ifndef AM_FN
#define AM_FN static inline
#endif
#ifdef __CUDACC__
#define AM_NEG_INF __int_as_float(0xff800000)
#else
#define AM_NEG_INF (-INFINITY)   /* math.h's */
#endif

/* mask kinds, as GEN_MASK_* in generator/gen.h: sets of these bits */
enum { AM_NONE, AM_CAUSAL = 1, AM_WINDOW = 2, AM_PADDING = 4 };

/* Row `row`'s visible keys [*lo, *hi) of cols, for mask kind `mask` (lengths: the key lengths,
** for padding); returns its diagonal d. */
AM_FN long long am_range(int mask, const AttnParams *p, const int *lengths, long long cols, long long row, long long *lo,
                         long long *hi)
{
  const long long d = row % p->q + p->offset;
  long long a = 0, b = cols;
  if (mask & AM_CAUSAL) b = d + 1;
  if (mask & AM_WINDOW) a = d - p->window;
  if (mask & AM_PADDING) {
    const long long n = lengths[row / p->q / p->h];
    b = n < b ? n : b;
  }
  a = a < 0 ? 0 : a > cols ? cols : a;
  b = b < a ? a : b > cols ? cols : b;
  *lo = a, *hi = b;
  return d;
}

/* Where row `row`'s part of the bias tensor starts (attn_params.h: strides in elements). */
AM_FN long long am_bias_row(const AttnParams *p, long long row)
{
  return row / p->q / p->h * p->bias_sb + row / p->q % p->h * p->bias_sh + row % p->q * p->bias_sq;
}

/* The order a kernel takes rows in when a bias tensor is broadcast over batches or heads (strides
** sb, sh of 0; its rows then shared by B or H score rows, far apart as stored): those sharing a
** bias row made adjacent, so that it is read from DRAM once while the L2 holds it. 0: as stored
** (no broadcast, or over queries only: sharers adjacent already); 1: (h, q, b) over batches; 2:
** (b, q, h) over heads; 3: (q, b, h) over both. */
AM_FN int am_order(long long sb, long long sh, long long sq, long long B, long long H)
{
  const int overb = sb == 0 && B > 1, overh = sh == 0 && H > 1;
  return sq == 0 ? 0 : overb && overh ? 3 : overb ? 1 : overh ? 2 : 0;
}

/* The stored row of the i-th of rows = B*H*Q rows in order p->order (am_order). */
AM_FN long long am_row(const AttnParams *p, long long i, long long rows)
{
  const long long q = p->q, h = p->h, b = rows / q / h;
  switch (p->order) {
  case 1: return (i % b * h + i / b / q) * q + i / b % q;
  case 2: return (i / h / q * h + i % h) * q + i / h % q;
  case 3: return (i / h % b * h + i % h) * q + i / h / b;
  default: return i;
  }
}

/* The tuner's inputs besides the scores (attn_aux.cu fills them, the CPU counts by them): batch
** b's key length, every length of 0..cols met over the batches (0: fully masked rows, cols: none
** masked), and head h's ALiBi slope 2^(-8 (h + 1) / H), as the ALiBi paper's. */
AM_FN int am_fill_length(long long b, long long cols)
{
  const unsigned long long z = (unsigned long long)b * 0x9e3779b97f4a7c15ull;
  return b == 0 ? (int)cols : b == 1 ? 0 : (int)((z >> 33) % (unsigned long long)(cols + 1));
}

/* The key lengths the tuner times by (verifying by am_fill_length's): a spread over [cols/4, cols],
** as users' padded batches and the benchmark's draws, batch b's at the fraction 1/2 + b * 0.618..
** (mod 1) of it, so one batch is at its middle (5 cols / 8) and more fill it evenly. */
AM_FN int am_time_length(long long b, long long cols)
{
  const unsigned long long u = (0x80000000ull + (unsigned long long)b * 0x9e3779b9ull) & 0xffffffffull;
  return (int)(cols / 4 + (long long)(((unsigned long long)(cols - cols / 4) * u) >> 32));
}

AM_FN float am_fill_slope(long long h, long long heads) { return (float)exp2(-8. * (double)(h + 1) / (double)heads); }

/* And element i of its bias tensor [Q, K] (broadcast over B and H): multiples of 1/64 in [-4, 4),
** -inf one time in 8 and throughout query row 1 (a row that sees nothing). */
AM_FN float am_fill_bias(long long i, long long cols)
{
  const unsigned long long z = ((unsigned long long)i + 1) * 0xd1b54a32d192ed03ull;
  return i / cols == 1 || (z >> 61) == 0 ? AM_NEG_INF : (float)((long long)((z >> 40) % 512) - 256) / 64.f;
}

#endif
