/*
** test_multigpu.c — the runtime library on every visible GPU at once (exit 77 without a GPU):
** an st_ctx per device, a host thread per device calling st_softmax with no context current
** and then with another GPU's context current (the library must bring its own), a second
** st_ctx on the same device in the same thread, every output checked against float64 by the
** tuner's check kernel on that device.
*/
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "softmax_tune.h"
#include "tune.h"

#define MAX_GPUS 16

typedef struct Device {
  int ordinal, ngpus;
  st_ctx *ctx, *twin;       /* twin: a second context on the same device */
  CUcontext other;          /* another GPU's primary context, made current while calling */
  int fails, bad;
  char err[1024];
} Device;

static char dir[] = "/tmp/st_mgXXXXXX";
static char db[512];

/* n calls of st_softmax over the prepared problem; the failures counted. */
static int calls(st_ctx *c, tune_Gpu *g, const gen_Problem *p, int n)
{
  CUdeviceptr in, out;
  CUstream s;
  int fails = 0;
  tune_gpu_buffers(g, &in, &out, &s);
  for (int i = 0; i < n; i++)
    fails += st_softmax(c, (st_dtype)p->dtype, (st_op)p->op, (const void *)in, (void *)out, p->rows, p->cols,
                        (struct CUstream_st *)s) != ST_OK;
  return fails + (tune_gpu_driver(g)->cuStreamSynchronize(s) != CUDA_SUCCESS);
}

/* Whether the output is softmax of the input (float64 check on the device); 1 if not. */
static int wrong(tune_Gpu *g, Device *d)
{
  CUdeviceptr in, out;
  CUstream s;
  tune_Check c = { 0 };
  tune_gpu_buffers(g, &in, &out, &s);
  if (tune_gpu_check(g, in, out, &c, d->err, sizeof d->err)) return 1;
  if (c.bad || c.bad_sums) snprintf(d->err, sizeof d->err, "%lld bad elements, %lld bad sums", (long long)c.bad, (long long)c.bad_sums);
  return c.bad || c.bad_sums;
}

static void *on_device(void *arg)
{
  Device *d = arg;
  tune_Gpu *g = NULL;
  gen_State *gen = NULL;
  gen_Problem p = { .rows = 1000 + d->ordinal, .cols = 3000 + 8 * d->ordinal, .dtype = d->ordinal % 3, .op = d->ordinal % 2 };
  if (tune_gpu_open(&g, d->ordinal, d->err, sizeof d->err) || gen_open(&gen, NULL, d->err, sizeof d->err)) {
    d->bad = 1;
  } else {
    tune_device_limits(tune_gpu_device(g), &p);
    d->bad = tune_gpu_prepare(g, gen, &p, 1, d->err, sizeof d->err) || tune_gpu_fill(g, d->err, sizeof d->err);
  }
  const tune_Driver *drv = g ? tune_gpu_driver(g) : NULL;
  CUcontext mine = NULL;   /* this GPU's primary context, current again for the checks */
  if (!d->bad) d->bad = drv->cuCtxGetCurrent(&mine) != CUDA_SUCCESS;
  if (!d->bad) {
    drv->cuCtxSetCurrent(NULL);   /* no context current: the library brings its own */
    d->fails += calls(d->ctx, g, &p, 20);
    drv->cuCtxSetCurrent(mine);
    d->bad = wrong(g, d) || tune_gpu_fill(g, d->err, sizeof d->err);
  }
  if (!d->bad) {
    drv->cuCtxSetCurrent(d->other);   /* another GPU's context current */
    d->fails += calls(d->ctx, g, &p, 20) + calls(d->twin, g, &p, 5);
    drv->cuCtxSetCurrent(mine);
    d->bad = wrong(g, d);
  }
  if (d->fails && !d->err[0]) snprintf(d->err, sizeof d->err, "%s", st_error(NULL));
  gen_close(gen);
  tune_gpu_close(g);
  return NULL;
}

int main(void)
{
  tune_Driver drv;
  Device dev[MAX_GPUS];
  pthread_t th[MAX_GPUS];
  char err[1024];
  int n = 0;
  if (tune_driver_load(&drv, err, sizeof err)) return printf("SKIP: no GPU here (%s)\n", err), 77;
  if (drv.cuDeviceGetCount(&n) || n == 0) return printf("SKIP: the driver sees no GPU\n"), 77;
  n = n > MAX_GPUS ? MAX_GPUS : n;
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  snprintf(db, sizeof db, "%s/cache.db", dir);
  for (int i = 0; i < n; i++) {
    memset(&dev[i], 0, sizeof dev[i]);
    dev[i].ordinal = i, dev[i].ngpus = n;
    CHECK(st_open(&dev[i].ctx, i, db) == ST_OK && st_open(&dev[i].twin, i, db) == ST_OK, "GPU %d: %s", i, st_error(NULL));
  }
  for (int i = 0; i < n; i++) {   /* the next GPU's primary context, kept for the test's length */
    CUdevice other;
    CHECK(drv.cuDeviceGet(&other, (i + 1) % n) == CUDA_SUCCESS &&
          drv.cuDevicePrimaryCtxRetain(&dev[i].other, other) == CUDA_SUCCESS, "GPU %d: a context", (i + 1) % n);
  }
  for (int i = 0; i < n; i++) CHECK(pthread_create(&th[i], NULL, on_device, &dev[i]) == 0, "thread %d", i);
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    CHECK(!dev[i].bad && dev[i].fails == 0, "GPU %d: %d calls failed; %s", i, dev[i].fails, dev[i].err);
    printf("GPU %d: %s\n", i, dev[i].bad || dev[i].fails ? "FAILED" : "45 calls, output checked twice");
    st_close(dev[i].ctx);
    st_close(dev[i].twin);
    CUdevice other;
    if (drv.cuDeviceGet(&other, (i + 1) % n) == CUDA_SUCCESS) drv.cuDevicePrimaryCtxRelease(other);
  }
  tune_driver_unload(&drv);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0, "cleanup");
  return check_done("test_multigpu");
}
