/* A stand-in libcuda.so.1, so that Triton's real launchers (the C code that
   calls cuLaunchKernelEx) run on a machine without a GPU.  Every entry point
   Triton 3.6 and 3.9 link or look up succeeds; cuLaunchKernelEx records what it
   was given, for tools/fakecuda/check_launch.py to read through ctypes.  No
   kernel runs.  Output arguments of the generic stubs are left unset. */
#include <stdint.h>
#include <string.h>

typedef int CUresult;
typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void *hStream;
  void *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

/* [0..2] grid, [3] block x, [4] shared bytes, [5] stream, [6] function,
   [8..] the first fake_nparams kernel parameters, 8 bytes each. */
uint64_t fake_record[32];
int fake_nparams = 0;
int fake_launches = 0;

void fake_set_nparams(int n) { fake_nparams = n; }

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, void *function,
                          void **params, void **extra) {
  (void)extra;
  fake_launches++;
  fake_record[0] = config->gridDimX;
  fake_record[1] = config->gridDimY;
  fake_record[2] = config->gridDimZ;
  fake_record[3] = config->blockDimX;
  fake_record[4] = config->sharedMemBytes;
  fake_record[5] = (uint64_t)config->hStream;
  fake_record[6] = (uint64_t)function;
  for (int i = 0; i < fake_nparams && i < 24; i++) {
    uint64_t value = 0;
    memcpy(&value, params[i], 8); /* 4-byte parameters: read the low half */
    fake_record[8 + i] = value;
  }
  return 0;
}

static const char *message = "stand-in libcuda";
CUresult cuGetErrorString(int error, const char **text) {
  (void)error;
  *text = message;
  return 0;
}
CUresult cuCtxGetCurrent(void **context) {
  *context = (void *)1;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  (void)device;
  *context = (void *)1;
  return 0;
}
/* A host pointer passes for a device pointer. */
CUresult cuPointerGetAttribute(void *data, int attribute, uint64_t pointer) {
  (void)attribute;
  *(uint64_t *)data = pointer;
  return 0;
}
CUresult cuStreamIsCapturing(void *stream, int *status) {
  (void)stream;
  *status = 0;
  return 0;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)attribute;
  (void)device;
  *value = 232448;
  return 0;
}
CUresult cuFuncGetAttribute(int *value, int attribute, void *function) {
  (void)attribute;
  (void)function;
  *value = 1024;
  return 0;
}
CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return 0;
}

#define SUCCEEDS(name) \
  CUresult name(void) { return 0; }
SUCCEEDS(cuCtxGetDevice)
SUCCEEDS(cuCtxGetLimit)
SUCCEEDS(cuCtxSetCurrent)
SUCCEEDS(cuCtxSetLimit)
SUCCEEDS(cuDeviceGet)
SUCCEEDS(cuFuncSetAttribute)
SUCCEEDS(cuFuncSetCacheConfig)
SUCCEEDS(cuModuleGetFunction)
SUCCEEDS(cuModuleLoadData)
SUCCEEDS(cuModuleUnload)
SUCCEEDS(cuOccupancyMaxActiveClusters)
SUCCEEDS(cuTensorMapEncodeTiled)
SUCCEEDS(cuTensorMapEncodeIm2col)
