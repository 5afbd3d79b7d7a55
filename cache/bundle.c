/*
** bundle.c — the bundle file (a header line over an SQLite image, see bundle.h) and exporting
** cache entries into one, without their cubins. Importing is merge.c.
*/
#include "bundle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_sql.h"

#define MAGIC "softmax-tune bundle "

/* ---- the file ---- */

static int write_all(int fd, const void *p, size_t n)
{
  for (const char *c = p; n > 0;) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return 1;
    c += w, n -= (size_t)w;
  }
  return 0;
}

int cache_bundle_write(const char *path, int format, const void *image, size_t n, char *err, size_t errlen)
{
  char tmp[4200], sum[65], head[160];
  cache_sha256(image, n, sum);
  int hn = snprintf(head, sizeof head, MAGIC "%d bytes=%zu sha256=%s\n", format, n, sum);
  if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
    return snprintf(err, errlen, "bundle path too long: '%.200s'", path), CACHE_REFUSED;
  int fd = mkstemp(tmp);
  if (fd < 0) return snprintf(err, errlen, "cannot write bundle '%s': %s", path, strerror(errno)), CACHE_REFUSED;
  /* readable by all, as a file made by the shell would be (mkstemp makes it 0600) */
  int bad = fchmod(fd, 0644) != 0 || write_all(fd, head, (size_t)hn) || write_all(fd, image, n) || fsync(fd) != 0;
  bad = close(fd) != 0 || bad;
  if (bad || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write bundle '%s': %s", path, strerror(errno));
    unlink(tmp);
    return CACHE_REFUSED;
  }
  return 0;
}

/* The whole file into a buffer from sqlite3_malloc64 (an image SQLite may own). */
static int slurp(const char *path, char **buf, size_t *n, char *err, size_t errlen)
{
  struct stat sb;
  FILE *f = fopen(path, "rb");
  long size;
  *buf = NULL;
  if (!f) return snprintf(err, errlen, "cannot read bundle '%s': %s", path, strerror(errno)), CACHE_REFUSED;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return snprintf(err, errlen, "cannot read bundle '%s': not a regular file", path), CACHE_REFUSED;
  }
  if (!(*buf = sqlite3_malloc64((sqlite3_uint64)size + 1))) {
    fclose(f);
    return snprintf(err, errlen, "out of memory reading bundle '%s' (%ld bytes)", path, size), CACHE_ERROR;
  }
  *n = fread(*buf, 1, (size_t)size, f);
  fclose(f);
  (*buf)[*n] = '\0';
  return 0;
}

/* The header line of buf: its version, image size and checksum; 0 when it parses. */
static int parse_header(const char *buf, size_t n, int *version, size_t *size, char sum[65], size_t *len)
{
  const char *nl = memchr(buf, '\n', n < 200 ? n : 200);
  int used = 0;
  if (!nl || strncmp(buf, MAGIC, strlen(MAGIC)) != 0) return 1;
  if (sscanf(buf, MAGIC "%d bytes=%zu sha256=%64[0-9a-f]%n", version, size, sum, &used) != 3 || buf + used != nl)
    return 1;
  *len = (size_t)(nl - buf) + 1;
  return strlen(sum) != 64;
}

/* The file's first bytes, printable, for a message about a file that is not a bundle. */
static const char *opening(const char *buf, size_t n, char *out, size_t outlen)
{
  size_t i = 0;
  for (; i < n && i < 24 && i + 1 < outlen; i++) out[i] = buf[i] >= 0x20 && buf[i] < 0x7f ? buf[i] : '?';
  out[i] = '\0';
  return out;
}

int cache_bundle_read(const char *path, int *format, void **image, size_t *n, char *err, size_t errlen)
{
  char *buf, sum[65] = "", got[65], start[32];
  size_t len, size = 0, hlen = 0;
  int version = 0, rc = slurp(path, &buf, &len, err, errlen);
  *image = NULL;
  if (rc) return rc;
  if (parse_header(buf, len, &version, &size, sum, &hlen))
    rc = snprintf(err, errlen, "'%s' is not a softmax-tune bundle: it starts with '%s'", path, opening(buf, len, start, sizeof start));
  else if (version < 1 || version > CACHE_BUNDLE_VERSION)
    rc = snprintf(err, errlen, "bundle '%s' is format %d; this softmax-tune reads formats 1 to %d", path, version,
                  CACHE_BUNDLE_VERSION);
  else if (len - hlen != size)
    rc = snprintf(err, errlen, "bundle '%s' is damaged: %zu bytes after its header, it says %zu (%s)", path, len - hlen, size,
                  len - hlen < size ? "truncated" : "bytes appended");
  else if (cache_sha256(buf + hlen, size, got), strcmp(got, sum) != 0)
    rc = snprintf(err, errlen, "bundle '%s' is damaged: its SHA-256 is %.16s..., its header says %.16s...", path, got, sum);
  if (rc) {
    sqlite3_free(buf);
    return CACHE_REFUSED;
  }
  memmove(buf, buf + hlen, size);
  *image = buf;
  *n = size;
  *format = version;
  return 0;
}

/* ---- a scratch database for a bundle's image ---- */

int cache_scratch(sqlite3 **db, char *err, size_t errlen)
{
  if (sqlite3_open(":memory:", db) != SQLITE_OK || sqlite3_busy_timeout(*db, 60000) != SQLITE_OK) {
    snprintf(err, errlen, "cannot make a scratch database: %s", *db ? sqlite3_errmsg(*db) : "out of memory");
    sqlite3_close(*db);
    *db = NULL;
    return CACHE_ERROR;
  }
  return 0;
}

int cache_attach(sqlite3 *db, const char *path, const char *as, char *err, size_t errlen)
{
  sqlite3_stmt *st = NULL;
  char *sql = sqlite3_mprintf("ATTACH ?1 AS \"%w\"", as);
  int ok = sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
           sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC) == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE;
  if (!ok) snprintf(err, errlen, "cannot attach cache '%s': %s", path, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  sqlite3_free(sql);
  return ok ? 0 : CACHE_ERROR;
}

/* ---- export ---- */

/* Copy the entries matching f without their cubins, their runs and trials, from src into main. */
static int copy_matching(sqlite3 *db, const cache_Key *f, char *err, size_t errlen)
{
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, "INSERT INTO main.entries(" ENTRY_COLS ", cubin) SELECT " ENTRY_COLS ", x''"
                              " FROM src.entries WHERE " FILTER, -1, &st, NULL);
  if (rc == SQLITE_OK && cache_bind_filter(st, f) == SQLITE_OK) rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
  else rc = SQLITE_ERROR;
  sqlite3_finalize(st);
  if (rc != SQLITE_OK) return snprintf(err, errlen, "exporting entries: %s", sqlite3_errmsg(db)), CACHE_ERROR;
  return cache_exec(db,
                    "INSERT INTO main.runs SELECT * FROM src.runs WHERE id IN (SELECT run FROM main.entries);"
                    "INSERT INTO main.trials SELECT * FROM src.trials WHERE run IN (SELECT id FROM main.runs);",
                    err, errlen) ? CACHE_ERROR : 0;
}

/* The bundle's meta rows: its format and when it was made; where, only when asked. */
static int stamp(sqlite3 *db, int with_host, char *err, size_t errlen)
{
  char host[256] = "", when[32];
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%SZ", &tm);
  if (with_host && gethostname(host, sizeof host - 1) != 0)
    return snprintf(err, errlen, "cannot read the host name: %s", strerror(errno)), CACHE_ERROR;
  char *q = sqlite3_mprintf("INSERT INTO meta VALUES('bundle', '%d'), ('exported', %Q)", CACHE_BUNDLE_VERSION, when);
  char *h = with_host ? sqlite3_mprintf("INSERT INTO meta VALUES('host', %Q)", host) : NULL;
  int rc = !q || (with_host && !h) || cache_exec(db, q, err, errlen) || (h && cache_exec(db, h, err, errlen));
  sqlite3_free(q);
  sqlite3_free(h);
  return rc ? CACHE_ERROR : 0;
}

/* Counts of what main holds. */
static int count_bundle(sqlite3 *db, cache_Bundle *b, char *err, size_t errlen)
{
  sqlite3_stmt *st;
  const char *sql = "SELECT (SELECT count(*) FROM main.entries), (SELECT count(*) FROM main.runs),"
                    " (SELECT count(*) FROM main.trials)";
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW;
  if (rc) snprintf(err, errlen, "counting the bundle: %s", sqlite3_errmsg(db));
  else b->entries = sqlite3_column_int(st, 0), b->runs = sqlite3_column_int(st, 1), b->trials = sqlite3_column_int(st, 2);
  sqlite3_finalize(st);
  return rc ? CACHE_ERROR : 0;
}

/* The cache at path is there and at the current schema (migrated if it was older). */
int cache_ready(const char *path, int create, char *err, size_t errlen)
{
  cache_Db *c = NULL;
  int rc = cache_open(&c, path, create, err, errlen);
  cache_close(c);
  return rc;
}

static int serialize_to(sqlite3 *db, const char *out, char *err, size_t errlen)
{
  sqlite3_int64 size = 0;
  unsigned char *image = sqlite3_serialize(db, "main", &size, 0);
  if (!image) return snprintf(err, errlen, "cannot serialize the bundle: out of memory"), CACHE_ERROR;
  int rc = cache_bundle_write(out, CACHE_BUNDLE_VERSION, image, (size_t)size, err, errlen);
  sqlite3_free(image);
  return rc;
}

int cache_export(const char *cache_path, const cache_Key *filter, int with_host, const char *out, cache_Bundle *b,
                 char *err, size_t errlen)
{
  sqlite3 *db = NULL;
  int rc;
  memset(b, 0, sizeof *b);
  if ((rc = cache_ready(cache_path, 0, err, errlen)) || (rc = cache_scratch(&db, err, errlen))) return rc;
  rc = cache_exec(db, cache_schema_sql, err, errlen) ? CACHE_ERROR : cache_attach(db, cache_path, "src", err, errlen);
  /* one read transaction: the entries and their runs from one snapshot, whoever writes meanwhile */
  if (!rc && cache_exec(db, "BEGIN", err, errlen)) rc = CACHE_ERROR;
  if (!rc) rc = copy_matching(db, filter, err, errlen);
  if (!rc) rc = count_bundle(db, b, err, errlen);
  if (!rc && b->entries == 0) rc = (snprintf(err, errlen, "no cache entries match in '%s': nothing exported", cache_path), CACHE_MISS);
  if (!rc && (cache_exec(db, "COMMIT; DETACH src", err, errlen) || stamp(db, with_host, err, errlen))) rc = CACHE_ERROR;
  if (!rc) rc = serialize_to(db, out, err, errlen);
  sqlite3_close(db);
  return rc;
}
