/*
** kset.c — the kernel set beside the library (kset.h): the file found and mapped, a record
** found, the row bands.
*/
#include "kset.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(kset_Record) == 512, "a set's records are 512 bytes on every host");
_Static_assert(sizeof(kset_Header) == 256, "a set's header is 256 bytes");

/* Where the many-row band starts, for rows of a class whose widest row is hi elements of dtype.
** Loss-only rows of 64 KB and more: 1024. They ran faster at 1451-3708 rows with the many-row band's
** kernel (two reads) than with the middle band's (chosen for 512 rows: a row held over a cluster of
** 8-16 blocks): 0.97-1.21 of a tune against 0.68-1.00, 5 of 6 problems, and 0.97 against 1.00 at
** bf16 3439x50257 (H200, 2026-11-29, lab/shapes/untuned-short-20261201.txt).
** The attention forward's 16-bit rows of 129-2048 vectors (keys 1025-16384): where the middle
** band's kernel (space_attn.lua decode_fwd: G = 128-1024 threads a row, the fewest holding 2
** vectors a thread) would run 160K threads or more, 163840 / G rows. Its 1-2 vectors a thread
** won up to 139K threads (0.82-0.96 of a tune against 0.78-0.91) and lost from 200K (0.48-0.86
** against 0.73-1.01 for the many-row band's 4-8 a thread): 42 problems of 192-3696 rows, H200,
** 2026-11-29, lab/shapes/attn-decode-band-2026121[01].txt and -20261209.txt.
** A softcap's backward likewise (space_attn.lua capped_bw; 2026-11-29, lab/shapes/
** attn-bw-softcap-decode-20261250.txt: its group won under the end, tied or lost past it).
** The forward's rows of 16385-32768 keys: 256, 4096 under a softcap (capped). Under 256 rows (a softcap's:
** 4096) the row held in 1024 threads, the band under 64 rows' kernel, ran 0.81-0.91 of a tune
** where two reads of 512, the middle band's kernel before (chosen for 512 rows), ran 0.65-0.87
** (8 of 9 problems better, geomean 0.88 against 0.76); at 256-304 rows it lost 4% at one and won
** 3% at the other, a softcap's at 480 and 872 rows 0.94 and 0.93 against 0.85 and 0.91 (H200,
** 2026-11-29, lab/shapes/attn-decode-long-band-20261229.txt).
** Cross-entropy rows of 1025 classes to 64 KB without a softcap, both ops: 1024. At 1024-4095 rows the
** many-row band's kernel (chosen for 16384 rows: the row in one block) ran 0.942 of a tune against
** the middle band's 0.837 (a cluster of 2 or two reads, chosen for 512 rows), 12 problems out of
** sample (H200, 2026-11-30, lab/shapes/ce-middle-band-check-20261334.txt; fitted on -20261333.txt). */
static int64_t many_rows(int op, int dtype, int capped, int64_t hi)
{
  const int64_t bytes = hi * gen_dtype_size(dtype);
  if (op == GEN_CE_LOSS && bytes >= 65536) return 1024;
  if ((op == GEN_CE || op == GEN_CE_LOSS) && !capped && hi > 1024 && bytes < 65536) return 1024;
  if ((op == GEN_ATTN || (op == GEN_ATTN_BW && capped)) && gen_dtype_size(dtype) == 2 && bytes > 2048 && bytes <= 32768) {
    int64_t g = 128;   /* decode_fwd's group of bytes / 16 vectors (space_attn.lua decode_group) */
    while (g < 1024 && (bytes / 16 + g - 1) / g > 2) g *= 2;
    return 163840 / g;
  }
  if (op == GEN_ATTN && gen_dtype_size(dtype) == 2 && bytes > 32768 && bytes <= 65536) return capped ? 4096 : 256;
  return 4096;
}

int kset_band(int op, int dtype, int capped, int64_t rows, int64_t hi)
{
  return rows < 64 && hi * gen_dtype_size(dtype) >= 8192 ? 0 : rows < many_rows(op, dtype, capped, hi) ? 1 : 2;
}

int64_t kset_band_rows(int op, int dtype, int capped, int band, int64_t hi)
{
  const int64_t many = many_rows(op, dtype, capped, hi);
  return band == 0 ? 16 : band == 1 ? (many / 2 < 512 ? many / 2 : 512) : hi * gen_dtype_size(dtype) < 256 ? 65536 : 16384;
}

const char *kset_band_name(int op, int dtype, int capped, int band, int64_t hi, char *buf, size_t n)
{
  snprintf(buf, n, "%s%lld", band < 2 ? "<" : ">=", band == 0 ? 64LL : (long long)many_rows(op, dtype, capped, hi));
  return buf;
}

int kset_key_problem(const gen_Problem *p, gen_Problem *key)
{
  int64_t lo, hi;
  gen_width_class(p->cols, &lo, &hi);
  const int band = kset_band(p->op, p->dtype, p->capped, p->rows, hi);
  *key = *p;
  key->rows = kset_band_rows(p->op, p->dtype, p->capped, band, hi), key->cols = hi;
  return band;
}

int kset_map(const char *path, kset_Set *s, char *err, size_t errlen)
{
  struct stat st;
  void *p = MAP_FAILED;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  memset(s, 0, sizeof *s);
  if (fd < 0 || fstat(fd, &st) || (p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
    snprintf(err, errlen, "cannot read the kernel set '%s': %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return 1;
  }
  close(fd);
  const size_t n = (size_t)st.st_size;
  const kset_Header *h = p;
  const kset_Record *r = (const kset_Record *)((const char *)p + sizeof *h);
  int bad = n < sizeof *h || memcmp(h->magic, KSET_MAGIC, 8) || h->record_size != sizeof *r ||
            h->count > (n - sizeof *h) / sizeof *r;
  for (uint32_t i = 0; !bad && i < h->count; i++) bad = r[i].offset > n || r[i].size > n - r[i].offset;
  if (bad) {
    munmap(p, n);
    return snprintf(err, errlen, "'%s' is not a kernel set of this softmax-tune (damaged, or of another version)", path), 1;
  }
  *s = (kset_Set){ h, r, p, n, "" };
  snprintf(s->path, sizeof s->path, "%s", path);
  return 0;
}

void kset_unmap(kset_Set *s)
{
  if (s->base) munmap((void *)s->base, s->size);
  memset(s, 0, sizeof *s);
}

static kset_Set the_set;
static const char *the_why = "no kernel set";
static char the_err[512];

/* The folder of the library or program holding this code, into dir (0 when found). */
static int own_dir(char *dir, size_t n)
{
  Dl_info info;
  if (!dladdr((void *)kset_get, &info) || !info.dli_fname || !strchr(info.dli_fname, '/')) return 1;
  snprintf(dir, n, "%s", info.dli_fname);
  *strrchr(dir, '/') = '\0';
  return 0;
}

static void find_set(void)
{
  const char *env = getenv("SOFTMAX_TUNE_KERNELS");
  char dir[4096], path[4200];
  if (env && !strcmp(env, "none")) return (void)(the_why = "no kernel set ($SOFTMAX_TUNE_KERNELS is none)");
  if (env && *env) {
    if (kset_map(env, &the_set, the_err, sizeof the_err)) the_why = the_err;
    return;
  }
  if (own_dir(dir, sizeof dir)) return;
  const char *const where[] = { "%s/" KSET_FILE, "%s/../lib/" KSET_FILE, "%s/../" KSET_FILE };   /* the last: a build's tests/ */
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, where[i], dir);
    if (access(path, R_OK) == 0) {
      if (kset_map(path, &the_set, the_err, sizeof the_err)) the_why = the_err;
      return;
    }
  }
  snprintf(the_err, sizeof the_err, "no kernel set beside %s (" KSET_FILE ")", dir);
  the_why = the_err;
}

const kset_Set *kset_get(const char **why)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, find_set);
  if (why) *why = the_set.h ? "" : the_why;
  return the_set.h ? &the_set : NULL;
}

int kset_compare(const void *a, const void *b)
{
  const kset_Record *x = a, *y = b;
  const int64_t u[] = { x->arch, x->dtype, x->op, x->mask, x->bias, x->btype, x->capped, x->band, x->hi },
                v[] = { y->arch, y->dtype, y->op, y->mask, y->bias, y->btype, y->capped, y->band, y->hi };
  for (int i = 0; i < 9; i++)
    if (u[i] != v[i]) return u[i] < v[i] ? -1 : 1;
  return 0;
}

static const kset_Record *search(const kset_Record *r, int n, const kset_Record key)
{
  int lo = 0, up = n;
  while (lo < up) {   /* the records are sorted by key */
    int mid = lo + (up - lo) / 2;
    int c = kset_compare(&r[mid], &key);
    if (c == 0) return &r[mid];
    if (c < 0) lo = mid + 1;
    else up = mid;
  }
  return NULL;
}

const kset_Record *kset_find(const kset_Record *r, int n, int arch, int dtype, int op, int mask, int bias, int capped, int band,
                             int64_t hi)
{
  return search(r, n, (kset_Record){ .arch = arch, .dtype = dtype, .op = op, .mask = mask, .bias = bias, .capped = capped,
                                     .band = band, .hi = hi });
}

const kset_Record *kset_stand_in(const kset_Record *r, int n, int arch, const gen_Problem *p)
{
  return search(r, n, (kset_Record){ .arch = arch, .dtype = p->dtype, .op = p->op, .mask = p->mask, .bias = p->bias,
                                     .btype = p->bias_type, .capped = p->capped != 0, .hi = KSET_ANY });
}

int kset_arch_for(const kset_Record *r, int n, int arch)
{
  int best = 0;
  for (int i = 0; i < n; i++)   /* few archs, sorted: a step per record is cheap enough once a context */
    if (r[i].arch / 10 == arch / 10 && r[i].arch <= arch && r[i].arch > best) best = r[i].arch;
  return best;
}

void kset_launch(const kset_Record *r, gen_Launch *l)
{
  *l = (gen_Launch){ r->launch[0], r->launch[1], r->launch[2], r->launch[3], r->launch[4], r->launch[5], r->launch[6],
                     r->launch[7], r->launch[8] };
}

void kset_set_launch(kset_Record *r, const gen_Launch *l)
{
  const int32_t v[9] = { l->threads, l->rows_per_block, l->blocks_per_row, l->cluster, l->smem, l->coop, l->workspace,
                         l->ws_groups, l->op };
  memcpy(r->launch, v, sizeof v);
}
