/*
** reverify.c — the tune command's side of a cached entry made under another driver or NVRTC:
** it is verified again on this GPU before the command answers with it (tuner/reverify.h).
*/
#include <stdio.h>

#include "cli.h"
#include "reverify.h"

/* A version as major*1000 + minor*10 into "13.0". */
static const char *version(int v, char *buf, size_t n)
{
  snprintf(buf, n, "%d.%d", v / 1000, v % 1000 / 10);
  return buf;
}

int cli_reverify(cli_Options *o, gen_State *g, const gen_Problem *p, cache_Db *db, const cache_Key *k, const cache_Entry *e)
{
  char err[1024], a[16], b[16], c[16], d[16];
  if (e->key.driver == 0)   /* imported from a bundle, not retimed */
    printf("cached winner imported from a bundle; verifying it on this GPU before its first use\n");
  else
    printf("cached winner tuned under driver %s, NVRTC %s; verifying it again under driver %s, NVRTC %s\n",
           version(e->key.driver, a, sizeof a), version(e->key.nvrtc, b, sizeof b), version(k->driver, c, sizeof c),
           version(k->nvrtc, d, sizeof d));
  fflush(stdout);
  int rc = tune_gpu_reverify(o->gpu, g, p, db, k, e, err, sizeof err);
  if (rc == CACHE_MISS) {
    printf("%s; tuning again\n", err);
    return -1;
  }
  if (rc) return cli_fail("%s", err), 1;
  if (err[0]) cli_fail("%s", err);
  printf("passed: kept, now recorded under this driver and NVRTC (softmax-tune log shows the verification)\n");
  return 0;
}
