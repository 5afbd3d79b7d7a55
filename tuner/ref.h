/*
** ref.h — the float64 reference on the CPU, and the check of an output against it by the rule of
** templates/verify.h (the GPU check kernel, templates/check.cu, applies the same rule; the tests
** hold the two to each other).
*/
#ifndef TUNE_REF_H
#define TUNE_REF_H

#include <stddef.h>
#include <stdint.h>

typedef struct tune_Check {
  int64_t checked, bad, bad_sums;
  int64_t first_bad;        /* flat index, -1 if none */
  double max_err;           /* largest |out - ref| in ulps of the dtype at ref (0.5: rounding) */
  double max_sumdev;        /* largest |row sum - sum of the rounded reference| */
} tune_Check;

/* Element i of a buffer of dtype, as a double; and the reverse, rounding to nearest even. */
double tune_load(const void *buf, int dtype, int64_t i);
void tune_store_elem(void *buf, int dtype, int64_t i, double v);
/* The bits outputs are filled with before a run: a NaN of dtype that no arithmetic produces. */
uint32_t tune_poison(int dtype);
/* The raw bits of element i of buf (dtype), to spot the poison left where nothing was written. */
uint32_t tune_bits_of(const void *buf, int dtype, int64_t i);
/* The spacing of dtype's values at |v|: its ulp, or the subnormal quantum. */
double tune_ulp(double v, int dtype);
/* The reference for one row, in float64 with torch's semantics: a NaN, an all -inf row or a
** +inf makes the whole row NaN. */
void tune_ref_row(const double *x, int64_t cols, int op, double *ref);
/* Check rows [r0, r1) of out (dtype) against the reference from x (dtype) by the rule of
** templates/verify.h; adds into c. */
void tune_check_rows(const void *x, const void *out, int dtype, int op, int64_t cols, int64_t r0, int64_t r1,
                     uint32_t poison, tune_Check *c);

/* The backward ops (op GEN_SOFTMAX_BW, GEN_LOG_SOFTMAX_BW): the reference dx of one row from
** y and dy, in float64 (a NaN in the row's sum makes the row NaN, as torch); and the check of
** rows [r0, r1) of dx against it by verify.h's vr_bounds_bw; adds into c. */
void tune_ref_row_bw(const double *y, const double *dy, int64_t cols, int op, double *ref);
void tune_check_rows_bw(const void *y, const void *dy, const void *dx, int dtype, int op, int64_t cols, int64_t r0,
                        int64_t r1, uint32_t poison, tune_Check *c);

/* The cross-entropy ops (GEN_CE, GEN_CE_LOSS; templates/ce.cu has the math): the options of a
** row's reference, as the kernels' CeParams gives them but on the host. */
typedef struct tune_CeRef {
  int64_t ignore;           /* ignore_index */
  double smoothing, zloss, softcap;   /* softcap 0: none */
  double scale;             /* the gradient's factor (1: none) */
  const float *weight;      /* class weights [cols], or NULL */
} tune_CeRef;
/* One row's float64 reference from the logits x (as loaded) and label y: loss, lse and, when dx
** is not NULL, the gradient. An ignored row: loss 0, dx 0; a label outside [0, cols) that is
** not ignore_index: loss NaN, dx 0. */
void tune_ref_row_ce(const double *x, int64_t cols, int64_t y, const tune_CeRef *o, double *dx, double *loss, double *lse);
/* Check rows [r0, r1) of the gradient dx (dtype, contiguous; NULL for the loss-only op), loss and
** lse (float) from x (dtype) and labels (int64 if labels64, else int32) by verify.h's vr_ce_*
** rule, as st_check_ce (templates/ce_aux.cu) does: bad counts gradient elements, bad_sums rows
** whose loss or lse is off, max_sumdev the largest |loss - reference| of a labelled row. */
void tune_check_rows_ce(const void *x, const void *labels, int labels64, const void *dx, const float *loss, const float *lse,
                        int dtype, int64_t cols, int64_t r0, int64_t r1, const tune_CeRef *o, uint32_t poison, tune_Check *c);

/* attention_softmax (GEN_ATTN; templates/attn.cu has the math, attn_mask.h the masks): a row's
** launch block, mask kind (GEN_MASK_*) and, on the host, the key lengths [B] (padding), ALiBi
** slopes [H] (NULL: no ALiBi) and the bias tensor (NULL: none; indexed by the block's strides
** with attn_mask.h's am_bias_row). */
#include "attn_params.h"
typedef struct tune_AttnRef {
  AttnParams p;
  int mask;
  const int *lengths;
  const float *slopes;
  const float *bias;
} tune_AttnRef;
/* Row `row`'s float64 reference from its inputs x (as loaded): masked elements and scores of
** -inf 0, a row seeing no finite score 0, a NaN or +inf score the row NaN. */
void tune_ref_row_attn(const double *x, int64_t cols, int64_t row, const tune_AttnRef *o, double *ref);
/* Check rows [r0, r1) of out (dtype) against it by verify_attn.h's rule, as st_check_attn does:
** masked elements exactly 0, visible ones within their bounds; adds into c (no row sums). */
void tune_check_rows_attn(const void *x, const void *out, int dtype, int64_t cols, int64_t r0, int64_t r1,
                          const tune_AttnRef *o, uint32_t poison, tune_Check *c);
/* attention_softmax_backward (GEN_ATTN_BW; templates/attn_bw.cu): row `row`'s float64 dx from
** its inputs as loaded (x NULL without a softcap; o->slopes unused: no bias), masked elements 0;
** and rows [r0, r1) of dx checked by verify_attn_bw.h's rule, as st_check_attn_bw does (masked
** elements exactly 0, visible ones within their bounds), into c. */
void tune_ref_row_attn_bw(const double *x, const double *y, const double *dy, int64_t cols, int64_t row, const tune_AttnRef *o,
                          double *ref);
void tune_check_rows_attn_bw(const void *x, const void *y, const void *dy, const void *dx, int dtype, int64_t cols, int64_t r0,
                             int64_t r1, const tune_AttnRef *o, uint32_t poison, tune_Check *c);

#endif
