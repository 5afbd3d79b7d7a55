/*
** test_cubins.c — kept cubins (cache/cubins.c) without a GPU: a compile is kept and read back
** byte for byte; another source, name or arch is another file; a spoiled, cut or lying file is compiled
** again and rewritten; a folder that cannot be written costs nothing but the keeping; threads
** compiling one source at once leave one whole file; the folder's place follows opt, the
** environment and HOME; trimming removes the least recently used, and dead writers' leftovers.
*/
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "check.h"

static const char *SRC = "extern \"C\" __global__ void twice(float *x) { x[threadIdx.x] *= 2.f; }\n";
static const char *SRC2 = "extern \"C\" __global__ void thrice(float *x) { x[threadIdx.x] *= 3.f; }\n";
static char dir[256];

/* How many files of dir end with suffix (".cubin") or start with prefix (".tmp-"). */
static int count(const char *d, const char *suffix, const char *prefix)
{
  DIR *h = opendir(d);
  struct dirent *e;
  int n = 0;
  while (h && (e = readdir(h))) {
    size_t len = strlen(e->d_name), sl = suffix ? strlen(suffix) : 0;
    n += suffix ? len > sl && strcmp(e->d_name + len - sl, suffix) == 0 : strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  }
  if (h) closedir(h);
  return n;
}

/* The (last listed) kept file of d into path; 0 when there is none. */
static int kept_file(const char *d, char *path, size_t n)
{
  DIR *h = opendir(d);
  struct dirent *e;
  int found = 0;
  while (h && (e = readdir(h)))
    if (strstr(e->d_name, ".cubin")) found = snprintf(path, n, "%s/%s", d, e->d_name) > 0;
  if (h) closedir(h);
  return found;
}

static int compile(const char *d, const char *src, int arch, gen_Cubin *c)
{
  char err[1024];
  int rc = cache_compile(d, src, "k.cu", arch, c, err, sizeof err);
  CHECK(rc == 0, "compile: %s", err);
  return rc;
}

static int same(const gen_Cubin *a, const gen_Cubin *b)
{
  return a->size == b->size && memcmp(a->data, b->data, a->size) == 0;
}

/* Overwrite byte `at` of path (from the end when negative), or cut the file to `cut` bytes. */
static void spoil(const char *path, long at, long cut)
{
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL, "cannot open %s", path);
  if (!f) return;
  if (cut >= 0) CHECK(ftruncate(fileno(f), cut) == 0, "truncate");
  else {
    fseek(f, at, at < 0 ? SEEK_END : SEEK_SET);
    int ch = fgetc(f);
    fseek(f, -1, SEEK_CUR);
    fputc(ch ^ 0x5a, f);
  }
  fclose(f);
}

static void test_keep(void)
{
  gen_Cubin first, again, other;
  char path[600];
  if (compile(dir, SRC, 90, &first)) return;
  CHECK(!first.kept && count(dir, ".cubin", NULL) == 1, "first compile: kept %d, %d files", first.kept,
        count(dir, ".cubin", NULL));
  if (compile(dir, SRC, 90, &again) == 0) {
    CHECK(again.kept && same(&first, &again) && again.regs == first.regs && again.spill_stores == first.spill_stores &&
              strcmp(again.options, first.options) == 0 && !again.log && !again.ptx,
          "read back: kept %d, %zu vs %zu bytes, regs %d vs %d", again.kept, again.size, first.size, again.regs,
          first.regs);
    gen_cubin_free(&again);
  }
  if (compile(dir, SRC2, 90, &other) == 0) gen_cubin_free(&other);
  if (compile(dir, SRC, 80, &other) == 0) gen_cubin_free(&other);
  CHECK(count(dir, ".cubin", NULL) == 3, "another source and another arch: %d files, not 3", count(dir, ".cubin", NULL));
  gen_cubin_free(&first);

  /* a spoiled byte of the cubin, of the header, and a cut file: compiled again, then kept again */
  char sub[300];
  snprintf(sub, sizeof sub, "%s/one", dir);
  if (compile(sub, SRC, 90, &first)) return;
  int found = kept_file(sub, path, sizeof path);
  CHECK(found, "nothing kept in %s", sub);
  for (int i = 0; i < 3 && found; i++) {
    static const long at[3] = { -7, 21, 0 }, cut[3] = { -1, -1, 40 };
    spoil(path, at[i], cut[i]);
    if (compile(sub, SRC, 90, &again)) continue;
    CHECK(!again.kept && same(&first, &again), "spoiled (%d): kept %d", i, again.kept);
    gen_cubin_free(&again);
    if (compile(sub, SRC, 90, &again)) continue;
    CHECK(again.kept && same(&first, &again), "rewritten (%d): kept %d", i, again.kept);
    gen_cubin_free(&again);
  }
  gen_cubin_free(&first);
}

/* Hostile files under a source's name (a header that lies about the size, the checksum or the
** format, bytes past the end): never handed out; compiled again and rewritten. */
static void test_hostile(void)
{
  char d[300], path[600], sum[65], bad[65];
  gen_Cubin good, c;
  snprintf(d, sizeof d, "%s/hostile", dir);
  if (compile(d, SRC, 90, &good)) return;
  int found = kept_file(d, path, sizeof path);
  CHECK(found, "nothing kept in %s", d);
  cache_sha256(good.data, good.size, sum);
  snprintf(bad, sizeof bad, "%c%s", sum[0] == '0' ? '1' : '0', sum + 1);
  for (int i = 0; i < 6 && found; i++) {
    FILE *f = fopen(path, "wb");
    if (!f) continue;
    switch (i) {
    case 0: fprintf(f, "softmax-tune cubin 1 %zu %s 8 0 0 0\n", good.size, sum); break;   /* + a byte past the end */
    case 1: fprintf(f, "softmax-tune cubin 1 0 %s 8 0 0 0\n", sum); break;
    case 2: fprintf(f, "softmax-tune cubin 1 99999999999 %s 8 0 0 0\n", sum); break;
    case 3: fprintf(f, "softmax-tune cubin 2 %zu %s 8 0 0 0\n", good.size, sum); break;
    case 4: fprintf(f, "softmax-tune cubin 1 %zu %s 8 0 0 0\n", good.size, bad); break;
    case 5: fprintf(f, "softmax-tune cubin 1 %zu %s\n", good.size, sum); break;
    }
    fwrite(good.data, 1, good.size, f);
    if (i == 0) fputc('x', f);
    fclose(f);
    if (compile(d, SRC, 90, &c)) continue;
    CHECK(!c.kept && same(&good, &c), "hostile file %d: kept %d", i, c.kept);
    gen_cubin_free(&c);
    if (compile(d, SRC, 90, &c)) continue;
    CHECK(c.kept && same(&good, &c), "hostile file %d: not rewritten", i);
    gen_cubin_free(&c);
  }
  gen_cubin_free(&good);
}

/* A folder under a regular file cannot be made: the compile stands, nothing is kept. */
static void test_unwritable(void)
{
  char file[300], bad[320];
  gen_Cubin c;
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE *f = fopen(file, "w");
  if (f) fclose(f);
  snprintf(bad, sizeof bad, "%s/sub", file);
  for (int i = 0; i < 2; i++)
    if (compile(bad, SRC, 90, &c) == 0) {
      CHECK(!c.kept && c.size > 0, "unwritable folder: kept %d", c.kept);
      gen_cubin_free(&c);
    }
  if (compile("", SRC, 90, &c) == 0) {
    CHECK(!c.kept && c.log, "no folder: kept %d", c.kept);
    gen_cubin_free(&c);
  }
}

typedef struct Job {
  char dir[300];
  gen_Cubin c;
  int rc;
} Job;

static void *job(void *ud)
{
  Job *j = ud;
  char err[512];
  j->rc = cache_compile(j->dir, SRC2, "k.cu", 90, &j->c, err, sizeof err);
  return NULL;
}

static void test_threads(void)
{
  Job jobs[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    memset(&jobs[i], 0, sizeof jobs[i]);
    snprintf(jobs[i].dir, sizeof jobs[i].dir, "%s/threads", dir);
    CHECK(pthread_create(&th[i], NULL, job, &jobs[i]) == 0, "thread %d", i);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++)
    CHECK(jobs[i].rc == 0 && jobs[0].rc == 0 && same(&jobs[i].c, &jobs[0].c), "thread %d: rc %d, %zu bytes", i,
          jobs[i].rc, jobs[i].c.size);
  for (int i = 0; i < 4; i++) gen_cubin_free(&jobs[i].c);
  CHECK(count(jobs[0].dir, ".cubin", NULL) == 1 && count(jobs[0].dir, NULL, ".tmp-") == 0,
        "four threads: %d files, %d temporaries", count(jobs[0].dir, ".cubin", NULL), count(jobs[0].dir, NULL, ".tmp-"));
}

static void test_dir(void)
{
  char out[512];
  unsetenv("SOFTMAX_TUNE_CUBINS"), unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  cache_cubin_dir(NULL, out, sizeof out);
  CHECK(strcmp(out, "/home/u/.cache/softmax-tune/cubins") == 0, "HOME: %s", out);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  cache_cubin_dir(NULL, out, sizeof out);
  CHECK(strcmp(out, "/xdg/softmax-tune/cubins") == 0, "XDG: %s", out);
  setenv("SOFTMAX_TUNE_CUBINS", "/env", 1);
  cache_cubin_dir(NULL, out, sizeof out);
  CHECK(strcmp(out, "/env") == 0, "env: %s", out);
  cache_cubin_dir("/opt", out, sizeof out);
  CHECK(strcmp(out, "/opt") == 0, "opt: %s", out);
  setenv("SOFTMAX_TUNE_CUBINS", "none", 1);
  cache_cubin_dir(NULL, out, sizeof out);
  CHECK(out[0] == '\0', "env none: %s", out);
  cache_cubin_dir("none", out, sizeof out);
  CHECK(out[0] == '\0', "opt none: %s", out);
  unsetenv("SOFTMAX_TUNE_CUBINS"), unsetenv("XDG_CACHE_HOME"), unsetenv("HOME");
  cache_cubin_dir(NULL, out, sizeof out);
  CHECK(out[0] == '\0', "no HOME: %s", out);
}

/* Four 1000-byte files a minute apart, trimmed to 3000 bytes: the two oldest go (to 3/4 of it). */
static void test_trim(void)
{
  char d[300], path[400];
  int removed = -1;
  time_t now = time(NULL);
  snprintf(d, sizeof d, "%s/trim", dir);
  mkdir(d, 0755);
  for (int i = 0; i < 6; i++) {
    static const char *const names[] = { "a.cubin", "b.cubin", "c.cubin", "d.cubin", ".tmp-old", "notes.txt" };
    snprintf(path, sizeof path, "%s/%s", d, names[i]);
    FILE *f = fopen(path, "w");
    for (int b = 0; f && b < 1000; b++) fputc('x', f);
    if (f) fclose(f);
    struct timespec t[2] = { { now - 7200 + 60 * i, 0 }, { now - 7200 + 60 * i, 0 } };
    CHECK(utimensat(AT_FDCWD, path, t, 0) == 0, "utimensat %s", path);
  }
  CHECK(cache_cubins_trim(d, 3000, &removed) == 0 && removed == 2, "trim: removed %d", removed);
  snprintf(path, sizeof path, "%s/c.cubin", d);
  CHECK(access(path, F_OK) == 0 && count(d, ".cubin", NULL) == 2, "the newest stay: %d left", count(d, ".cubin", NULL));
  CHECK(count(d, NULL, ".tmp-") == 0 && count(d, ".txt", NULL) == 1, "leftover temporary removed, others kept");
  CHECK(cache_cubins_trim(d, 3000, &removed) == 0 && removed == 0, "under the limit: removed %d", removed);
  snprintf(path, sizeof path, "%s/none", dir);
  CHECK(cache_cubins_trim(path, 1, &removed) == 0 && removed == 0, "a missing folder is empty");
}

int main(void)
{
  snprintf(dir, sizeof dir, "%s/st-cubins-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  test_keep();
  test_hostile();
  test_unwritable();
  test_threads();
  test_trim();
  test_dir();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return check_done("test_cubins");
}
