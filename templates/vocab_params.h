/*
** vocab_params.h — the launch argument of the vocab-parallel steps (templates/ce_vocab.cu), passed
** by value: one layout for the runtime and the kernels, all fields 8 bytes (CeParams' 4-byte ones
** pair up) so that x86-64 and the GPU place them alike. Pointers are device addresses.
*/
#ifndef VOCAB_PARAMS_H
#define VOCAB_PARAMS_H

typedef struct VpParams {
  CeParams ce;                   /* cols: the shard's classes; weight: float [total]; flag; the options */
  long long rows;                /* N */
  long long start, total;        /* the shard holds classes [start, start + ce.cols) of total */
  long long world;               /* the ranks: the gathered statistics are [world][rows][k] */
  unsigned long long logits;     /* elem [rows][ce.stride] */
  unsigned long long labels;     /* int32 or int64 [rows] (ce.labels64), global classes */
  unsigned long long grad;       /* elem [rows][ce.cols] */
  unsigned long long lse_local;  /* float [rows]: the shard's loss-only kernel's lse */
  unsigned long long loss_local; /* float [rows]: its loss (label smoothing 1: lse - mean z) */
  unsigned long long stats;      /* float [rows][k], k = 2 + (smoothing > 0): this rank's; gathered */
  unsigned long long lse, loss;  /* double [rows]: the row's lse over every shard, its loss */
  unsigned long long sg;         /* double [1], or [rows] (sg_rows): the loss's gradient factor */
  unsigned long long w;          /* float [rows]: a, the kernel's class weights (one class a row) */
  unsigned long long delta;      /* float [rows]: label smoothing's term a row */
  unsigned long long a;          /* double [rows]: the softmax term's factor on this shard */
  unsigned long long saved;      /* float [2][rows]: x[i][i % cols], x[i][label] before the kernel */
  unsigned long long lab;        /* int [rows]: i % cols, the gradient kernel's labels */
  long long sg_rows;             /* sg holds one value a row */
} VpParams;

#endif
