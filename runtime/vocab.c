/*
** vocab.c — the vocab-parallel steps' arguments checked and laid out (vocab.h).
*/
#include "vocab.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

const char *const vocab_kernel[VOCAB_NSTEPS] = { "st_vp_stats", "st_vp_loss", "st_vp_weights", "st_vp_rescale", "st_vp_fix" };

static const char *const step_name[VOCAB_NSTEPS] = { "STATS", "LOSS", "WEIGHTS", "RESCALE", "FIX" };

/* A pointer a step reads or writes: its field's name, value and element alignment. */
typedef struct Ptr { const char *name; const void *p; unsigned align; } Ptr;

/* The first of l[0..n) that is NULL or misaligned, by name (why says which); NULL when none. */
static const char *bad_ptr(const Ptr *l, int n, char *why, size_t len)
{
  for (int i = 0; i < n; i++)
    if (!l[i].p || (uintptr_t)l[i].p % l[i].align) {
      snprintf(why, len, "%s is %s", l[i].name, l[i].p ? "not aligned to its elements" : "NULL");
      return l[i].name;
    }
  return NULL;
}

/* The pointers step reads or writes, into l; how many. */
static int step_ptrs(int step, int es, const st_vocab_args *a, Ptr *l)
{
  const int smooth = a->label_smoothing > 0.f;
  int n = 0;
#define P(f, al) l[n++] = (Ptr){ #f, (const void *)a->f, al }
  P(labels, a->label_type == ST_I64 ? 8 : 4);
  if (step == ST_VOCAB_STATS) { P(logits, es); P(lse_local, 4); P(stats, 4); if (smooth) P(loss_local, 4); }
  if (step == ST_VOCAB_LOSS) { P(stats, 4); P(lse, 8); P(loss, 8); }
  if (step == ST_VOCAB_WEIGHTS) {
    P(logits, es); P(lse_local, 4); P(lse, 8); P(sg, 8); P(a, 8); P(w, 4); P(saved, 4);
    if (smooth) P(delta, 4); else P(lab, 4);
  }
  if (step == ST_VOCAB_RESCALE) { P(grad, es); P(w, 4); P(delta, 4); if (a->softcap > 0.f) P(logits, es); }
  if (step == ST_VOCAB_FIX) { P(grad, es); P(lse_local, 4); P(sg, 8); P(a, 8); P(saved, 4); }
#undef P
  return n;
}

/* The options and the shard's extent, checked: NULL, or what is wrong. */
static const char *bad_shape(const st_vocab_args *a, char *why, size_t len)
{
  if (a->rows < 1 || a->cols < 1 || a->cols > INT32_MAX)
    return snprintf(why, len, "rows %lld and cols %lld must be >= 1 (cols < 2^31)", (long long)a->rows, (long long)a->cols), why;
  if (a->start < 0 || a->total < a->cols || a->start > a->total - a->cols)
    return snprintf(why, len, "the shard [%lld, %lld) is not within the %lld classes", (long long)a->start,
                    (long long)(a->start + a->cols), (long long)a->total), why;
  if (a->world < 1) return snprintf(why, len, "world %lld must be >= 1", (long long)a->world), why;
  if (a->label_type != ST_I32 && a->label_type != ST_I64) return snprintf(why, len, "bad label_type %d", (int)a->label_type), why;
  if (!(a->label_smoothing >= 0.f && a->label_smoothing <= 1.f) || !(a->z_loss >= 0.f && isfinite(a->z_loss)) ||
      !(a->softcap >= 0.f && isfinite(a->softcap)))
    return snprintf(why, len, "label_smoothing %g, z_loss %g, softcap %g out of range", a->label_smoothing, a->z_loss,
                    a->softcap), why;
  if (a->label_smoothing > 0.f && a->weight) return snprintf(why, len, "label smoothing with class weights"), why;
  return NULL;
}

int vocab_params(int step, int es, const st_vocab_args *a, VpParams *out, char *err, size_t errlen)
{
  char why[256];
  Ptr l[16];
  if (step < 0 || step >= VOCAB_NSTEPS) return snprintf(err, errlen, "st_vocab_parallel_step: bad step %d", step), 1;
  if (!a) return snprintf(err, errlen, "st_vocab_parallel_step: args is NULL"), 1;
  if (bad_shape(a, why, sizeof why) || bad_ptr(l, step_ptrs(step, es, a, l), why, sizeof why))
    return snprintf(err, errlen, "st_vocab_parallel_step %s: %s", step_name[step], why), 1;
  if (step == ST_VOCAB_RESCALE && a->softcap > 0.f && a->grad == a->logits)
    return snprintf(err, errlen, "st_vocab_parallel_step RESCALE: grad in place of the logits under a softcap"), 1;
  *out = (VpParams){ .ce = { a->cols, a->cols, a->ignore_index, (uintptr_t)a->weight, 0, (uintptr_t)a->bad_label,
                             a->label_smoothing, a->z_loss, a->softcap, a->label_type == ST_I64 },
                     .rows = a->rows, .start = a->start, .total = a->total, .world = a->world,
                     .logits = (uintptr_t)a->logits, .labels = (uintptr_t)a->labels, .grad = (uintptr_t)a->grad,
                     .lse_local = (uintptr_t)a->lse_local, .loss_local = (uintptr_t)a->loss_local,
                     .stats = (uintptr_t)a->stats, .lse = (uintptr_t)a->lse,
                     .loss = (uintptr_t)a->loss, .sg = (uintptr_t)a->sg, .w = (uintptr_t)a->w,
                     .delta = (uintptr_t)a->delta, .a = (uintptr_t)a->a, .saved = (uintptr_t)a->saved,
                     .lab = (uintptr_t)a->lab, .sg_rows = a->sg_rows != 0 };
  return 0;
}

unsigned vocab_blocks(int step, const st_vocab_args *a, int sms)
{
  const int64_t want = step == ST_VOCAB_RESCALE ? a->rows : (a->rows + 255) / 256, most = (int64_t)sms * 8;
  return (unsigned)(want < most ? want : most);
}
