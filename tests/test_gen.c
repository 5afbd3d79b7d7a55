/*
** test_gen.c — the generator without compiling: parsing, config validation, the space, and
** rendering (every config of several spaces renders; template errors carry file:line).
*/
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "embedded.h"
#include "gen.h"

static gen_Problem problem(int64_t rows, int64_t cols, int dtype, int op, int arch)
{
  gen_Problem p = { 0 };
  p.rows = rows, p.cols = cols, p.dtype = dtype, p.op = op, p.arch = arch;
  return p;
}

static void test_shapes(void)
{
  static const char *const bad[] = {
    "0x5", "5x0", "32000x", "x16384", "axb", "-3x4", "1e3x5", "32000X16384", " 1x2", "1x2 ",
    "99999999999999999999x5", "4x3000000000", "3x4x5", "", "x", "+3x4", "3x-4", "0x0",
    "1000000000000000000x1000000000",
  };
  char err[512];
  int64_t r, c;
  CHECK(gen_parse_shape("32000x16384", &r, &c, err, sizeof err) == 0 && r == 32000 && c == 16384, "%s", err);
  CHECK(gen_parse_shape("1x1", &r, &c, err, sizeof err) == 0 && r == 1 && c == 1, "%s", err);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    CHECK(gen_parse_shape(bad[i], &r, &c, err, sizeof err) != 0, "'%s' accepted", bad[i]);
    CHECK(strstr(err, bad[i]) != NULL, "message '%s' does not name '%s'", err, bad[i]);
    CHECK(strchr(err, '\n') == NULL, "message has a newline");
  }
  CHECK(gen_parse_dtype("bf16") == GEN_BF16 && gen_parse_dtype("f64") == -1, "dtype");
  CHECK(gen_parse_op("log_softmax") == GEN_LOG_SOFTMAX && gen_parse_op("softmin") == -1, "op");
  CHECK(gen_parse_arch("sm_90") == 90 && gen_parse_arch("80") == 80 && gen_parse_arch("sm_x") == -1, "arch");
}

static void expect_error(gen_State *g, const gen_Problem *p, const char *config, const char *needle)
{
  char out[256];
  int rc = gen_canon(g, p, config, out, sizeof out);
  CHECK(rc != 0, "'%s' accepted", config);
  CHECK(rc == 0 || strstr(gen_error(g), needle), "'%s': message '%s' lacks '%s'", config, gen_error(g), needle);
}

static void test_configs(gen_State *g)
{
  gen_Problem p = problem(1024, 4096, GEN_F32, GEN_SOFTMAX, 90);
  const char *ok = "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none";
  char out[256];
  CHECK(gen_canon(g, &p, ok, out, sizeof out) == 0 && strcmp(out, ok) == 0, "%s", gen_error(g));
  CHECK(gen_canon(g, &p, "hint=none,xchg=none,split=1,rows=1,hold=reg,passes=1,reduce=shfl,vec=4,items=4,threads=256", out, sizeof out) == 0 &&
        strcmp(out, ok) == 0, "reordered knobs canonicalize: %s", out);
  expect_error(g, &p, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,warp=2", "unknown knob 'warp'");
  expect_error(g, &p, "threads=256,threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none", "duplicate knob 'threads'");
  expect_error(g, &p, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,xchg=none,hint=none", "missing knob 'split'");
  expect_error(g, &p, "threads=256,items=4,vec=3,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none", "got '3'");
  expect_error(g, &p, "threads=250,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none", "got '250'");
  expect_error(g, &p, "threads=abc,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none", "got 'abc'");
  expect_error(g, &p, "threads=256,items=4,vec=4,reduce=tree,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none", "got 'tree'");
  expect_error(g, &p, "threads=256,items=2,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none", "32 bytes");
  expect_error(g, &p, "threads=256,items=2,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none", "items>=4");
  expect_error(g, &p, "threads=256,items=4,vec=4,reduce=shfl,passes=2,hold=reg,rows=1,split=1,xchg=none,hint=none", "hold=none");
  expect_error(g, &p, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=3,split=1,xchg=none,hint=none", "knob 'rows' takes 1|2|4|8");
  expect_error(g, &p, "", "empty config");
  gen_Problem pl = problem(256, 1048576, GEN_F32, GEN_SOFTMAX, 90);
  expect_error(g, &pl, "threads=512,items=4,vec=4,reduce=shfl,passes=2,hold=ahead,rows=1,split=16,xchg=dsmem,hint=keep", "xchg=global");
  expect_error(g, &pl, "threads=512,items=4,vec=4,reduce=shfl,passes=1,hold=mix,rows=1,split=16,xchg=global,hint=none", "passes=2 needs");
  expect_error(g, &p, "threads", "not knob=value");
  gen_Problem p80 = problem(1024, 65536, GEN_F32, GEN_SOFTMAX, 80);
  expect_error(g, &p80, "threads=256,items=8,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem,hint=none", "clusters");
  gen_Problem bad = problem(1024, 4096, GEN_F32, GEN_SOFTMAX, 70);
  expect_error(g, &bad, ok, "sm_70");
  /* sm_75: no clusters (whatever the caller says), no L2 policies */
  gen_Problem p75 = problem(1024, 65536, GEN_BF16, GEN_SOFTMAX, 75);
  p75.cluster = 16;
  expect_error(g, &p75, "threads=256,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem,hint=none", "clusters");
  expect_error(g, &p75, "threads=512,items=4,vec=8,reduce=shfl,passes=2,hold=none,rows=1,split=1,xchg=none,hint=keep", "sm_80");
}

/* Each knob that matters for this shape takes at least two values across the space. */
static void test_space_varies(gen_State *g)
{
  static const char *const knobs[] = { "threads=", "items=", "vec=", "reduce=", "passes=", "hold=", "rows=", "split=",
                                       "xchg=", "hint=" };
  gen_Problem p = problem(32000, 16384, GEN_F32, GEN_SOFTMAX, 90);
  char **list;
  int n;
  CHECK(gen_space(g, &p, &list, &n) == 0, "%s", gen_error(g));
  CHECK(n >= 24 && n <= 400, "space of %d configs", n);
  for (size_t k = 0; k < sizeof knobs / sizeof knobs[0]; k++) {
    const char *first = NULL;
    int varied = 0;
    for (int i = 0; i < n; i++) {
      const char *v = strstr(list[i], knobs[k]);
      if (!first) first = v;
      else if (strncmp(first, v, strcspn(first, ",")) != 0) varied = 1;
    }
    CHECK(varied, "knob %s takes one value only", knobs[k]);
  }
  gen_free_list(list, n);
}

/* The full grid (--space full) starts with the whole space in its order, adds more, repeats
** nothing, and every config of it is valid. */
static void test_full_grid(gen_State *g)
{
  gen_Problem p = problem(8192, 32000, GEN_BF16, GEN_SOFTMAX, 90);
  char **space, **full;
  int ns, nf, dup = 0, bad = 0;
  CHECK(gen_space(g, &p, &space, &ns) == 0, "%s", gen_error(g));
  p.full = 1;
  CHECK(gen_space(g, &p, &full, &nf) == 0, "%s", gen_error(g));
  CHECK(nf > 4 * ns && nf < 5000, "full grid %d configs, space %d", nf, ns);
  for (int i = 0; i < ns && i < nf; i++) CHECK(strcmp(space[i], full[i]) == 0, "full[%d] = %s", i, full[i]);
  for (int i = 0; i < nf; i++) {
    char canon[256];
    bad += gen_canon(g, &p, full[i], canon, sizeof canon) != 0;
    for (int j = i + 1; j < nf && i % 7 == 0; j++) dup += strcmp(full[i], full[j]) == 0;
  }
  CHECK(bad == 0 && dup == 0, "full grid: %d invalid, %d repeated", bad, dup);
  gen_free_list(space, ns);
  gen_free_list(full, nf);
}

/* --config: the space is that config alone, in canonical order; an invalid one is refused with
** the reason, and nothing is listed. */
static void test_only(gen_State *g)
{
  gen_Problem p = problem(32, 16384, GEN_BF16, GEN_SOFTMAX, 90);
  char **list;
  int n;
  p.only = "hint=none,threads=64,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem";
  CHECK(gen_space(g, &p, &list, &n) == 0 && n == 1, "%s", gen_error(g));
  if (n == 1)
    CHECK(strcmp(list[0], "threads=64,items=4,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem,hint=none") == 0,
          "only: %s", list[0]);
  gen_free_list(list, n);
  p.only = "threads=64,items=1,vec=8,reduce=shfl,passes=1,hold=reg,rows=1,split=8,xchg=dsmem,hint=none";
  CHECK(gen_space(g, &p, &list, &n) != 0 && n == 0 && strstr(gen_error(g), "items>=4"), "only, invalid: %s", gen_error(g));
}

/* Every config of a grid of spaces is canonical and renders. */
static void test_render_all(gen_State *g)
{
  static const int64_t cols[] = { 1, 7, 96, 128, 1000, 2048, 4096, 16384, 32000, 128256 };
  int total = 0;
  for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
    for (int d = 0; d < GEN_NDTYPE; d++)
      for (int arch = 80; arch <= 90; arch += 10) {
        gen_Problem p = problem(64, cols[c], d, (int)(c % 2), arch);
        char **list;
        int n;
        CHECK(gen_space(g, &p, &list, &n) == 0, "%s", gen_error(g));
        CHECK(n >= 1 && n <= 400, "cols %lld %s sm_%d: %d configs", (long long)cols[c], gen_dtype_name(d), arch, n);
        for (int i = 0; i < n; i++) {
          gen_Kernel k;
          char canon[256];
          CHECK(gen_canon(g, &p, list[i], canon, sizeof canon) == 0 && strcmp(canon, list[i]) == 0, "%s", list[i]);
          CHECK(gen_render(g, &p, list[i], &k) == 0, "%s: %s", list[i], gen_error(g));
          CHECK(k.source && strstr(k.source, k.name) && k.launch.threads >= 32 && k.launch.rows_per_block >= 1,
                "render of %s", list[i]);
          gen_kernel_free(&k);
          total++;
        }
        gen_free_list(list, n);
      }
  printf("rendered %d configs\n", total);
}

/* A folder holding the built-in templates, with `line` (1-based) of `name` replaced. */
static void write_templates(const char *dir, const char *name, int line, const char *text)
{
  mkdir(dir, 0755);
  for (int i = 0; i < gen_nembedded; i++) {
    const gen_Embedded *e = &gen_embedded[i];
    if (strncmp(e->name, "templates/", 10) || strchr(e->name + 10, '/')) continue;   /* defaults/: built in */
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->name + 10);
    FILE *f = fopen(path, "wb");
    int at = 1;
    for (size_t j = 0; j < e->size; j++) {
      if (strcmp(e->name + 10, name) == 0 && at == line) {
        fputs(text, f);
        while (j < e->size && e->data[j] != '\n') j++;
      }
      if (j < e->size) {
        fputc(e->data[j], f);
        if (e->data[j] == '\n') at++;
      }
    }
    fclose(f);
  }
}

static void expect_template_error(const char *name, int line, const char *text, const char *needle)
{
  char dir[] = "/tmp/st_tmplXXXXXX", err[1024], want[128];
  gen_State *g;
  gen_Problem p = problem(64, 4096, GEN_F32, GEN_SOFTMAX, 90);
  gen_Kernel k;
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  write_templates(dir, name, line, text);
  snprintf(want, sizeof want, "%s:%d:", name, line);
  if (gen_open(&g, dir, err, sizeof err) == 0) {
    int rc = gen_render(g, &p, "threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none", &k);
    snprintf(err, sizeof err, "%s", gen_error(g));
    if (rc == 0) gen_kernel_free(&k);
    CHECK(rc != 0, "broken %s rendered", name);
    gen_close(g);
  }
  CHECK(strstr(err, want) && strstr(err, needle), "error '%s' lacks '%s' and '%s'", err, want, needle);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0, "cleanup");
}

static void test_template_errors(void)
{
  expect_template_error("row.cu", 12, "% local = 5", "near '='");
  expect_template_error("row.cu", 13, "$(kernal)(const elem_t *in, elem_t *out, i64 rows)", "unknown name 'kernal'");
  expect_template_error("common.cu", 19, "% local x = nil + 1", "arithmetic");
  expect_template_error("space.lua", 40, "local broken = = 1", "unexpected symbol");
}

int main(void)
{
  char err[1024];
  gen_State *g;
  test_shapes();
  if (gen_open(&g, NULL, err, sizeof err)) {
    fprintf(stderr, "gen_open: %s\n", err);
    return 1;
  }
  test_configs(g);
  test_space_varies(g);
  test_full_grid(g);
  test_only(g);
  test_render_all(g);
  char cfg[256];
  gen_Problem hp = problem(1000, 4096, GEN_BF16, GEN_SOFTMAX, 90);
  CHECK(gen_heuristic(g, &hp, 0, cfg, sizeof cfg) == 0 && strstr(cfg, "vec=8"), "heuristic: %s %s", cfg, gen_error(g));
  CHECK(gen_heuristic(g, &hp, 1, cfg, sizeof cfg) == 0 && strstr(cfg, "vec=1,"), "unaligned heuristic: %s", cfg);
  hp.cols = 1000000;
  CHECK(gen_heuristic(g, &hp, 0, cfg, sizeof cfg) == 0 && strstr(cfg, "passes=2"), "long-row heuristic: %s", cfg);
  char *a = NULL, *b = NULL;
  size_t na, nb;
  CHECK(gen_sources(g, &a, &na) == 0 && gen_sources(g, &b, &nb) == 0 && na == nb && na > 1000 && memcmp(a, b, na) == 0,
        "sources are stable");
  free(a);
  free(b);
  gen_close(g);
  test_template_errors();
  return check_done("test_gen");
}
