/*
** test_knobs.c — each knob changes the emitted code the way it claims, read from the PTX
** NVRTC assembles the cubin from (loads are inline PTX, so one load in the PTX is one load
** instruction). The SASS check (16-byte LDG, no local memory) runs on the device.
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"

static gen_State *g;

static int count(const char *text, const char *needle)
{
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* PTX of config for rows x cols of dtype/op on sm_90; NULL (and a failed check) on error. */
static char *ptx_of(int64_t cols, int dtype, int op, const char *config)
{
  gen_Problem p = { .rows = 1024, .cols = cols, .dtype = dtype, .op = op, .arch = 90 };
  gen_Kernel k;
  gen_Cubin c;
  char err[1024];
  if (gen_render(g, &p, config, &k)) {
    CHECK(0, "%s: %s", config, gen_error(g));
    return NULL;
  }
  int rc = gen_compile(k.source, "knob.cu", 90, &c, err, sizeof err);
  gen_kernel_free(&k);
  CHECK(rc == 0, "%s: %s", config, err);
  char *ptx = rc == 0 ? strdup(c.ptx) : NULL;
  gen_cubin_free(&c);
  return ptx;
}

/* whether the first x in text comes before the first y (both present) */
static int before(const char *text, const char *x, const char *y)
{
  const char *a = strstr(text, x), *b = strstr(text, y);
  return a && b && a < b;
}

#define EXPECT(ptx, needle, n, cmp) CHECK(count(ptx, needle) cmp (n), "'%s' x%d, want %s %d", needle, count(ptx, needle), #cmp, n)

static void test_vec_items(void)
{
  /* 4096 f32 over 256 threads: vec*items*256 = 4096, held in registers: one load per item */
  char *a = ptx_of(4096, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none");
  char *b = ptx_of(4096, GEN_F32, GEN_SOFTMAX, "threads=256,items=8,vec=2,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none");
  char *c = ptx_of(4096, GEN_F32, GEN_SOFTMAX, "threads=256,items=16,vec=1,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none");
  char *d = ptx_of(4096, GEN_BF16, GEN_SOFTMAX, "threads=256,items=2,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none");
  char *e = ptx_of(4096, GEN_F16, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none");
  if (a) { EXPECT(a, "ld.global.v4.u32", 4, ==); EXPECT(a, "st.global.v4.u32", 4, ==); EXPECT(a, ".maxntid 256", 1, ==); }
  if (b) { EXPECT(b, "ld.global.v2.u32", 8, ==); EXPECT(b, "ld.global.v4", 0, ==); }
  if (c) { EXPECT(c, "ld.global.u32", 16, ==); EXPECT(c, "ld.global.v", 0, ==); }
  if (d) { EXPECT(d, "ld.global.v4.u32", 2, ==); EXPECT(d, "cvt.rn.bf16x2.f32", 4, >=); }
  if (e) { EXPECT(e, "ld.global.v2.u32", 4, ==); EXPECT(e, "cvt.rn.f16x2.f32", 2, >=); }
  free(a), free(b), free(c), free(d), free(e);
}

static void test_reduce_rows(void)
{
  /* one reduction of (max, sum) pairs per row, the max first, then the rescaled sums. G = 256:
  ** in each warp one redux for the max and 5 shuffle steps for the sum, then one barrier step
  ** and 3 + 3 shuffle steps across the 8 warps' posts; smem tree: 8 barrier-separated steps,
  ** no shuffle */
  char *a = ptx_of(4096, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none");
  char *b = ptx_of(4096, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=smem,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none");
  /* 128 cols f32, 8 threads per row, 32 rows per block: 3 shuffle steps for the max, 3 for the
  ** sum (redux takes whole warps only), no barrier */
  char *c = ptx_of(128, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=32,split=1,xchg=none,hint=none");
  char *d = ptx_of(128, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=smem,passes=1,hold=reg,rows=32,split=1,xchg=none,hint=none");
  if (a) { EXPECT(a, "shfl.sync.bfly", 11, ==); EXPECT(a, "redux.sync.max.s32", 1, ==); EXPECT(a, "bar.sync", 2, ==); }
  if (b) { EXPECT(b, "shfl.sync", 0, ==); EXPECT(b, "bar.sync", 9, >=); }
  if (c) { EXPECT(c, "shfl.sync.bfly", 6, ==); EXPECT(c, "redux.sync", 0, ==); EXPECT(c, "bar.sync", 0, ==); }
  if (d) { EXPECT(d, "shfl.sync", 0, ==); EXPECT(d, "bar.warp.sync", 5, >=); EXPECT(d, "bar.sync", 0, ==); }
  free(a), free(b), free(c), free(d);
}

static void test_passes_hold(void)
{
  /* two passes read the row twice; smem hold stages it (ld/st.shared into the stage) */
  char *a = ptx_of(16384, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=2,hold=none,rows=1,split=1,xchg=none,hint=none");
  char *b = ptx_of(16384, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=smem,rows=1,split=1,xchg=none,hint=none");
  char *c = ptx_of(16384, GEN_F32, GEN_SOFTMAX, "threads=1024,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none");
  if (a) { EXPECT(a, "ld.global.v4.u32", 8, >=); EXPECT(a, "st.global.v4.u32", 4, >=); EXPECT(a, ".shared .align 4 .b8 _ZZ", 1, >=); }
  if (b) { EXPECT(b, "ld.global.v4.u32", 4, ==); EXPECT(b, "st.shared.v4.u32", 4, ==); EXPECT(b, "ld.shared.v4.u32", 8, ==); EXPECT(b, ".extern .shared", 1, ==); }
  if (c) { EXPECT(c, "ld.global.v4.u32", 4, ==); EXPECT(c, ".extern .shared", 0, ==); }
  free(a), free(b), free(c);
}

static void test_split_op_dtype(void)
{
  char *a = ptx_of(65536, GEN_F32, GEN_SOFTMAX, "threads=512,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem,hint=none");
  /* log_softmax needs no exp in its normalize pass */
  char *b = ptx_of(65536, GEN_F32, GEN_LOG_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=2,hold=none,rows=1,split=4,xchg=dsmem,hint=none");
  char *c = ptx_of(65536, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=2,hold=none,rows=1,split=4,xchg=dsmem,hint=none");
  /* global exchange: parts through global memory, no cluster */
  char *d = ptx_of(1048576, GEN_F32, GEN_SOFTMAX, "threads=512,items=8,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=64,xchg=global,hint=none");
  char *e = ptx_of(65536, GEN_BF16, GEN_SOFTMAX, "threads=512,items=2,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem,hint=none");
  if (a) {
    /* flat swap: one cluster barrier (started), then each warp writes its pair into every block
    ** by remote stores that complete on the receiver's mbarrier, which every warp waits on */
    EXPECT(a, "barrier.cluster.arrive", 1, ==);
    EXPECT(a, "barrier.cluster.wait", 1, ==);
    EXPECT(a, "st.async.shared::cluster.mbarrier::complete_tx::bytes", 1, ==);
    EXPECT(a, "mbarrier.try_wait.parity.acquire.cluster", 1, ==);
    EXPECT(a, "st.shared::cluster", 0, ==);
    EXPECT(a, "mapa.shared::cluster", 1, >=);
    /* the warp's pair and the fold of the row's pairs: each a redux for the max, 5 shuffles for the sum */
    EXPECT(a, "redux.sync.max.s32", 2, ==);
    EXPECT(a, "shfl.sync.bfly", 10, ==);
    EXPECT(a, "ld.global.v4.u32", 4, ==);
    EXPECT(a, "lg2.approx", 0, ==);
    EXPECT(a, "cvt.rn.bf16", 0, ==);
    /* f32 held in registers: the cluster is set up while the first row's loads are in flight */
    CHECK(before(a, "ld.global.v4.u32", "barrier.cluster.arrive"), "f32 reg: cluster arrive before the first load");
  }
  if (e) /* bf16 unpacked as loaded: set up first, or the warp would stall on the loads before the barrier */
    CHECK(before(e, "barrier.cluster.arrive", "ld.global.v4.u32"), "bf16 reg: first load before the cluster arrive");
  if (b && c) {
    EXPECT(b, "mapa.shared::cluster", 1, >=);
    CHECK(count(c, "ex2.approx") - count(b, "ex2.approx") >= 16, "ex2: softmax %d, log_softmax %d",
          count(c, "ex2.approx"), count(b, "ex2.approx"));
  }
  if (d) {
    EXPECT(d, "mapa", 0, ==);
    EXPECT(d, "barrier.cluster", 0, ==);
    EXPECT(d, "ld.relaxed.gpu.global.b64", 1, >=);   /* waits on tagged pairs: no fence, no arrival count */
    EXPECT(d, "st.relaxed.gpu.global.b64", 1, ==);
    EXPECT(d, "membar", 0, ==);
    EXPECT(d, "fence", 0, ==);
    EXPECT(d, "atom.global.add", 1, ==);
    EXPECT(d, "ld.global.v4.u32", 8, ==);
  }
  free(a), free(b), free(c), free(d), free(e);
}

/* hold=packed keeps the loaded words: max by 16-bit pair instructions, exp once for the sum and
** once more at the output, and fewer registers than the same row held as floats */
static void test_packed(void)
{
  const char *cfg[2] = {
    "threads=256,items=4,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=none",
    "threads=256,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none" };
  char *a = ptx_of(8192, GEN_BF16, GEN_SOFTMAX, cfg[0]);
  char *b = ptx_of(8192, GEN_BF16, GEN_SOFTMAX, cfg[1]);
  char *c = ptx_of(8192, GEN_F16, GEN_LOG_SOFTMAX, cfg[0]);
  if (a && b) {
    EXPECT(a, "max.bf16x2", 16, ==);
    EXPECT(a, "ld.global.v4.u32", 4, ==);
    EXPECT(a, "st.global.v4.u32", 4, ==);
    /* 32 values per thread: 32 more exps at the output than the float hold, less its one rescale */
    CHECK(count(a, "ex2.approx") - count(b, "ex2.approx") >= 31, "ex2: packed %d, reg %d",
          count(a, "ex2.approx"), count(b, "ex2.approx"));
  }
  if (c) { EXPECT(c, "max.f16x2", 16, ==); EXPECT(c, "cvt.rn.f16x2.f32", 16, ==); }
  /* log_softmax unpacks the words again at the output by byte permutes (unpack_again), softmax not */
  if (a && c) { EXPECT(c, "prmt.b32", 32, ==); EXPECT(a, "prmt.b32", 0, ==); }
  free(a), free(b), free(c);
}

/* hint=stream: the last read of each line is .cs (one pass) or .lu (second pass), stores .cs */
static void test_hint(void)
{
  char *a = ptx_of(4096, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=stream");
  char *b = ptx_of(16384, GEN_F32, GEN_SOFTMAX, "threads=256,items=4,vec=4,reduce=shfl,passes=2,hold=none,rows=1,split=1,xchg=none,hint=stream");
  /* hint=keep: as stream, and pass 1's loads under an evict-last L2 policy */
  char *c = ptx_of(1048576, GEN_F32, GEN_SOFTMAX, "threads=512,items=4,vec=4,reduce=shfl,passes=2,hold=none,rows=1,split=64,xchg=global,hint=keep");
  if (a) { EXPECT(a, "ld.global.cs.v4.u32", 4, ==); EXPECT(a, "st.global.cs.v4.u32", 4, ==); }
  if (c) {
    EXPECT(c, "createpolicy.fractional.L2::evict_last", 1, >=);
    EXPECT(c, "ld.global.L2::cache_hint.v4.u32", 4, ==);
    EXPECT(c, "ld.global.lu.v4.u32", 4, ==);
    EXPECT(c, "st.global.cs.v4.u32", 4, ==);
  }
  if (b) { EXPECT(b, "ld.global.lu.v4.u32", 4, >=); EXPECT(b, "ld.global.v4.u32", 4, >=); EXPECT(b, "st.global.cs.v4.u32", 4, >=); }
  free(a), free(b), free(c);
}

/* hold=ring: one bulk copy per row into a stage, no global vector loads; the bf16 reducers take
** the max by 16-bit pairs; reducer and finisher warps both free a stage (two arrive sites) */
static void test_ring(void)
{
  char *a = ptx_of(1048576, GEN_BF16, GEN_SOFTMAX, "threads=1024,items=2,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=64,xchg=global,hint=none");
  char *b = ptx_of(1048576, GEN_F32, GEN_SOFTMAX, "threads=1024,items=2,vec=4,reduce=shfl,passes=1,hold=ring,rows=1,split=128,xchg=global,hint=none");
  if (a) {
    EXPECT(a, "cp.async.bulk.shared::cluster.global", 1, ==);
    EXPECT(a, "ld.global.v4", 0, ==);
    EXPECT(a, "max.bf16x2", 1, >=);
    EXPECT(a, "mbarrier.arrive.release.cta", 2, ==);
  }
  if (b) { EXPECT(b, "max.bf16x2", 0, ==); EXPECT(b, "mbarrier.arrive.release.cta", 2, ==); }
  if (a) { EXPECT(a, "ld.shared.v4.u32", 3, ==); EXPECT(a, "ld.v4.u32", 0, ==); }   /* stage reads by shared addresses */
  free(a), free(b);
}

/* hold=ring parts end on 128-byte lines: with a block on each of 132 SMs, f32 1048576 columns
** (32768 lines) take parts of 248 or 249 lines, so a stage holds 249 (1992 vectors) and seven
** of them fit in 227 KB; every split's stage is a whole number of lines, a line more where the
** class's rows are not all whole lines (1048576's class is 983041..1048576: bf16 split=32) */
static void test_ring_lines(void)
{
  const char *cfg[] = { "threads=1024,items=2,vec=4,reduce=shfl,passes=1,hold=ring,rows=1,split=132,xchg=global,hint=none",
                        "threads=1024,items=2,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=66,xchg=global,hint=none",
                        "threads=1024,items=4,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=32,xchg=global,hint=none" };
  const int dtype[] = { GEN_F32, GEN_BF16, GEN_BF16 }, smem[] = { 7 * 249 * 128, 7 * 249 * 128, 3 * (65536 + 128) };
  for (int i = 0; i < 3; i++) {
    gen_Problem p = { .rows = 256, .cols = 1048576, .dtype = dtype[i], .op = GEN_SOFTMAX, .arch = 90 };
    gen_Kernel k;
    if (gen_render(g, &p, cfg[i], &k)) { CHECK(0, "%s: %s", cfg[i], gen_error(g)); continue; }
    CHECK(k.launch.smem == smem[i], "%s: %d bytes of stages, want %d", cfg[i], k.launch.smem, smem[i]);
    CHECK(k.launch.smem % 128 == 0 && strstr(k.source, "#define LV 8\n"), "%s: stages of whole lines", cfg[i]);
    gen_kernel_free(&k);
  }
}

/* The parts part_of (ring.cu) cuts a row into, mirrored here: lines counted from the 128-byte
** line the body starts in (off vectors into it) where rows are not whole lines, else from the
** body's start. Every row alignment of every hold=ring config of random long rows (a quarter
** whole lines): the parts tile the body, each fits a stage (RV vectors, read from the source),
** and each but the row's first starts on a line (of memory; of the body for whole-line rows, of
** memory too when the tensor starts on one). Seed 20261125. */
static void test_ring_parts(void)
{
  srand(20261125);
  for (int t = 0; t < 12; t++) {
    const int dtype = t % 3 == 0 ? GEN_F32 : t % 3 == 1 ? GEN_BF16 : GEN_F16, es = gen_dtype_size(dtype);
    gen_Problem p = { .rows = 64, .cols = 131072 + rand() % 2000000, .dtype = dtype, .op = t % 2, .arch = 90 };
    if (t % 4 == 3) p.cols -= p.cols % 64;
    const int midline = p.cols * es % 128 != 0;
    char **cfg;
    int n;
    if (gen_space(g, &p, &cfg, &n)) { CHECK(0, "space: %s", gen_error(g)); continue; }
    for (int i = 0; i < n; i++) {
      gen_Kernel k;
      const char *rv;
      if (!strstr(cfg[i], "hold=ring")) continue;
      if (gen_render(g, &p, cfg[i], &k)) { CHECK(0, "%s: %s", cfg[i], gen_error(g)); continue; }
      if (!(rv = strstr(k.source, "#define RV "))) { CHECK(0, "%s: no RV", cfg[i]); gen_kernel_free(&k); continue; }
      const int RV = atoi(rv + 11), S = atoi(strstr(cfg[i], "split=") + 6), vec = atoi(strstr(cfg[i], "vec=") + 4);
      const int vb = vec * es, lv = 128 / vb;
      for (int h = 0; h < 128 / es; h++) {   /* the row's start, h elements before a 128-byte line */
        const int head = h % vec, nv = (int)((p.cols - head) / vec), off = midline ? (lv - (h - head) / vec) % lv : 0;
        const int lines = (nv + off + lv - 1) / lv;
        int covered = 0, ok = 1;
        for (int r = 0; r < S && ok; r++) {
          int b = (int)((long long)r * lines / S) * lv - off, e = (int)((long long)(r + 1) * lines / S) * lv - off;
          b = b < 0 ? 0 : b > nv ? nv : b, e = e < 0 ? 0 : e > nv ? nv : e;
          ok = b == covered && e - b <= RV && (r == 0 || b == nv || (b + off) % lv == 0);
          covered = e;
        }
        CHECK(ok && covered == nv, "%lld cols %s, row %d elements before a line: parts do not tile it in stages of %d",
              (long long)p.cols, cfg[i], h, RV);
        if (!ok) break;
      }
      gen_kernel_free(&k);
    }
    gen_free_list(cfg, n);
  }
}

/* The backward ops (space_bw.lua, backward.cu): every config of their spaces passes the rules
** (gen_canon checks them) and stays a short sweep, none needs clusters where there are none;
** combos outside the backward families are refused; a held row loads y and dy once, the two-pass
** sum pass loads once a step (y and dy; log_softmax_backward dy only); a cluster swaps its sums by one barrier a row;
** the ring (xchg=global, sm_90 only) comes for long rows and copies y and dy into each stage. */
static void test_backward(void)
{
  static const int64_t cols[] = { 1, 7, 128, 1000, 4096, 16384, 32000, 128256, 1048576 };
  for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
    for (int d = 0; d < GEN_NDTYPE; d++)
      for (int op = GEN_SOFTMAX_BW; op <= GEN_LOG_SOFTMAX_BW; op++)
        for (int arch = 80; arch <= 90; arch += 10) {
          gen_Problem p = { .rows = 256, .cols = cols[c], .dtype = d, .op = op, .arch = arch };
          char **list, canon[256];
          int n = 0, rings = 0, packs = 0;
          CHECK(gen_space(g, &p, &list, &n) == 0, "%s", gen_error(g));
          CHECK(n >= 1 && n <= 160, "%lld cols %s %s sm_%d: %d configs", (long long)cols[c], gen_dtype_name(d), gen_op_name(op),
                arch, n);
          for (int i = 0; i < n; i++) {
            CHECK(gen_canon(g, &p, list[i], canon, sizeof canon) == 0, "%s: %s", list[i], gen_error(g));
            CHECK(arch >= 90 || !strstr(list[i], "xchg=dsmem"), "sm_%d: %s", arch, list[i]);
            CHECK(!strstr(list[i], "xchg=global") == !strstr(list[i], "hold=ring"), "%s", list[i]);
            CHECK(!strstr(list[i], "hint=keep") || strstr(list[i], "passes=2,hold=none"), "%s", list[i]);
            CHECK(arch >= 90 || !strstr(list[i], "hold=ring"), "sm_%d: %s", arch, list[i]);
            CHECK(d != GEN_F32 || !strstr(list[i], "hold=packed"), "f32: %s", list[i]);
            packs += strstr(list[i], "hold=packed") != NULL;
            rings += strstr(list[i], "hold=ring") != NULL;
          }
          gen_free_list(list, n);
          /* packed twins of held rows for f16 and bf16 (rows that one block or a cluster can hold) */
          CHECK(d == GEN_F32 || cols[c] < 1024 || cols[c] > 32000 || packs > 0, "%lld cols %s %s: no hold=packed", (long long)cols[c],
                gen_dtype_name(d), gen_op_name(op));
          /* the ring: y and dy of 256 KB a row and more in the class's widest row (1048576 cols; 128256
          ** and 32000, whose class ends at 32768, but for f16 and bf16), sm_90 */
          int64_t lo, hi;
          gen_width_class(cols[c], &lo, &hi);
          int want = arch >= 90 && hi * (d == GEN_F32 ? 4 : 2) * 2 >= 256 * 1024;
          CHECK(want == (rings > 0), "%lld cols %s %s sm_%d: %d ring configs", (long long)cols[c], gen_dtype_name(d),
                gen_op_name(op), arch, rings);
        }
  static const char *const bad[] = {
    "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=smem,rows=1,split=1,xchg=none,hint=none",
    "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=keep",
    "threads=128,items=16,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none",
    "threads=512,items=2,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=none",
    "threads=512,items=8,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=global,hint=none",
    "threads=1024,items=1,vec=4,reduce=shfl,passes=1,hold=ring,rows=1,split=8,xchg=dsmem,hint=none",
  };
  gen_Problem p = { .rows = 256, .cols = 4096, .dtype = GEN_F32, .op = GEN_SOFTMAX_BW, .arch = 90 };
  char canon[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(gen_canon(g, &p, bad[i], canon, sizeof canon) != 0, "accepted %s", bad[i]);
  const char *held = "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none";
  const char *two = "threads=256,items=4,vec=4,reduce=shfl,passes=2,hold=none,rows=1,split=1,xchg=none,hint=none";
  char *a = ptx_of(4096, GEN_F32, GEN_SOFTMAX_BW, held), *b = ptx_of(16384, GEN_F32, GEN_SOFTMAX_BW, two);
  char *c = ptx_of(16384, GEN_F32, GEN_LOG_SOFTMAX_BW, two);
  char *e = ptx_of(65536, GEN_BF16, GEN_LOG_SOFTMAX_BW, "threads=512,items=2,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem,hint=none");
  if (a) { EXPECT(a, "ld.global.v4", 8, ==); EXPECT(a, "st.global.v4", 4, ==); }
  if (b) EXPECT(b, "ld.global.v4", 16, ==);
  if (c) { EXPECT(c, "ld.global.v4", 12, >=); EXPECT(c, "ex2.approx", 1, >=); }   /* the dy-only loop may be unrolled */
  if (e) { EXPECT(e, "barrier.cluster.arrive", 2, ==); EXPECT(e, "ld.shared::cluster", 1, ==); }
  free(a), free(b), free(c), free(e);
  /* hold=packed (16-bit types): y and dy held as words, one read each, dx packed two to a word */
  char *w = ptx_of(16384, GEN_BF16, GEN_SOFTMAX_BW, "threads=512,items=4,vec=8,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=none");
  if (w) { EXPECT(w, "ld.global.v4", 8, ==); EXPECT(w, "st.global.v4", 4, ==); EXPECT(w, "cvt.rn.bf16x2.f32", 16, ==); }
  free(w);
  gen_Problem pf = { .rows = 256, .cols = 16384, .dtype = GEN_F32, .op = GEN_SOFTMAX_BW, .arch = 90 };
  CHECK(gen_canon(g, &pf, "threads=512,items=4,vec=4,reduce=shfl,passes=1,hold=packed,rows=1,split=1,xchg=none,hint=none", canon,
                  sizeof canon) != 0, "f32 accepted hold=packed");
  /* hint=keep: the sum pass's loads of y and dy carry the evict-last policy, the second pass's not */
  char *k = ptx_of(16384, GEN_BF16, GEN_SOFTMAX_BW, "threads=256,items=4,vec=8,reduce=shfl,passes=2,hold=none,rows=1,split=1,xchg=none,hint=keep");
  if (k) { EXPECT(k, "ld.global.L2::cache_hint.v4", 8, ==); EXPECT(k, "ld.global.lu.v4", 8, ==); }
  free(k);
  /* the ring: two bulk copies a row (y and dy) on one barrier, one tagged word posted; sm_80 refuses it */
  const char *ring = "threads=1024,items=1,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=132,xchg=global,hint=none";
  char *r = ptx_of(1048576, GEN_BF16, GEN_SOFTMAX_BW, ring), *l = ptx_of(1048576, GEN_BF16, GEN_LOG_SOFTMAX_BW, ring);
  if (r) {
    EXPECT(r, "cp.async.bulk.shared::cluster.global", 2, ==);
    EXPECT(r, "st.relaxed.gpu.global.b64", 1, ==);
    EXPECT(r, "ld.global.v4", 0, ==);
  }
  if (l) { EXPECT(l, "ex2.approx", 1, >=); EXPECT(l, "cp.async.bulk.shared::cluster.global", 2, ==); }
  free(r), free(l);
  /* YDIRECT: f32 parts of y and dy (64 KB) would leave 3 stages, so log_softmax_backward stages dy
  ** alone (7 stages of 32 KB) and its finishers load y; softmax_backward keeps the pair */
  const char *f32ring = "threads=1024,items=2,vec=4,reduce=shfl,passes=1,hold=ring,rows=1,split=132,xchg=global,hint=none";
  char *yd = ptx_of(1048576, GEN_F32, GEN_LOG_SOFTMAX_BW, f32ring), *yp = ptx_of(1048576, GEN_F32, GEN_SOFTMAX_BW, f32ring);
  if (yd) { EXPECT(yd, "cp.async.bulk.shared::cluster.global", 1, ==); EXPECT(yd, "ld.global.v4", 3, >=); }
  if (yp) { EXPECT(yp, "cp.async.bulk.shared::cluster.global", 2, ==); EXPECT(yp, "ld.global.v4", 0, ==); }
  free(yd), free(yp);
  gen_Problem yl = { .rows = 256, .cols = 1048576, .dtype = GEN_F32, .op = GEN_LOG_SOFTMAX_BW, .arch = 90 };
  gen_Kernel kd, kp;
  if (!gen_render(g, &yl, f32ring, &kd)) {
    yl.op = GEN_SOFTMAX_BW;
    if (!gen_render(g, &yl, f32ring, &kp)) {
      /* a part: 249 lines of 128 bytes (32768 lines over 132 blocks) */
      CHECK(kd.launch.smem == 7 * 249 * 128 && kp.launch.smem == 3 * 2 * 249 * 128,
            "stages: log_softmax_backward %d bytes, softmax_backward %d", kd.launch.smem, kp.launch.smem);
      gen_kernel_free(&kp);
    }
    gen_kernel_free(&kd);
  }
  gen_Problem old = { .rows = 256, .cols = 1048576, .dtype = GEN_BF16, .op = GEN_SOFTMAX_BW, .arch = 80 };
  CHECK(gen_canon(g, &old, ring, canon, sizeof canon) != 0, "sm_80 accepted %s", ring);
}

/* EARLY: where a ring has 3 stages (a 1024-thread forward block, or a backward pair), a finisher
** reads its share of the stage before it polls the row's pairs or sums (and frees the stage for
** the next load), so no shared load follows the first poll; with 7 stages (bf16 forward split=64,
** bf16 backward split=128, YDIRECT's dy) it reads the stage after the poll, as before. */
static void test_early(void)
{
  static const struct { int dtype, op, early; const char *cfg; } K[] = {
    { GEN_BF16, GEN_SOFTMAX, 1, "threads=1024,items=4,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=32,xchg=global,hint=none" },
    { GEN_BF16, GEN_SOFTMAX, 0, "threads=1024,items=2,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=64,xchg=global,hint=none" },
    { GEN_F32, GEN_SOFTMAX_BW, 1, "threads=1024,items=2,vec=4,reduce=shfl,passes=1,hold=ring,rows=1,split=132,xchg=global,hint=none" },
    { GEN_F32, GEN_LOG_SOFTMAX_BW, 0, "threads=1024,items=2,vec=4,reduce=shfl,passes=1,hold=ring,rows=1,split=132,xchg=global,hint=none" },
    { GEN_BF16, GEN_SOFTMAX_BW, 0, "threads=1024,items=1,vec=8,reduce=shfl,passes=1,hold=ring,rows=1,split=128,xchg=global,hint=none" },
  };
  const char *poll = "ld.relaxed.gpu.global.b64";
  for (size_t i = 0; i < sizeof K / sizeof K[0]; i++) {
    char *ptx = ptx_of(1048576, K[i].dtype, K[i].op, K[i].cfg);
    if (!ptx) continue;
    const char *p = strstr(ptx, poll);
    CHECK(p && (strstr(p, "ld.shared.v4") == NULL) == K[i].early, "case %zu: want early=%d", i, K[i].early);
    free(ptx);
  }
}

int main(void)
{
  char err[1024];
  if (gen_open(&g, NULL, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
  test_vec_items();
  test_reduce_rows();
  test_passes_hold();
  test_split_op_dtype();
  test_early();
  test_hint();
  test_packed();
  test_ring();
  test_ring_lines();
  test_ring_parts();
  test_backward();
  gen_close(g);
  return check_done("test_knobs");
}
