/*
** cudrv.h — the CUDA driver, loaded with dlopen at run time (never linked), so everything that
** needs no GPU runs on machines without one. Also the device facts the tuner and the cache key
** need, and the one way kernels are launched (tuner and runtime library alike).
*/
#ifndef TUNE_CUDRV_H
#define TUNE_CUDRV_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "gen.h"

/* Only functions whose name has one ABI in CUDA 12 and 13: cuCtxSynchronize, cuCtxGetDevice
** and cuStreamGetCtx also have _v2 forms with other arguments and no macro, so are left out. */
#define TUNE_CU_FUNCS(X)                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                    \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)            \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)             \
  X(cuDevicePrimaryCtxReset) X(cuCtxSetCurrent) X(cuCtxGetCurrent)                         \
  X(cuCtxPushCurrent) X(cuCtxPopCurrent)                                                   \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)       \
  X(cuFuncSetAttribute) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                     \
  X(cuOccupancyMaxActiveClusters) X(cuLaunchKernelEx) X(cuLaunchKernel)                    \
  X(cuMemAlloc) X(cuMemFree) X(cuMemGetInfo) X(cuMemcpyDtoH)                               \
  X(cuMemcpyDtoDAsync) X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync)                                \
  X(cuMemsetD8) X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuMemsetD16Async)                 \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery)             \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)                                      \
  X(cuEventElapsedTime)

typedef struct tune_Driver {
  void *lib;
  CUresult (*getproc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
  int version;              /* cuDriverGetVersion: 13000 for 13.0 */
#define TUNE_CU_FIELD(f) __typeof__(f) *f;
  TUNE_CU_FUNCS(TUNE_CU_FIELD)
#undef TUNE_CU_FIELD
} tune_Driver;

typedef struct tune_Device {
  int ordinal;
  CUdevice dev;
  char name[256];
  int arch;                 /* 90 for compute capability 9.0 */
  int sms, threads_sm, smem_block, cluster;
  int64_t mem;
  int driver;               /* driver version, as tune_Driver.version */
} tune_Device;

/* Load libcuda.so.1 and cuInit; err explains how to get a working driver when it fails. */
int tune_driver_load(tune_Driver *d, char *err, size_t errlen);
void tune_driver_unload(tune_Driver *d);
/* The driver's entry point `name` for the cuda.h we were built with, or NULL where it lacks it
** (entry points newer than CUDA 12.0 that only some features need). */
void *tune_driver_proc(const tune_Driver *d, const char *name);
/* "CUDA_ERROR_X: text" for r, in buf. */
const char *tune_cu_error(const tune_Driver *d, CUresult r, char *buf, size_t n);

/* Device `ordinal`'s facts; no context is made. */
int tune_device(const tune_Driver *d, int ordinal, tune_Device *dev, char *err, size_t errlen);
/* The problem's device limits from dev. */
void tune_device_limits(const tune_Device *dev, gen_Problem *p);

/* Attributes a loaded function needs before its first launch (large smem, big clusters). */
CUresult tune_func_setup(const tune_Driver *d, CUfunction f, const gen_Launch *l);
/* Blocks that fit on the GPU at once (dev's SMs times blocks per SM), for cooperative grids. */
CUresult tune_resident(const tune_Driver *d, CUfunction f, const gen_Launch *l, int sms, int *blocks);
/* Blocks in the grid for `rows` rows: ceil(rows/rows_per_block) * blocks_per_row, capped (for
** a cooperative launch at `resident` blocks, a multiple of blocks_per_row; coop 2, where blocks
** claim parts of any row, at `resident` blocks whatever their multiple). */
unsigned tune_grid(const gen_Launch *l, int64_t rows, int resident);
/* Workspace bytes a launch needs (0 unless coop). */
size_t tune_workspace(const gen_Launch *l, int resident);
/* A kernel call's arguments: the op's buffers in its order (gen_Op: softmax in, out; backward
** y, dy, dx; cross-entropy logits, labels, dx, loss, lse), rows, the workspace and, for ops
** with one, the parameter block (a CeParams). */
#define TUNE_MAX_BUFS 5
typedef struct tune_Args {
  CUdeviceptr buf[TUNE_MAX_BUFS];
  int64_t rows;
  CUdeviceptr ws;
  const void *params;
  int64_t cols;             /* the row width: an argument after rows, or the params block's first field */
} tune_Args;
/* Launch a kernel of op l->op: f(buf..., rows, cols, ws) or, for ops with a parameter block
** (whose first field is cols, equal to a->cols), f(buf..., rows, ws, params). */
CUresult tune_launch(const tune_Driver *d, CUfunction f, const gen_Launch *l, const tune_Args *a, int resident, CUstream s);

/* A green context of some of a GPU's SMs (green.c), for the tuner's --sms. */
typedef struct tune_Green {
  CUgreenCtx green;
  CUcontext ctx;            /* the green context as a context, to make current */
  int sms;                  /* SMs it holds: the asked count rounded up to the GPU's step */
  __typeof__(cuGreenCtxDestroy) *destroy;   /* looked up with the rest, by tune_green_open */
} tune_Green;

/* N of dev's SMs in a green context (not made current); err says why not (an old driver, a
** count out of range). */
int tune_green_open(const tune_Driver *d, const tune_Device *dev, int sms, tune_Green *out, char *err, size_t errlen);
void tune_green_close(tune_Green *g);

#endif
