/*
** vocab.h — the vocab-parallel steps' arguments (st_vocab_parallel_step) checked and laid out for their
** kernels (templates/ce_vocab.cu, in the dtype's cross-entropy steps module). docs/linear-cross-entropy.md.
*/
#ifndef VOCAB_H
#define VOCAB_H

#include <stddef.h>

#include "softmax_tune.h"
#include "ce_params.h"
#include "vocab_params.h"

#define VOCAB_NSTEPS 5

/* The kernel of each st_vocab_step, by name. */
extern const char *const vocab_kernel[VOCAB_NSTEPS];

/* a's fields for step checked (each pointer the step reads or writes set and aligned, the shard
** within its classes, the options in range) and laid out in *out: 0, or 1 with err naming the
** bad field and its value. es: the logits' element size. */
int vocab_params(int step, int es, const st_vocab_args *a, VpParams *out, char *err, size_t errlen);

/* The grid of step's launch (blocks of 256 threads) for sms SMs. */
unsigned vocab_blocks(int step, const st_vocab_args *a, int sms);

#endif
