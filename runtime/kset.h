/*
** kset.h — the kernel set: kernels compiled when the library is built (`softmax-tune kernels
** --build`, run by CMake), one per (arch, op, dtype, mask and bias kinds, width class, row band),
** so that a problem nobody tuned loads a cubin on its first call instead of compiling one.
**
** A set is one file, softmax_tune.kernels, installed beside the library: a header, the index
** (fixed-size records sorted by key) and the cubins, mapped into memory once a process. Each
** record names its config and where it came from (a tuned table's entry, or the rule), so
** `softmax-tune kernels` can list what a build carries. docs/kernel-set.md.
*/
#ifndef KSET_H
#define KSET_H

#include <stddef.h>
#include <stdint.h>

#include "gen.h"

#define KSET_MAGIC "stkset3\n"
#define KSET_NBANDS 3

/* A record of the index: 512 bytes, the same on every 64-bit little-endian host. capped: a
** softcap's kernel (a source of its own: cross-entropy's; attention's in a set built --all). A
** cross-entropy record of class 0..0 holds the dtype's steps (ce_steps.cu: st_ce_count,
** st_ce_reduce, st_ce_scale): KSET_STEPS. A record of class 1..KSET_ANY is an attention kind's
** stand-in (btype: its bias tensor's type, gen_Problem.bias_type): one kernel of every width,
** run while the kind's own kernel compiles in the background (kset_stand_in). */
typedef struct kset_Record {
  int32_t arch, dtype, op, mask, bias, band, capped, btype;
  int64_t lo, hi;                 /* the width class */
  int32_t launch[9];              /* gen_Launch: threads, rows_per_block, blocks_per_row, cluster, smem, coop, workspace, ws_groups, op */
  int32_t regs;                   /* registers a thread (ptxas) */
  uint64_t offset, size;          /* the cubin, from the start of the set */
  char name[64];                  /* the kernel's entry point */
  char config[192];
  char source[152];               /* "rule", or the table entry it was adapted from */
} kset_Record;

typedef struct kset_Header {
  char magic[8];
  uint32_t count, record_size;
  char templates[64];             /* the templates' hash (hex, no NUL): the set is theirs alone */
  char made[176];                 /* NVRTC version and archs: what built it */
} kset_Header;

/* The row band of a problem of op and dtype (its rows, its class's widest row hi): a config is
** chosen for the band's typical row count. Few rows (under 64) are a band of their own only where a
** row is wide enough (8 KB) to be split over blocks; narrower, they join the middle band. The
** many-row band starts at 4096 rows; at 1024 for cross_entropy_loss rows of 64 KB or more, and at
** 160-1280 for the attention forward's 16-bit rows of 1025-16384 keys, at 256 for its rows of
** 16385-32768 keys without a softcap (capped: a softcap's kernel; kset.c: many_rows). */
int kset_band(int op, int dtype, int capped, int64_t rows, int64_t hi);
/* The row count the set's config of band b is chosen for: the middle band's 512 (or half its end,
** where it ends under 1024 rows); the many-row band's 16384, 65536 for rows under 256 bytes (a
** problem of 16384 of them is bound by its launch), so their blocks are sized for the long
** problems. kset_band_name: its rows as text ("<4096") in buf. */
int64_t kset_band_rows(int op, int dtype, int capped, int band, int64_t hi);
const char *kset_band_name(int op, int dtype, int capped, int band, int64_t hi, char *buf, size_t n);
/* The problem an untuned kernel of p's key (arch, op, dtype, kinds, width class, row band) is
** chosen for: p with the band's rows and the class's widest row, so that the first shape of a key
** does not decide the kernel of the others. The set's builder, the runtime, `explain` and the fast
** sweep all choose for it. Returns the band. */
int kset_key_problem(const gen_Problem *p, gen_Problem *key);

#define KSET_FILE "softmax_tune.kernels"

typedef struct kset_Set {
  const kset_Header *h;
  const kset_Record *r;
  const unsigned char *base;      /* the file's bytes: a record's cubin is at base + offset */
  size_t size;
  char path[4096];
} kset_Set;

/* The set file at path, mapped and checked whole (header, records, every cubin inside): 0, or 1
** with err. */
int kset_map(const char *path, kset_Set *s, char *err, size_t errlen);
void kset_unmap(kset_Set *s);

/* The set of this process, mapped once: $SOFTMAX_TUNE_KERNELS (a file; "none": no set), else
** KSET_FILE in the folder of the library or program this code is in, its ../lib or its ..; NULL
** when there is none; *why (may be NULL) then says so. */
const kset_Set *kset_get(const char **why);

/* The order of the records (qsort's comparison): by arch, dtype, op, mask, bias, btype, capped, band, class. */
int kset_compare(const void *a, const void *b);

/* The record of key (arch, dtype, op, mask, bias, capped, band, class hi; bias type float32) in
** records[0..n): NULL when the set lacks it. */
const kset_Record *kset_find(const kset_Record *r, int n, int arch, int dtype, int op, int mask, int bias, int capped, int band,
                             int64_t hi);
#define KSET_STEPS 0              /* hi of the cross-entropy steps' record (band 0, capped 0) */
#define KSET_ANY INT64_MAX        /* hi of a stand-in's record (band 0, lo 1): every width */
/* The stand-in of attention problem p's kinds (its bias type too) in records[0..n) of arch, or NULL. */
const kset_Record *kset_stand_in(const kset_Record *r, int n, int arch, const gen_Problem *p);

/* The set's arch that runs on a GPU of arch `arch`: the highest of the set of the same major
** version not above it (an sm_80 cubin runs on sm_86 and sm_89), else 0. */
int kset_arch_for(const kset_Record *r, int n, int arch);

/* A launch from a record, and back. */
void kset_launch(const kset_Record *r, gen_Launch *l);
void kset_set_launch(kset_Record *r, const gen_Launch *l);

#endif
