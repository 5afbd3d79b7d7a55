/*
** cubins.c — compiled kernels kept on disk, so that a source is compiled once: a folder of files
** named <SHA-256 of source, name (as gen_source_name fixes it), arch, NVRTC version and
** options>.cubin, each a one-line header (format, size, the cubin's SHA-256, ptxas' register
** and spill counts) and the cubin's bytes.
** Written to a temporary file and renamed (readers never see half a file); a read checks size
** and checksum, and a file that fails is compiled again. A hit refreshes the file's time, so
** trimming the folder removes the least recently used first.
*/
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "softmax-tune cubin 1"

static double now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void cache_cubin_dir(const char *opt, char *out, size_t n)
{
  const char *env = getenv("SOFTMAX_TUNE_CUBINS");
  const char *pick = opt && *opt ? opt : env && *env ? env : NULL;
  int made;
  if (pick) made = strcmp(pick, "none") == 0 ? 0 : snprintf(out, n, "%s", pick);
  else made = cache_default_place("cubins", out, n);
  if (made <= 0 || made >= (int)n) out[0] = '\0';
}

/* The file of a source in dir: dir/<key>.cubin. */
static int key_path(const char *dir, const char *source, const char *name, int arch, char *path, size_t n)
{
  char opts[256], fixed[256], head[768], sum[65];
  int major = 0, minor = 0;
  gen_nvrtc_version(&major, &minor);
  gen_compile_options(arch, opts, sizeof opts);
  gen_source_name(name, fixed, sizeof fixed);   /* files kept before names were fixed: misses */
  int hn = snprintf(head, sizeof head, MAGIC "\nnvrtc %d.%d\n%s\n%s\n", major, minor, opts, fixed);
  size_t sn = strlen(source);
  char *all = malloc((size_t)hn + sn);
  if (!all) return 1;
  memcpy(all, head, (size_t)hn);
  memcpy(all + hn, source, sn);
  cache_sha256(all, (size_t)hn + sn, sum);
  free(all);
  int made = snprintf(path, n, "%s/%s.cubin", dir, sum);
  return made <= 0 || made >= (int)n;
}

/* A kept file into out; 0 when it is whole and its checksum holds. */
static int read_kept(const char *path, gen_Cubin *out)
{
  FILE *f = fopen(path, "rb");
  char line[256], want[65], sum[65];
  long long size;
  int ok = 0;
  if (!f) return 1;
  memset(out, 0, sizeof *out);
  if (fgets(line, sizeof line, f) &&
      sscanf(line, MAGIC " %lld %64s %d %d %d %d", &size, want, &out->regs, &out->stack, &out->spill_stores,
             &out->spill_loads) == 6 &&
      size > 0 && size < (1LL << 30) && (out->data = malloc((size_t)size)) &&
      fread(out->data, 1, (size_t)size, f) == (size_t)size && fgetc(f) == EOF) {
    cache_sha256(out->data, (size_t)size, sum);
    ok = strcmp(sum, want) == 0;
    out->size = (size_t)size;
  }
  fclose(f);
  if (!ok) gen_cubin_free(out);
  return !ok;
}

/* c into dir atomically; any failure leaves nothing behind (and is not an error). */
static void write_kept(const char *dir, const char *path, const gen_Cubin *c)
{
  char tmp[4200], sum[65], err[256];
  snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
  if (cache_make_parents(tmp, err, sizeof err)) return;
  int fd = mkstemp(tmp);
  if (fd < 0) return;
  FILE *f = fchmod(fd, 0644) == 0 ? fdopen(fd, "wb") : NULL;
  if (!f) return (void)(close(fd), unlink(tmp));
  cache_sha256(c->data, c->size, sum);
  int bad = fprintf(f, MAGIC " %zu %s %d %d %d %d\n", c->size, sum, c->regs, c->stack, c->spill_stores,
                    c->spill_loads) < 0 ||
            fwrite(c->data, 1, c->size, f) != c->size;
  bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) unlink(tmp);
}

/* Trim dir once per process (per folder named): the first use pays for the scan. */
static void trim_once(const char *dir)
{
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static char done[4096];
  pthread_mutex_lock(&mu);
  if (strcmp(done, dir) != 0) {
    snprintf(done, sizeof done, "%s", dir);
    cache_cubins_trim(dir, CACHE_CUBINS_MAX, NULL);
  }
  pthread_mutex_unlock(&mu);
}

int cache_compile(const char *dir, const char *source, const char *name, int arch, gen_Cubin *out, char *err,
                  size_t errlen)
{
  char path[4200];
  double t0 = now_ms();
  if (!dir || !*dir || key_path(dir, source, name, arch, path, sizeof path))
    return gen_compile(source, name, arch, out, err, errlen);
  trim_once(dir);
  if (read_kept(path, out) == 0) {
    gen_compile_options(arch, out->options, sizeof out->options);
    out->kept = 1;
    out->ms = now_ms() - t0;
    (void)utimensat(AT_FDCWD, path, NULL, 0);   /* recently used; best effort, as trimming is */
    return 0;
  }
  if (gen_compile(source, name, arch, out, err, errlen)) return 1;
  write_kept(dir, path, out);
  return 0;
}

typedef struct Kept {
  char name[80];
  int64_t bytes;
  time_t mtime;
} Kept;

static int older(const void *a, const void *b)
{
  const Kept *x = a, *y = b;
  return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

/* The *.cubin files of d with their sizes and times; their total into *total. */
static int list_kept(DIR *d, const char *dir, Kept **out, int *n, int64_t *total)
{
  struct dirent *e;
  int cap = 0;
  *out = NULL, *n = 0, *total = 0;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    struct stat st;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (strncmp(e->d_name, ".tmp-", 5) == 0 && stat(path, &st) == 0 && st.st_mtime < time(NULL) - 3600) {
      unlink(path);   /* left by a writer that died */
      continue;
    }
    if (len < 7 || len >= sizeof (*out)->name || strcmp(e->d_name + len - 6, ".cubin") != 0) continue;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (*n == cap) {
      Kept *grown = realloc(*out, sizeof **out * (size_t)(cap = cap ? 2 * cap : 256));
      if (!grown) return free(*out), *out = NULL, 1;
      *out = grown;
    }
    snprintf((*out)[*n].name, sizeof (*out)->name, "%s", e->d_name);
    (*out)[*n].bytes = st.st_size, (*out)[*n].mtime = st.st_mtime;
    *total += st.st_size;
    (*n)++;
  }
  return 0;
}

int cache_cubins_trim(const char *dir, int64_t max_bytes, int *removed)
{
  DIR *d = opendir(dir);
  Kept *k;
  int n, gone = 0;
  int64_t total;
  if (removed) *removed = 0;
  if (!d) return errno == ENOENT ? 0 : 1;
  int rc = list_kept(d, dir, &k, &n, &total);
  closedir(d);
  if (rc) return 1;
  if (total > max_bytes) {
    qsort(k, (size_t)n, sizeof *k, older);
    for (int i = 0; i < n && total > max_bytes / 4 * 3; i++) {
      char path[4200];
      snprintf(path, sizeof path, "%s/%s", dir, k[i].name);
      if (unlink(path) == 0) total -= k[i].bytes, gone++;
    }
  }
  free(k);
  if (removed) *removed = gone;
  return 0;
}
