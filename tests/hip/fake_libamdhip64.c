/* A fake HIP runtime (libamdhip64) for hardware-free tests: the calls tilecraft's ctypes binding makes,
 * with the HIP ABI (hipError_t results, out-parameters), recording what they were given.
 *
 * `fake_*` globals let a test steer results (hipInit's result, the device count, a failing load or
 * launch) and read what was seen (the last launch's dims, stream and parameter slots). */
#include <stdint.h>
#include <string.h>

long fake_init_result = 0;
long fake_device_count = 1;
long fake_load_result = 0;
long fake_launch_result = 0;
long fake_launch_count = 0;
long fake_param_count = 0;     /* how many 8-byte kernelParams slots a launch copies */
long fake_device = -1;         /* the device hipSetDevice made current */
long fake_device_at_launch = -1;
long fake_loads = 0;
long fake_unloads = 0;
long fake_syncs = 0;
long fake_image_size = 0;      /* the ELF magic's position check: 1 when the image starts with \x7fELF */
long fake_stream = 0;
long fake_function = 0;
long fake_dims[7];             /* grid x y z, block x y z, dynamic LDS bytes */
unsigned char fake_last_params[64 * 8];

void fake_reset(void) {
    fake_init_result = 0; fake_device_count = 1; fake_load_result = 0; fake_launch_result = 0;
    fake_launch_count = 0; fake_param_count = 0; fake_device = -1; fake_device_at_launch = -1;
    fake_loads = 0; fake_unloads = 0; fake_syncs = 0; fake_image_size = 0; fake_stream = 0;
    fake_function = 0; memset(fake_dims, 0, sizeof fake_dims); memset(fake_last_params, 0, sizeof fake_last_params);
}

static const char *names(int rc) {
    switch (rc) {
    case 0: return "hipSuccess";
    case 100: return "hipErrorNoDevice";
    case 101: return "hipErrorInvalidDevice";
    case 200: return "hipErrorInvalidImage";
    case 209: return "hipErrorNoBinaryForGpu";
    case 500: return "hipErrorNotFound";
    case 701: return "hipErrorLaunchOutOfResources";
    default: return "hipErrorUnknown";
    }
}

const char *hipGetErrorName(int rc) { return names(rc); }
const char *hipGetErrorString(int rc) { return rc ? "fake failure" : "no error"; }
int hipInit(unsigned flags) { (void)flags; return (int)fake_init_result; }
int hipGetDeviceCount(int *n) { *n = (int)fake_device_count; return fake_device_count ? 0 : 100; }
int hipRuntimeGetVersion(int *v) { *v = 60241134; return 0; } /* 6.2.41134 */
int hipSetDevice(int d) {
    if (d < 0 || d >= fake_device_count) return 101;
    fake_device = d;
    return 0;
}
int hipGetDevice(int *d) { *d = (int)fake_device; return 0; }

int hipModuleLoadData(void **module, const void *image) {
    if (fake_load_result) return (int)fake_load_result;
    fake_image_size = memcmp(image, "\x7f" "ELF", 4) == 0;
    fake_loads++;
    *module = (void *)(uintptr_t)(0x5000 + fake_loads);
    return 0;
}
int hipModuleUnload(void *module) { (void)module; fake_unloads++; return 0; }
int hipModuleGetFunction(void **fn, void *module, const char *name) {
    if (strcmp(name, "missing_kernel") == 0) return 500;
    *fn = (void *)((uintptr_t)module * 16 + strlen(name));
    return 0;
}

int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned smem, void *stream, void **params, void **extra) {
    (void)extra;
    fake_launch_count++;
    if (fake_launch_result) {
        int rc = (int)fake_launch_result;
        fake_launch_result = 0;
        return rc;
    }
    long dims[7] = {gx, gy, gz, bx, by, bz, smem};
    memcpy(fake_dims, dims, sizeof dims);
    fake_function = (long)(uintptr_t)f;
    fake_stream = (long)(uintptr_t)stream;
    fake_device_at_launch = fake_device;
    for (long i = 0; i < fake_param_count && i < 64; ++i) memcpy(fake_last_params + 8 * i, params[i], 8);
    return 0;
}

int hipDeviceSynchronize(void) { fake_syncs++; return 0; }
int hipStreamCreate(void **s) { *s = (void *)(uintptr_t)0x7000; return 0; }
int hipStreamDestroy(void *s) { (void)s; return 0; }
int hipStreamSynchronize(void *s) { (void)s; fake_syncs++; return 0; }
