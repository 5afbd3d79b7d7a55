/*
** attn_params.h — the launch arguments of the attention_softmax kernels (templates/attn.cu) and
** of the tuner's kernels for them (attn_aux.cu), passed by value after (rows, ws), the width first: one layout for
** the C side (tuner, runtime) and the kernels, all fields 8 or 4 bytes so that x86-64 and the
** GPU place them alike. Pointers are device addresses. The scores are [B, H, Q, K] viewed as
** rows = B*H*Q rows of K = cols; which of the fields a kernel reads its mask and bias kinds say
** (knobs, attn_mask.h).
*/
#ifndef ATTN_PARAMS_H
#define ATTN_PARAMS_H

typedef struct AttnParams {
  long long cols;                   /* K, the row width: the kernels take it here, not baked in */
  unsigned long long key_lengths;   /* int [B]: mask padding, row's batch sees keys [0, length); 0: none */
  unsigned long long slopes;        /* float [H]: bias alibi, -slope[h] * |q + offset - k| added; 0: none */
  unsigned long long bias;          /* [B or 1, H or 1, Q or 1, K] of the kernel's bias_type: bias tensor, added; 0: none */
  long long bias_sb, bias_sh, bias_sq;   /* its strides in elements (0: broadcast); the key's is 1 */
  long long q;                      /* Q, rows per (batch, head) */
  long long h;                      /* H, heads */
  long long offset;                 /* causal: query q sees keys k <= q + offset (K - Q by default) */
  long long window;                 /* window masks: and keys k >= q + offset - window (>= 0) */
  float scale;                      /* scores are scale * x first */
  float softcap;                    /* > 0: then softcap * tanh(z / softcap); 0: none */
  long long order;                  /* the rows' order (am_row): 0 as stored, else a broadcast bias's
                                    ** sharers adjacent */
} AttnParams;

#endif
