/*
** test_repro.c — a cubin is a function of its source, name, arch and NVRTC options: the same
** configs (each family, every dtype and op, and the tuner's aux kernels) compiled in two working
** directories give identical bytes, kept (cache_compile) or not, and as PTX (gen_compile_ptx);
** no printable run of a cubin names a directory of the host (the working directories, "/tmp",
** "/work", "/home", "/root", "/usr"); a run that starts with '/' and a letter is the fixed
** source name's folder.
*/
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"

static const char *HOST[] = { "/tmp", "/work", "/home", "/root", "/usr" };

/* s, in run, starts a path: at the run's start or after a space or quote, '/' and 3 letters. */
static int path_start(const char *run, const char *s)
{
  int letters = isalpha((unsigned char)s[1]) && isalnum((unsigned char)s[2]) && isalnum((unsigned char)s[3]);
  return letters && (s == run || strchr(" \t\"'=", s[-1]));
}

/* Each printable run of c (4 characters or more) checked for a path of the host. */
static void no_host_path(const gen_Cubin *c, const char *what, const char *const *dirs, int ndirs)
{
  const unsigned char *b = c->data;
  for (size_t i = 0; i < c->size;) {
    size_t j = i;
    while (j < c->size && isprint(b[j])) j++;
    if (j - i >= 4) {
      char run[512];
      snprintf(run, sizeof run, "%.*s", (int)(j - i < 511 ? j - i : 511), (const char *)b + i);
      for (int d = 0; d < ndirs; d++) CHECK(!strstr(run, dirs[d]), "%s: '%s' names %s", what, run, dirs[d]);
      for (size_t h = 0; h < sizeof HOST / sizeof HOST[0]; h++) CHECK(!strstr(run, HOST[h]), "%s: '%s'", what, run);
      for (const char *s = run; (s = strchr(s, '/')); s++)
        if (path_start(run, s))
          CHECK(strncmp(s, "/softmax-tune", 13) == 0, "%s: '%s' has an absolute path", what, run);
    }
    i = j + 1;
  }
}

static int compile_in(const char *dir, const char *kept, const char *src, const char *name, int arch, gen_Cubin *c)
{
  char err[1024];
  CHECK(chdir(dir) == 0, "chdir %s", dir);
  int rc = cache_compile(kept, src, name, arch, c, err, sizeof err);
  CHECK(rc == 0, "%s: %s", name, err);
  return rc;
}

/* src compiled in dirs[0] and dirs[1], kept in `kept` from the first (then read back). */
static void same_bytes(const char *src, const char *name, int arch, const char *what, char dirs[3][256], const char *kept)
{
  gen_Cubin a, b, k;
  if (compile_in(dirs[0], NULL, src, name, arch, &a)) return;
  if (compile_in(dirs[1], NULL, src, name, arch, &b) == 0) {
    CHECK(a.size == b.size && memcmp(a.data, b.data, a.size) == 0, "%s: the cubins differ by directory", what);
    CHECK(strcmp(a.ptx, b.ptx) == 0, "%s: the PTX differs by directory", what);
    const char *d[] = { dirs[0], dirs[1], dirs[2] };
    no_host_path(&a, what, d, 3);
    gen_cubin_free(&b);
  }
  /* PTX for the virtual arch (test_arch_ptx) too: the same text anywhere, naming no directory */
  gen_Cubin v[2];
  char err[1024];
  for (int i = 0; i < 2; i++) {
    CHECK(chdir(dirs[i]) == 0 && gen_compile_ptx(src, name, arch, &v[i], err, sizeof err) == 0, "%s PTX: %s", what, err);
    CHECK(v[i].data && strstr(v[i].data, ".target sm_") && !v[i].ptx && v[i].size == strlen(v[i].data) + 1, "%s: PTX", what);
    CHECK(v[i].data && !strstr(v[i].data, dirs[0]) && !strstr(v[i].data, "/tmp"), "%s: the PTX names a directory", what);
  }
  CHECK(v[0].size == v[1].size && v[0].data && memcmp(v[0].data, v[1].data, v[0].size) == 0, "%s: PTX differs by directory", what);
  gen_cubin_free(&v[0]);
  gen_cubin_free(&v[1]);
  for (int i = 0; i < 2; i++)
    if (compile_in(dirs[i], kept, src, name, arch, &k) == 0) {
      CHECK(k.size == a.size && memcmp(k.data, a.data, a.size) == 0, "%s: kept cubin differs (%d)", what, i);
      gen_cubin_free(&k);
    }
  gen_cubin_free(&a);
}

int main(void)
{
  static const struct { int64_t rows, cols; int dtype, op, arch; const char *only; } cases[] = {
    { 64, 1000, GEN_F32, GEN_SOFTMAX, 90, "split=1" },
    { 64, 32000, GEN_BF16, GEN_LOG_SOFTMAX, 90, "xchg=dsmem" },
    { 256, 1048576, GEN_F16, GEN_SOFTMAX_BW, 90, "hold=ring" },
    { 64, 4096, GEN_BF16, GEN_LOG_SOFTMAX_BW, 80, "split=1" },
    { 300, 4099, GEN_BF16, GEN_SOFTMAX, 75, "hold=packed" },
  };
  char dirs[3][256], kept[300], err[1024];
  gen_State *g;
  if (!getcwd(dirs[2], sizeof dirs[2])) return fprintf(stderr, "getcwd failed\n"), 1;
  snprintf(dirs[0], sizeof dirs[0], "/tmp/st-repro-XXXXXX");
  if (!mkdtemp(dirs[0])) return fprintf(stderr, "mkdtemp failed\n"), 1;
  snprintf(dirs[1], sizeof dirs[1], "%s/another", dirs[0]);
  snprintf(kept, sizeof kept, "%s/kept", dirs[0]);
  if (mkdir(dirs[1], 0700) || gen_open(&g, NULL, err, sizeof err)) return fprintf(stderr, "setup: %s\n", err), 1;
  for (size_t i = 0; i < (check_small() ? 1 : sizeof cases / sizeof cases[0]); i++) {
    gen_Problem p = { .rows = cases[i].rows, .cols = cases[i].cols, .dtype = cases[i].dtype, .op = cases[i].op,
                      .arch = cases[i].arch };
    char **list, *aux;
    int n;
    gen_Kernel k;
    CHECK(gen_space(g, &p, &list, &n) == 0, "%s", gen_error(g));
    for (int c = 0; c < n; c++)
      if (strstr(list[c], cases[i].only)) {
        CHECK(gen_render(g, &p, list[c], &k) == 0, "%s: %s", list[c], gen_error(g));
        same_bytes(k.source, "softmax.cu", p.arch, k.config, dirs, kept);
        gen_kernel_free(&k);
        break;
      }
    gen_free_list(list, n);
    if (gen_aux(g, &p, "aux", &aux) == 0) same_bytes(aux, "aux.cu", p.arch, "aux", dirs, kept), free(aux);
    else CHECK(0, "aux: %s", gen_error(g));
  }
  gen_close(g);
  char rm[600];
  snprintf(rm, sizeof rm, "rm -rf '%s'", dirs[0]);
  CHECK(chdir(dirs[2]) == 0 && system(rm) == 0, "cleanup of %s", dirs[0]);
  return check_done("test_repro");
}
