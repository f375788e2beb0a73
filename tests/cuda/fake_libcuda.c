/* A fake CUDA driver library for hardware-free tests of tilecraft's ctypes driver binding.
 *
 * It implements the entry points tilecraft.execution.cuda_driver.driver declares, with the real C signatures,
 * on one pretend device (compute capability 9.0, 132 SMs). Nothing runs: cuLaunchKernel records its
 * arguments and copies the bytes its kernelParams point at, so tests can check the launch ABI. The
 * `fake_*` globals let a test steer results (cuInit's result, a failing launch) and read what was seen.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

int fake_init_result = 0;
int fake_device_count = 1;
int fake_launch_results[4] = {0, 0, 0, 0}; /* results of the next launches, consumed in order */
int fake_launch_count = 0;
int fake_param_count = 0;                   /* how many kernelParams slots a launch copies */
unsigned char fake_params[64 * 8];
unsigned fake_dims[7];                      /* grid x y z, block x y z, dynamic smem */
uintptr_t fake_stream = 0;
uintptr_t fake_function = 0;
uintptr_t fake_current = 0;                 /* the current context */
uintptr_t fake_stack[16];
int fake_depth = 0;
int fake_unloads = 0;
int fake_max_dynamic_smem = 0;
int fake_static_smem = 0;
int fake_current_at_launch = 0;             /* was a context current when the last launch ran? */

static const char *names(CUresult rc) {
    switch (rc) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    default: return "CUDA_ERROR_UNKNOWN";
    }
}

CUresult cuGetErrorName(CUresult rc, const char **out) { *out = names(rc); return 0; }
CUresult cuGetErrorString(CUresult rc, const char **out) { *out = rc ? "fake failure" : "no error"; return 0; }
CUresult cuInit(unsigned flags) { (void)flags; return fake_init_result; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = fake_device_count; return 0; }
CUresult cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return ordinal < fake_device_count ? 0 : 101; }

CUresult cuDeviceGetAttribute(int *value, int attribute, int dev) {
    (void)dev;
    switch (attribute) {
    case 8: *value = 49152; return 0;
    case 16: *value = 132; return 0;
    case 75: *value = 9; return 0;
    case 76: *value = 0; return 0;
    case 97: *value = 232448; return 0;
    default: return 1;
    }
}

CUresult cuDeviceGetName(char *name, int len, int dev) {
    (void)dev;
    strncpy(name, "Fake H200", (size_t)len);
    return 0;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = (void *)(uintptr_t)(0x1000 + dev); return 0; }
CUresult cuCtxGetCurrent(void **ctx) { *ctx = (void *)fake_current; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { fake_current = (uintptr_t)ctx; return 0; }
CUresult cuCtxPushCurrent_v2(void *ctx) { fake_stack[fake_depth++] = fake_current; fake_current = (uintptr_t)ctx; return 0; }
CUresult cuCtxPopCurrent_v2(void **ctx) {
    if (ctx) *ctx = (void *)fake_current;
    fake_current = fake_stack[--fake_depth];
    return 0;
}
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuModuleLoadData(void **module, const void *image) {
    if (memcmp(image, "\x7f" "ELF", 4) != 0) return 200;
    *module = (void *)(uintptr_t)0x2000;
    return 0;
}
CUresult cuModuleUnload(void *module) { (void)module; fake_unloads++; return 0; }

CUresult cuModuleGetFunction(void **fn, void *module, const char *name) {
    (void)module;
    if (strncmp(name, "missing", 7) == 0) return 500;
    *fn = (void *)(uintptr_t)(0x3000 + strlen(name));
    return 0;
}

CUresult cuFuncGetAttribute(int *value, int attribute, void *fn) {
    (void)fn;
    *value = attribute == 1 ? fake_static_smem : 1024;
    return 0;
}

CUresult cuFuncSetAttribute(void *fn, int attribute, int value) {
    (void)fn;
    if (attribute == 8) fake_max_dynamic_smem = value;
    return 0;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, void *stream, void **params, void **extra) {
    int i = fake_launch_count < 4 ? fake_launch_count : 3;
    CUresult rc = fake_launch_results[i];
    fake_launch_results[i] = 0;
    fake_launch_count++;
    if (rc) return rc;
    if (extra) return 1;
    unsigned dims[7] = {gx, gy, gz, bx, by, bz, smem};
    memcpy(fake_dims, dims, sizeof dims);
    fake_function = (uintptr_t)f;
    fake_stream = (uintptr_t)stream;
    fake_current_at_launch = fake_current != 0;
    for (int p = 0; p < fake_param_count && params; p++) memcpy(fake_params + 8 * p, params[p], 8);
    return 0;
}

CUresult cuStreamCreate(void **stream, unsigned flags) { (void)flags; *stream = (void *)(uintptr_t)0x5000; return 0; }
CUresult cuStreamDestroy_v2(void *stream) { (void)stream; return 0; }
CUresult cuStreamSynchronize(void *stream) { (void)stream; return 0; }
CUresult cuMemAlloc_v2(uint64_t *ptr, size_t n) { *ptr = (uint64_t)(uintptr_t)malloc(n); return 0; }
CUresult cuMemFree_v2(uint64_t ptr) { free((void *)(uintptr_t)ptr); return 0; }
CUresult cuMemsetD32_v2(uint64_t dst, unsigned int value, size_t n) {
    for (size_t i = 0; i < n; i++) ((uint32_t *)(uintptr_t)dst)[i] = value;
    return 0;
}
CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) { memcpy((void *)(uintptr_t)dst, src, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) { memcpy(dst, (void *)(uintptr_t)src, n); return 0; }
CUresult cuPointerGetAttribute(void *data, int attribute, uint64_t ptr) {
    (void)attribute; (void)ptr;
    *(int *)data = 0;
    return 0;
}

/* cuda-python resolves driver functions through cuGetProcAddress; answer from this table. */
static const struct { const char *name; void *fn; } entry_points[] = {
    {"cuInit", (void *)cuInit},
    {"cuDriverGetVersion", (void *)cuDriverGetVersion},
    {"cuGetErrorName", (void *)cuGetErrorName},
    {"cuGetErrorString", (void *)cuGetErrorString},
    {"cuLaunchKernel", (void *)cuLaunchKernel},
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
    (void)version; (void)flags;
    for (size_t i = 0; i < sizeof entry_points / sizeof entry_points[0]; i++) {
        if (strcmp(symbol, entry_points[i].name) == 0) {
            *pfn = entry_points[i].fn;
            if (status) *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
            return 0;
        }
    }
    *pfn = NULL;
    if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return 500;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
