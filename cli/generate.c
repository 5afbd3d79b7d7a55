/*
** generate.c — the commands that need no GPU: space, emit, compile, knobs.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Open the generator and fill the problem from the options; 0 on success, else exit status. */
static int setup(cli_Options *o, gen_State **g, gen_Problem *p, int need_config)
{
  if (!o->shape) return cli_fail("%s needs --shape RxC (see softmax-tune --help)", o->command), 2;
  if (need_config && !o->config) return cli_fail("%s needs --config STR (see softmax-tune space)", o->command), 2;
  cli_problem(o, p);
  p->arch = o->arch ? o->arch : 90;
  p->full = o->full;
  if (gen_open(g, o->templates, o->err, sizeof o->err)) return cli_fail("%s", o->err), 1;
  return 0;
}

int cli_space(cli_Options *o)
{
  gen_State *g;
  gen_Problem p;
  char **list;
  int n, space, rc = setup(o, &g, &p, 0);
  if (rc) return rc;
  tune_Options opt;
  cli_sweep_options(o, &opt);
  if (o->sweep != CLI_FAST) opt.keep = 0;   /* the whole space */
  if (tune_fast_space(g, &p, &opt, &list, &n, &space, o->err, sizeof o->err)) {
    cli_fail("%s", o->err);
    gen_close(g);
    return 2;
  }
  for (int i = 0; i < n; i++) puts(list[i]);
  gen_free_list(list, n);
  gen_close(g);
  return 0;
}

int cli_emit(cli_Options *o)
{
  gen_State *g;
  gen_Problem p;
  gen_Kernel k;
  int rc = setup(o, &g, &p, 1);
  if (rc) return rc;
  if (gen_render(g, &p, o->config, &k)) {
    cli_fail("%s", gen_error(g));
    gen_close(g);
    return 2;
  }
  fputs(k.source, stdout);
  gen_kernel_free(&k);
  gen_close(g);
  return 0;
}

int cli_write_atomic(const char *path, const void *data, size_t n, char *err, size_t errlen)
{
  char tmp[4096];
  FILE *f;
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return snprintf(err, errlen, "output path too long: '%s'", path), 1;
  if (!(f = fopen(tmp, "wb"))) return snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno)), 1;
  int bad = fwrite(data, 1, n, f) != n;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
    remove(tmp);
    return 1;
  }
  return 0;
}

/* The compile log's warnings, or "no warnings". */
static const char *warnings(const char *log)
{
  return log && strstr(log, "warning") ? "WARNINGS (see --log)" : "no warnings";
}

int cli_compile(cli_Options *o)
{
  gen_State *g;
  gen_Problem p;
  gen_Kernel k;
  gen_Cubin c;
  if (!o->arch) return cli_fail("compile needs --arch sm_XX, such as sm_90"), 2;
  if (!o->output) return cli_fail("compile needs -o FILE.cubin"), 2;
  int rc = setup(o, &g, &p, 1);
  if (rc) return rc;
  if (gen_render(g, &p, o->config, &k)) {
    cli_fail("%s", gen_error(g));
    gen_close(g);
    return 2;
  }
  gen_close(g);
  rc = gen_compile(k.source, "softmax.cu", p.arch, &c, o->err, sizeof o->err);
  if (o->log && c.log) fputs(c.log, stdout);
  if (rc) {
    cli_fail("%s", o->err);
  } else if (cli_write_atomic(o->output, c.data, c.size, o->err, sizeof o->err)) {
    cli_fail("%s", o->err);
    rc = 1;
  } else {
    printf("%s: sm_%d, %d registers, %d bytes stack, %d/%d bytes spilled (stores/loads), %zu bytes, %.0f ms, %s\n",
           o->output, p.arch, c.regs, c.stack, c.spill_stores, c.spill_loads, c.size, c.ms, warnings(c.log));
    printf("config %s\noptions %s\n", k.config, c.options);
  }
  gen_cubin_free(&c);
  gen_kernel_free(&k);
  return rc ? 1 : 0;
}

int cli_knobs(cli_Options *o)
{
  gen_State *g;
  char *text;
  if (gen_open(&g, o->templates, o->err, sizeof o->err)) return cli_fail("%s", o->err), 1;
  if (gen_knobs(g, &text)) {
    cli_fail("%s", gen_error(g));
    gen_close(g);
    return 1;
  }
  printf("knobs (every config names each one):\n%s", text);
  free(text);
  gen_close(g);
  return 0;
}
