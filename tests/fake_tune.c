/*
** fake_tune.c — a stand-in for the softmax-tune command on a machine without a GPU, for the
** Slurm recipe's test (tests/slurm_test.sh): `fake_tune [--gpu N] --shape RxC [--dtype T]
** [--op OP] --cache PATH [--quiet]` tunes on the fake backend (fake_backend.h) and stores the
** run as the command would, under these templates' hash (so that `cache import` builds its
** kernels with NVRTC); a command word (cache, log, ...) runs the real command,
** $ST_REAL_BIN, with the same arguments. Exit 0, 1 (failed), 2 (bad input).
*/
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fake_backend.h"

static int bad(const char *what, const char *value)
{
  fprintf(stderr, "fake_tune: bad %s '%s'\n", what, value);
  return 2;
}

int main(int argc, char **argv)
{
  static const struct option opts[] = { { "gpu", 1, 0, 'g' }, { "shape", 1, 0, 's' }, { "dtype", 1, 0, 'd' },
                                        { "op", 1, 0, 'o' },  { "cache", 1, 0, 'c' }, { "quiet", 0, 0, 'q' },
                                        { 0, 0, 0, 0 } };
  const char *real = getenv("ST_REAL_BIN"), *cache = NULL;
  char err[1024];
  gen_Problem p = fake_problem(1);
  int c, have_shape = 0;
  if (argc > 1 && argv[1][0] != '-') {
    if (!real) return fprintf(stderr, "fake_tune: set ST_REAL_BIN to run '%s'\n", argv[1]), 2;
    argv[0] = (char *)real;
    execv(real, argv);
    return perror(real), 1;
  }
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 's' && gen_parse_shape(optarg, &p.rows, &p.cols, err, sizeof err)) return fprintf(stderr, "fake_tune: %s\n", err), 2;
    if (c == 'd' && (p.dtype = gen_parse_dtype(optarg)) < 0) return bad("dtype", optarg);
    if (c == 'o' && (p.op = gen_parse_op(optarg)) < 0) return bad("op", optarg);
    if (c == '?') return bad("option", argv[optind - 1]);
    have_shape |= c == 's';
    if (c == 'c') cache = optarg;
  }
  if (!have_shape || !cache) return fprintf(stderr, "fake_tune: needs --shape and --cache\n"), 2;
  gen_State *g = NULL;
  cache_Db *db = NULL;
  int64_t run = 0;
  int nvrtc = 0;
  char templates[65];
  int rc = gen_open(&g, NULL, err, sizeof err) || tune_templates_hash(g, templates, &nvrtc, err, sizeof err) ||
           cache_open(&db, cache, 1, err, sizeof err) || fake_tune_store_as(g, db, &p, 1.0, templates, &run, err, sizeof err);
  if (rc) fprintf(stderr, "fake_tune: %s\n", err);
  else printf("stored in %s (run %lld)\n", cache, (long long)run);
  cache_close(db);
  gen_close(g);
  return rc;
}
