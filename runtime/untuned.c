/*
** untuned.c — a kernel config for a shape nobody tuned: the user's tuned entries of this GPU
** and templates, and the default table, handed to templates/untuned.lua (gen_untuned).
*/
#include "untuned.h"
#include "kset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  long n = -1;
  if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
    buf[n] = '\0';
  } else {
    snprintf(err, errlen, "cannot read the default table '%s' ($SOFTMAX_TUNE_TABLE): %s", path, f ? "read failed" : strerror(errno));
    free(buf);
    buf = NULL;
  }
  if (f) fclose(f);
  return buf;
}

int untuned_table(gen_State *g, int arch, char **text, char *name, size_t namelen, char *err, size_t errlen)
{
  const char *env = getenv("SOFTMAX_TUNE_TABLE");
  *text = NULL;
  if (env && strcmp(env, "none") == 0) return snprintf(name, namelen, "none"), 0;
  if (env && *env) {
    snprintf(name, namelen, "%s", env);
    return (*text = slurp(env, err, errlen)) ? 0 : 1;
  }
  return gen_default_table(g, arch, text, name, namelen);
}

/* The entries of db tuned on base's GPU with base's templates, as gen_untuned takes them. */
static int tuned_entries(cache_Db *db, const cache_Key *base, cache_Entry **all, gen_Tuned **out, int *n,
                         char *err, size_t errlen)
{
  cache_Key f;
  int total = 0, k = 0;
  *all = NULL, *out = NULL, *n = 0;
  if (!db) return 0;
  cache_filter_all(&f);
  snprintf(f.gpu, sizeof f.gpu, "%s", base->gpu);
  if (cache_entries(db, &f, all, &total)) return snprintf(err, errlen, "%s", cache_error(db)), 1;
  if (total && !(*out = calloc((size_t)total, sizeof **out))) return snprintf(err, errlen, "out of memory"), 1;
  for (int i = 0; i < total; i++) {
    const cache_Key *e = &(*all)[i].key;
    if (e->arch != base->arch || e->sms != base->sms || strcmp(e->templates, base->templates)) continue;
    (*out)[k++] = (gen_Tuned){ e->rows, e->cols, e->dtype, e->op, (*all)[i].config };
  }
  *n = k;
  return 0;
}

int untuned_choose(gen_State *g, cache_Db *db, const cache_Key *base, const gen_Problem *p, int unaligned,
                   gen_Choice *out, char *err, size_t errlen)
{
  char *table = NULL, name[4096];
  cache_Entry *all = NULL;
  gen_Tuned *user = NULL;
  int n = 0, rc = 1;
  if (untuned_table(g, p->arch, &table, name, sizeof name, err, errlen) == 0 &&
      tuned_entries(db, base, &all, &user, &n, err, errlen) == 0) {
    rc = gen_untuned(g, p, unaligned, table, name, base->templates, user, n, out);
    if (rc) snprintf(err, errlen, "%s", gen_error(g));
  }
  free(table);
  free(user);
  free(all);
  return rc;
}

int untuned_sweep_config(gen_State *g, const gen_Problem *p, char *config, size_t n)
{
  gen_Choice ch;
  char err[512];
  cache_Key base;   /* no cache: its templates serve a stale table's note alone, not read here */
  gen_Problem key;
  memset(&base, 0, sizeof base);
  kset_key_problem(p, &key);
  if (untuned_choose(g, NULL, &base, &key, 0, &ch, err, sizeof err)) return 1;
  return snprintf(config, n, "%s", ch.config) >= (int)n;
}
