/*
** cudrv.c — the CUDA driver through dlopen: every entry point is looked up with
** cuGetProcAddress for the CUDA version of the cuda.h we were built with, so each pointer has
** the ABI of the prototype its field was declared from.
*/
#include "cudrv.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char *const NO_DRIVER =
  "; softmax-tune needs an NVIDIA GPU with its driver (libcuda.so.1, CUDA 12 or newer): "
  "check that nvidia-smi lists the GPU, or in a container run with the GPU passed through "
  "(docker --gpus all); commands space, emit, compile, log and cache work without one";

void *tune_driver_proc(const tune_Driver *d, const char *name)
{
  CUdriverProcAddressQueryResult q;
  void *f = NULL;
  if (!d->getproc || d->getproc(name, &f, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS) return NULL;
  return f;
}

int tune_driver_load(tune_Driver *d, char *err, size_t errlen)
{
  memset(d, 0, sizeof *d);
  if (!(d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
    snprintf(err, errlen, "no CUDA driver: cannot load libcuda.so.1 (%s)%s", dlerror(), NO_DRIVER);
    return 1;
  }
  *(void **)&d->getproc = dlsym(d->lib, "cuGetProcAddress_v2");
  if (!d->getproc) {
    snprintf(err, errlen, "the CUDA driver is too old (no cuGetProcAddress_v2)%s", NO_DRIVER);
    tune_driver_unload(d);
    return 1;
  }
#define LOOKUP(f)                                                                          \
  if (!(*(void **)&d->f = tune_driver_proc(d, #f))) {                                      \
    snprintf(err, errlen, "the CUDA driver lacks %s (too old?)%s", #f, NO_DRIVER);         \
    tune_driver_unload(d);                                                                 \
    return 1;                                                                              \
  }
  TUNE_CU_FUNCS(LOOKUP)
#undef LOOKUP
  CUresult r = d->cuInit(0);
  if (r != CUDA_SUCCESS) {
    char buf[256];
    snprintf(err, errlen, "the CUDA driver did not start: %s%s", tune_cu_error(d, r, buf, sizeof buf), NO_DRIVER);
    tune_driver_unload(d);
    return 1;
  }
  d->cuDriverGetVersion(&d->version);
  if (d->version < 12000) {
    snprintf(err, errlen, "the CUDA driver is version %d.%d; softmax-tune needs 12.0 or newer%s", d->version / 1000,
             d->version % 1000 / 10, NO_DRIVER);
    tune_driver_unload(d);
    return 1;
  }
  return 0;
}

void tune_driver_unload(tune_Driver *d)
{
  if (d->lib) dlclose(d->lib);
  memset(d, 0, sizeof *d);
}

const char *tune_cu_error(const tune_Driver *d, CUresult r, char *buf, size_t n)
{
  const char *name = NULL, *text = NULL;
  if (d->cuGetErrorName) d->cuGetErrorName(r, &name);
  if (d->cuGetErrorString) d->cuGetErrorString(r, &text);
  snprintf(buf, n, "%s: %s", name ? name : "CUDA error", text ? text : "unknown");
  return buf;
}

int tune_device(const tune_Driver *d, int ordinal, tune_Device *dev, char *err, size_t errlen)
{
  int count = 0, major = 0, minor = 0, smem = 0;
  char buf[256];
  CUresult r;
  size_t mem = 0;
  memset(dev, 0, sizeof *dev);
  if ((r = d->cuDeviceGetCount(&count)) != CUDA_SUCCESS)
    return snprintf(err, errlen, "cannot count GPUs: %s", tune_cu_error(d, r, buf, sizeof buf)), 1;
  if (ordinal < 0 || ordinal >= count)
    return snprintf(err, errlen, "no GPU %d: this machine has %d GPU%s (--gpu 0..%d)", ordinal, count,
                    count == 1 ? "" : "s", count - 1), 1;
  if ((r = d->cuDeviceGet(&dev->dev, ordinal)) != CUDA_SUCCESS ||
      (r = d->cuDeviceGetName(dev->name, sizeof dev->name, dev->dev)) != CUDA_SUCCESS ||
      (r = d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->dev)) ||
      (r = d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev->dev)) ||
      (r = d->cuDeviceGetAttribute(&dev->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev->dev)) ||
      (r = d->cuDeviceGetAttribute(&dev->threads_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev->dev)) ||
      (r = d->cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev->dev)) ||
      (r = d->cuDeviceTotalMem(&mem, dev->dev)))
    return snprintf(err, errlen, "cannot read GPU %d: %s", ordinal, tune_cu_error(d, r, buf, sizeof buf)), 1;
  dev->ordinal = ordinal;
  dev->arch = major * 10 + minor;
  dev->smem_block = smem;
  dev->mem = (int64_t)mem;
  dev->driver = d->version;
  dev->cluster = major >= 9 ? 16 : 1;   /* 8 portable, 16 with the non-portable attribute */
  if (dev->arch < 75)
    return snprintf(err, errlen, "GPU %d (%s) is sm_%d; softmax-tune needs sm_75 or newer", ordinal, dev->name, dev->arch), 1;
  return 0;
}

void tune_device_limits(const tune_Device *dev, gen_Problem *p)
{
  p->arch = dev->arch;
  p->sms = dev->sms;
  p->smem_block = dev->smem_block;
  p->cluster = dev->cluster;
}

CUresult tune_func_setup(const tune_Driver *d, CUfunction f, const gen_Launch *l)
{
  CUresult r = CUDA_SUCCESS;
  /* static shared memory counts toward the 48 KB a launch gets without opting in: a ring of
     48 KB and its barriers need it too, so opt in for any dynamic size */
  if (l->smem > 0) r = d->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, l->smem);
  if (r == CUDA_SUCCESS && l->cluster > 8) r = d->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  return r;
}

CUresult tune_resident(const tune_Driver *d, CUfunction f, const gen_Launch *l, int sms, int *blocks)
{
  int n = 0;
  CUresult r = d->cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, l->threads, (size_t)l->smem);
  *blocks = n * sms;
  return r;
}

unsigned tune_grid(const gen_Launch *l, int64_t rows, int resident)
{
  if (l->coop == 2) {   /* claim: every resident block, each taking parts of any row */
    int64_t parts = rows * l->blocks_per_row;
    return (unsigned)(resident < parts ? resident : parts);
  }
  int64_t cap = 0x7fffffff / l->blocks_per_row;   /* kernels loop over the rest */
  int64_t groups = (rows + l->rows_per_block - 1) / l->rows_per_block;
  if (l->coop && resident / l->blocks_per_row < cap) cap = resident / l->blocks_per_row;
  if (l->coop && l->ws_groups < cap) cap = l->ws_groups;   /* a counter for each group */
  if (groups > cap) groups = cap;
  return (unsigned)(groups * l->blocks_per_row);
}

size_t tune_workspace(const gen_Launch *l, int resident)
{
  return l->coop ? 8 * (size_t)l->ws_groups + (size_t)(resident / l->blocks_per_row) * (size_t)l->workspace : 0;
}

CUresult tune_launch(const tune_Driver *d, CUfunction f, const gen_Launch *l, const tune_Args *a, int resident, CUstream s)
{
  CUlaunchConfig cfg;
  CUlaunchAttribute attr;
  const gen_Op *op = gen_op(l->op);
  tune_Args c = *a;
  long long n = a->rows, cols = a->cols;
  void *args[TUNE_MAX_BUFS + 4];
  int k = 0;
  if (!op || cols < 1 || (op->params && (!a->params || *(const long long *)a->params != cols))) return CUDA_ERROR_INVALID_VALUE;
  for (; k < op->nbufs; k++) args[k] = &c.buf[k];
  args[k++] = &n;
  if (!op->params) args[k++] = &cols;
  args[k++] = &c.ws;
  if (op->params) args[k++] = (void *)a->params;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = tune_grid(l, a->rows, resident);
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = (unsigned)l->threads;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = (unsigned)l->smem;
  cfg.hStream = s;
  if (l->cluster > 1) {
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = (unsigned)l->cluster;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  } else if (l->coop) {   /* every block resident: the blocks of a row may wait for each other */
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  return d->cuLaunchKernelEx(&cfg, f, args, NULL);
}
