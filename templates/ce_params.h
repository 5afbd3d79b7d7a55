/*
** ce_params.h — the launch arguments of the cross-entropy kernels (templates/ce.cu), passed by
** value after (rows, ws), the width first: one layout for the C side (tuner, runtime) and the kernels, all fields
** 8 or 4 bytes so that x86-64 and the GPU place them alike. Pointers are device addresses.
*/
#ifndef CE_PARAMS_H
#define CE_PARAMS_H

typedef struct CeParams {
  long long cols;               /* the row width (classes, V): the kernels take it here, not baked in */
  long long stride;             /* elements from one row of logits to the next (>= cols) */
  long long ignore;             /* ignore_index: rows with this label have no loss and no gradient */
  unsigned long long weight;    /* float [cols], class weights; 0: none */
  unsigned long long scale;     /* float, the gradient's factor (1 / the mean's divisor); 0: 1 */
  unsigned long long flag;      /* int, set nonzero by a kernel that met a label outside [0, cols) */
  float smoothing;              /* label smoothing (not with weight) */
  float zloss;                  /* z-loss coefficient: zloss * lse^2 is added to each row's loss */
  float softcap;                /* > 0: logits become softcap * tanh(x / softcap) first */
  int labels64;                 /* labels are int64, else int32 */
} CeParams;

#ifdef __CUDACC_RTC__
/* Row `row`'s label (the kernels' and the steps'). */
__device__ __forceinline__ long long label_of(const CeParams &p, const void *labels, long long row)
{
  return p.labels64 ? ((const long long *)labels)[row] : (long long)((const int *)labels)[row];
}
#endif

#endif
