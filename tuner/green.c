/*
** green.c — a GPU narrowed to some of its SMs: a green context (CUDA 12.4+ driver) holding N
** SMs, for the tuner's --sms. Kernels launched in it run on those SMs alone while memory keeps
** its whole bandwidth, so each SM must move more bytes per microsecond: 88-96 of an H100's 132
** SMs ask of each SM what an H200's faster memory asks of its 132 (lab/green_probe.cu).
** The entry points are looked up here (tune_driver_proc), not among the ones cudrv.c requires,
** so drivers before 12.4 still load.
*/
#include <stdio.h>
#include <string.h>

#include "cudrv.h"

typedef struct Green {
  __typeof__(cuDeviceGetDevResource) *get;
  __typeof__(cuDevSmResourceSplitByCount) *split;
  __typeof__(cuDevResourceGenerateDesc) *desc;
  __typeof__(cuGreenCtxCreate) *create;
  __typeof__(cuCtxFromGreenCtx) *to_ctx;
  __typeof__(cuGreenCtxDestroy) *destroy;
} Green;

static int lookup(const tune_Driver *d, Green *f, char *err, size_t errlen)
{
  const char *names[] = { "cuDeviceGetDevResource", "cuDevSmResourceSplitByCount", "cuDevResourceGenerateDesc",
                          "cuGreenCtxCreate", "cuCtxFromGreenCtx", "cuGreenCtxDestroy" };
  void **slot[] = { (void **)&f->get, (void **)&f->split, (void **)&f->desc,
                    (void **)&f->create, (void **)&f->to_ctx, (void **)&f->destroy };
  for (int i = 0; i < 6; i++)
    if (!(*slot[i] = tune_driver_proc(d, names[i])))
      return snprintf(err, errlen, "--sms needs green contexts, which this CUDA driver lacks (%s; 12.4 or newer has them)",
                      names[i]), 1;
  return 0;
}

static int fail(const tune_Driver *d, const char *what, CUresult r, char *err, size_t errlen)
{
  char e[256];
  snprintf(err, errlen, "--sms: %s: %s", what, tune_cu_error(d, r, e, sizeof e));
  return 1;
}

int tune_green_open(const tune_Driver *d, const tune_Device *dev, int sms, tune_Green *out, char *err, size_t errlen)
{
  Green f;
  CUdevResource whole, part, rest;
  CUdevResourceDesc desc;
  unsigned groups = 1;
  CUresult r;
  memset(out, 0, sizeof *out);
  if (lookup(d, &f, err, errlen)) return 1;
  if ((r = f.get(dev->dev, &whole, CU_DEV_RESOURCE_TYPE_SM))) return fail(d, "reading the GPU's SMs", r, err, errlen);
  const int all = (int)whole.sm.smCount;   /* not dev->sms, which --sms itself narrows */
  if (sms < (int)whole.sm.minSmPartitionSize || sms >= all)
    return snprintf(err, errlen, "bad --sms %d: this GPU (%d SMs) runs on %u to %d of them, in steps of %u", sms, all,
                    whole.sm.minSmPartitionSize, all - 1, whole.sm.smCoscheduledAlignment), 1;
  if ((r = f.split(&part, &groups, &whole, &rest, 0, (unsigned)sms)) || groups != 1)
    return fail(d, "splitting the SMs", r ? r : CUDA_ERROR_INVALID_VALUE, err, errlen);
  if ((r = f.desc(&desc, &part, 1)) || (r = f.create(&out->green, desc, dev->dev, CU_GREEN_CTX_DEFAULT_STREAM)))
    return fail(d, "making the green context", r, err, errlen);
  if ((r = f.to_ctx(&out->ctx, out->green))) {
    f.destroy(out->green);
    memset(out, 0, sizeof *out);
    return fail(d, "using the green context", r, err, errlen);
  }
  out->sms = (int)part.sm.smCount;   /* sms rounded up to the GPU's step */
  out->destroy = f.destroy;
  return 0;
}

void tune_green_close(tune_Green *g)
{
  if (g->green) g->destroy(g->green);
  memset(g, 0, sizeof *g);
}
