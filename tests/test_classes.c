/*
** test_classes.c — width classes (docs/width-classes.md), without a GPU:
**   - gen_width_class: every width in exactly one class, the class holds it, widths up to 64
**     alone, above them 8 classes an octave (less than 12.5% apart), the last class ending at
**     2^31 - 1; and the templates agree (a problem of each sampled width renders);
**   - one kernel a class: for each op family, the configs of a problem at one width of a class
**     render, at every other sampled width of the class, to the same source and launch, with
**     COLS the kernel's argument (softmax ops) or its parameter block's field (cross-entropy,
**     attention; the attention forward's held to the class's ends, a one-width class's a
**     literal); the space is checked and sized for the class, not the width: a config valid at
**     the class's widest row is valid at its narrowest;
**   - the tuner's own kernels (fill, check) still bake the width they verify.
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"

static gen_State *g;

static void test_rule(void)
{
  static const int64_t probe[] = { 1, 2, 63, 64, 65, 72, 73, 100, 127, 128, 129, 1000, 1024, 1025, 2000, 2048, 3000, 4096,
                                   32000, 50257, 128256, 262147, 1048576, 1048577, 0x7fffffff };
  for (size_t i = 0; i < sizeof probe / sizeof *probe; i++) {
    int64_t w = probe[i], lo, hi, lo2, hi2;
    gen_width_class(w, &lo, &hi);
    CHECK(lo <= w && w <= hi && lo >= 1 && hi <= 0x7fffffff, "%lld in %lld..%lld", (long long)w, (long long)lo, (long long)hi);
    CHECK(w > 64 || (lo == w && hi == w), "%lld: a class of its own, got %lld..%lld", (long long)w, (long long)lo, (long long)hi);
    CHECK(w <= 64 || (hi - lo + 1) * 8 <= lo, "%lld: %lld..%lld is wider than an eighth of its narrowest", (long long)w,
          (long long)lo, (long long)hi);
    gen_width_class(lo, &lo2, &hi2);   /* its ends are in it: the classes tile the widths */
    CHECK(lo2 == lo && hi2 == hi, "%lld's class %lld..%lld, its low end's %lld..%lld", (long long)w, (long long)lo,
          (long long)hi, (long long)lo2, (long long)hi2);
    gen_width_class(hi, &lo2, &hi2);
    CHECK(lo2 == lo && hi2 == hi, "%lld's class %lld..%lld, its high end's %lld..%lld", (long long)w, (long long)lo,
          (long long)hi, (long long)lo2, (long long)hi2);
    if (hi < 0x7fffffff) {
      gen_width_class(hi + 1, &lo2, &hi2);
      CHECK(lo2 == hi + 1, "%lld: the next class starts at %lld, not %lld", (long long)w, (long long)lo2, (long long)hi + 1);
    }
    char cfg[256];
    gen_Problem p = { .rows = 4, .cols = w, .dtype = GEN_F32, .op = GEN_SOFTMAX, .arch = 90 };
    CHECK(gen_heuristic(g, &p, 0, cfg, sizeof cfg) == 0, "the templates refuse width %lld: %s", (long long)w, gen_error(g));
  }
  int64_t lo, hi;
  gen_width_class(0x7fffffff, &lo, &hi);
  CHECK(hi == 0x7fffffff, "the last class ends at %lld", (long long)hi);
}

/* The configs of p (at its class's high end) render alike at each width of ws. */
static void one_kernel(gen_Problem p, const int64_t *ws, int nw, const char *argument)
{
  char **list;
  int n = 0;
  CHECK(gen_space(g, &p, &list, &n) == 0 && n > 0, "space of %lldx%lld %s: %s", (long long)p.rows, (long long)p.cols,
        gen_op_name(p.op), gen_error(g));
  for (int i = 0; i < n; i += n / 12 + 1) {
    gen_Kernel k0;
    if (gen_render(g, &p, list[i], &k0)) { CHECK(0, "%s: %s", list[i], gen_error(g)); continue; }
    CHECK(strstr(k0.source, argument) != NULL, "%s %s: COLS is not '%s'", gen_op_name(p.op), list[i], argument);
    for (int j = 0; j < nw; j++) {
      gen_Problem q = p;
      gen_Kernel k;
      q.cols = ws[j];
      if (gen_render(g, &q, list[i], &k)) {
        CHECK(0, "%s valid at %lld but not at %lld of its class: %s", list[i], (long long)p.cols, (long long)q.cols, gen_error(g));
        continue;
      }
      CHECK(strcmp(k.source, k0.source) == 0 && memcmp(&k.launch, &k0.launch, sizeof k.launch) == 0,
            "%s %s: width %lld renders another kernel than %lld", gen_op_name(p.op), list[i], (long long)q.cols, (long long)p.cols);
      gen_kernel_free(&k);
    }
    gen_kernel_free(&k0);
  }
  gen_free_list(list, n);
}

static void test_one_kernel(void)
{
  static const int64_t c3072[] = { 2817, 2818, 2900, 3000, 3071 }, c128k[] = { 122881, 128000, 128256, 131071 },
                       c1m[] = { 983041, 1000003, 1048575 }, c200[] = { 193, 199, 207 };
  gen_Problem p = { .rows = 300, .cols = 3072, .dtype = GEN_BF16, .op = GEN_SOFTMAX, .arch = 90 };
  one_kernel(p, c3072, 5, "#define COLS cols\n");
  p.op = GEN_LOG_SOFTMAX_BW, p.dtype = GEN_F16;
  one_kernel(p, c3072, 5, "#define COLS cols\n");
  p.rows = 16, p.cols = 131072, p.op = GEN_SOFTMAX, p.dtype = GEN_F32;   /* split rows: clusters, global, the ring */
  one_kernel(p, c128k, 4, "#define COLS cols\n");
  p.rows = 8, p.cols = 1048576, p.dtype = GEN_BF16;
  one_kernel(p, c1m, 3, "#define COLS cols\n");
  p.rows = 4096, p.cols = 131072, p.op = GEN_CE, p.dtype = GEN_BF16;
  one_kernel(p, c128k, 4, "#define COLS p.cols\n");
  p.op = GEN_CE_LOSS;
  one_kernel(p, c128k, 4, "#define COLS p.cols\n");
  /* the attention forward's width held to its class (the compiler then knows its range); a
  ** class of one width its literal */
  static const char attn_cols[] = "#define COLS ((i64)min(max((int)p.cols, 193), 208))\n";
  gen_Problem a = { .rows = 8 * 208, .cols = 208, .dtype = GEN_BF16, .op = GEN_ATTN, .arch = 90, .mask = GEN_MASK_CAUSAL };
  one_kernel(a, c200, 3, attn_cols);
  a.op = GEN_ATTN_BW, a.mask = GEN_MASK_PADDING;
  one_kernel(a, c200, 3, "#define COLS p.cols\n");
  a.op = GEN_ATTN, a.bias = GEN_BIAS_ALIBI, a.mask = GEN_MASK_CAUSAL_WINDOW;
  one_kernel(a, c200, 3, attn_cols);
  a.cols = 64, a.rows = 8 * 64, a.bias = GEN_BIAS_NONE, a.mask = GEN_MASK_CAUSAL;
  one_kernel(a, NULL, 0, "#define COLS 64\n");
}

/* The tuner's fill and check kernels are compiled for the one width they verify. */
static void test_aux(void)
{
  gen_Problem p = { .rows = 300, .cols = 3000, .dtype = GEN_BF16, .op = GEN_SOFTMAX, .arch = 90 };
  char *src = NULL;
  CHECK(gen_aux(g, &p, "aux", &src) == 0 && src && strstr(src, "#define COLS 3000\n"), "aux: %s", src ? "no COLS 3000" : gen_error(g));
  free(src);
}

int main(void)
{
  char err[1024];
  if (gen_open(&g, NULL, err, sizeof err)) {
    CHECK(0, "%s", err);
    return check_done("test_classes");
  }
  test_rule();
  test_one_kernel();
  test_aux();
  gen_close(g);
  return check_done("test_classes");
}
