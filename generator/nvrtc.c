/*
** nvrtc.c — CUDA source to cubin with NVRTC, keeping the compile log (ptxas -v included) and
** the register and spill counts it reports. Safe to call from several threads at once.
*/
#include "gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvrtc.h>

static double now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The number after `key` in the log, or -1. */
static int log_number(const char *log, const char *key)
{
  const char *p = log ? strstr(log, key) : NULL;
  return p ? atoi(p + strlen(key)) : -1;
}

/* ptxas -v says "Used 32 registers", "256 bytes stack frame, 0 bytes spill stores, ...". */
static void read_resources(gen_Cubin *c)
{
  const char *p = c->log ? strstr(c->log, "bytes stack frame") : NULL;
  c->regs = log_number(c->log, "Used ");
  c->stack = c->spill_stores = c->spill_loads = -1;
  if (!p) return;
  while (p > c->log && p[-1] != '\n' && p[-1] != '.') p--;   /* back to the number */
  c->stack = atoi(p);
  p = strstr(p, "stack frame, ");
  if (p) c->spill_stores = atoi(p + 13);
  p = p ? strstr(p, "spill stores, ") : NULL;
  if (p) c->spill_loads = atoi(p + 14);
}

static int nvrtc_fail(nvrtcResult r, const char *what, char *err, size_t errlen)
{
  snprintf(err, errlen, "NVRTC %s: %s", what, nvrtcGetErrorString(r));
  return 1;
}

#define NOPTS 4

/* NVRTC makes a relative source name absolute with the process's current directory, and the
** line table (-lineinfo) and the PTX kept in the cubin for profilers carry it: the cubin would
** hold a path of the host and change with the directory it was compiled in. No option moves
** that directory (a #line name is made absolute the same way), so NVRTC gets a fixed absolute
** name under a folder no host has: the cubin is a function of the source, name, arch and
** options, and profilers still map its instructions to lines of the emitted source. */
#define SOURCE_ROOT "/softmax-tune/"

void gen_source_name(const char *name, char *out, size_t n)
{
  snprintf(out, n, SOURCE_ROOT "%s", name[0] == '/' ? strrchr(name, '/') + 1 : name);
}

/* What compile() makes: a cubin, PTX for the virtual arch compute_XX alone (ptxas does not run),
** or a lean cubin (no line table: a third of the bytes, for the kernel set). */
enum { CUBIN, PTX, LEAN };

/* NVRTC's options for arch and mode: into opts (archopt holds the first) and, space separated,
** text; returns their count. */
static int options(int arch, int mode, char archopt[48], const char *opts[NOPTS], char *text, size_t n)
{
  int nopts = 0;
  snprintf(archopt, 48, "--gpu-architecture=%s_%d", mode == PTX ? "compute" : "sm", arch);
  opts[nopts++] = archopt, opts[nopts++] = "--std=c++17";
  if (mode != LEAN) opts[nopts++] = "-lineinfo";
  if (mode != PTX) opts[nopts++] = "--ptxas-options=-v";
  for (int i = 0, at = 0; i < nopts && at < (int)n; i++)
    at += snprintf(text + at, n - (size_t)at, "%s%s", i ? " " : "", opts[i]);
  return nopts;
}

void gen_compile_options(int arch, char *text, size_t n)
{
  char archopt[48];
  const char *opts[NOPTS];
  options(arch, CUBIN, archopt, opts, text, n);
}

/* The NVRTC output `what` (cubin or PTX) of prog into a malloc'ed *data of *size bytes. */
static nvrtcResult output(nvrtcProgram prog, int ptx, void **data, size_t *size)
{
  nvrtcResult r = ptx ? nvrtcGetPTXSize(prog, size) : nvrtcGetCUBINSize(prog, size);
  if (r != NVRTC_SUCCESS) return r;
  if (*size == 0) return NVRTC_ERROR_INTERNAL_ERROR;
  if (!(*data = malloc(*size))) return NVRTC_ERROR_OUT_OF_MEMORY;
  return ptx ? nvrtcGetPTX(prog, *data) : nvrtcGetCUBIN(prog, *data);
}

static int compile(const char *source, const char *name, int arch, int mode, gen_Cubin *out, char *err, size_t errlen)
{
  char archopt[48], fixed[256], what[16];
  const char *opts[NOPTS];
  nvrtcProgram prog;
  nvrtcResult r;
  size_t n;
  double t0 = now_ms();

  memset(out, 0, sizeof *out);
  const int virt = mode == PTX;
  int nopts = options(arch, mode, archopt, opts, out->options, sizeof out->options);
  gen_source_name(name, fixed, sizeof fixed);
  snprintf(what, sizeof what, "%s_%d", virt ? "compute" : "sm", arch);

  if ((r = nvrtcCreateProgram(&prog, source, fixed, 0, NULL, NULL)) != NVRTC_SUCCESS)
    return nvrtc_fail(r, "create", err, errlen);
  nvrtcResult cr = nvrtcCompileProgram(prog, nopts, opts);
  if ((r = nvrtcGetProgramLogSize(prog, &n)) == NVRTC_SUCCESS && (out->log = malloc(n + 1)) &&
      (r = nvrtcGetProgramLog(prog, out->log)) == NVRTC_SUCCESS)
    out->log[n] = '\0';
  if (r != NVRTC_SUCCESS || !out->log) {
    nvrtcDestroyProgram(&prog);
    gen_cubin_free(out);
    return r != NVRTC_SUCCESS ? nvrtc_fail(r, "log", err, errlen)
                              : (snprintf(err, errlen, "out of memory reading the NVRTC log"), 1);
  }
  if (cr != NVRTC_SUCCESS) {
    const char *first = strstr(out->log, "error");
    snprintf(err, errlen, "NVRTC compile of %s for %s failed: %.300s", name, what, first ? first : out->log);
    for (char *p = err; *p; p++)
      if (*p == '\n') *p = ' ';
    nvrtcDestroyProgram(&prog);
    return 1;   /* the log stays in out for the caller to show */
  }
  /* a cubin and the PTX it was assembled from; virt: the PTX alone, as the data */
  if ((r = output(prog, virt, &out->data, &out->size)) != NVRTC_SUCCESS ||
      (!virt && (r = output(prog, 1, (void **)&out->ptx, &n)) != NVRTC_SUCCESS)) {
    nvrtcDestroyProgram(&prog);
    gen_cubin_free(out);
    return nvrtc_fail(r, virt ? "ptx" : "cubin", err, errlen);
  }
  nvrtcDestroyProgram(&prog);
  read_resources(out);
  out->ms = now_ms() - t0;
  return 0;
}

int gen_compile(const char *source, const char *name, int arch, gen_Cubin *out, char *err, size_t errlen)
{
  return compile(source, name, arch, CUBIN, out, err, errlen);
}

int gen_compile_lean(const char *source, const char *name, int arch, gen_Cubin *out, char *err, size_t errlen)
{
  return compile(source, name, arch, LEAN, out, err, errlen);
}

int gen_compile_ptx(const char *source, const char *name, int arch, gen_Cubin *out, char *err, size_t errlen)
{
  return compile(source, name, arch, PTX, out, err, errlen);
}

void gen_cubin_free(gen_Cubin *c)
{
  if (!c) return;
  free(c->data);
  free(c->log);
  free(c->ptx);
  c->data = NULL;
  c->log = NULL;
  c->ptx = NULL;
}

int gen_nvrtc_version(int *major, int *minor)
{
  return nvrtcVersion(major, minor) != NVRTC_SUCCESS;
}
