/*
** ref.h — the float64 reference on the CPU, and the tolerances every check uses (the GPU check
** kernel, templates/check.cu, applies the same rule; the tests hold the two to each other).
*/
#ifndef TUNE_REF_H
#define TUNE_REF_H

#include <stddef.h>
#include <stdint.h>

typedef struct tune_Tol {
  double rtol, atol;        /* element: |out - ref| <= rtol*|ref| + atol */
  double stol;              /* row: |sum - 1| <= stol (sum of exp(out) for log_softmax) */
} tune_Tol;

typedef struct tune_Check {
  int64_t checked, bad, bad_sums;
  int64_t first_bad;        /* flat index, -1 if none */
  double max_err, max_sumdev;
} tune_Check;

tune_Tol tune_tolerance(int dtype, int op, int64_t cols);
/* Element i of a buffer of dtype, as a double; and the reverse, rounding to nearest even. */
double tune_load(const void *buf, int dtype, int64_t i);
void tune_store_elem(void *buf, int dtype, int64_t i, double v);
/* The reference for one row, in float64 with torch's semantics: a NaN, an all -inf row or a
** +inf makes the whole row NaN. */
void tune_ref_row(const double *x, int64_t cols, int op, double *ref);
/* Check rows [r0, r1) of out (dtype) against the reference from x (dtype); adds into c. */
void tune_check_rows(const void *x, const void *out, int dtype, int op, int64_t cols, int64_t r0, int64_t r1,
                     uint32_t poison, tune_Check *c);

#endif
