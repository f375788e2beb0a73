/* A fake HIP runtime (libamdhip64) for hardware-free tests: the calls tilecraft's ctypes binding makes,
 * with the HIP ABI (hipError_t results, out-parameters), recording what they were given.
 *
 * `fake_*` globals let a test steer results (hipInit's result, the device count, a failing load or
 * launch) and read what was seen (the last launch's dims, stream and parameter slots).
 *
 * Emulation: after `fake_emulate_image(image, size, library)`, loading exactly those code-object bytes
 * loads `library` instead, a host build of the same kernel source against the CPU emulator
 * (tests/hip/emulator/tc_hip_emu.h, built by tests/hip/emulator.py), and launching one of its kernels
 * runs `tc_run_<kernel>` there: "device" pointers are host memory. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---------------------------------------------------------------- emulation */

#define HIP_ERROR_LAUNCH_FAILURE 719
#define EMU_IMAGES 1024
#define EMU_MAX 8192 /* modules and functions: loads are never undone here */

typedef int (*emu_run)(void **params, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned lds, char *error, int error_len);
struct emu_image { unsigned char *bytes; long size; char library[1024]; };
struct emu_module { void *handle; };
struct emu_function { emu_run run; };
static struct emu_image emu_images[EMU_IMAGES];
static struct emu_module emu_modules[EMU_MAX];
static struct emu_function emu_functions[EMU_MAX];
static long emu_image_count, emu_module_count, emu_function_count;
char fake_emu_error[1024];
long fake_emu_launches = 0;

/* Loads of `image` (`size` bytes) load `library` from now on; 0, or 1 when the table is full. */
int fake_emulate_image(const void *image, long size, const char *library) {
    if (emu_image_count == EMU_IMAGES || strlen(library) >= sizeof emu_images[0].library) return 1;
    struct emu_image *e = &emu_images[emu_image_count++];
    e->bytes = malloc((size_t)size);
    memcpy(e->bytes, image, (size_t)size);
    e->size = size;
    strcpy(e->library, library);
    return 0;
}

/* The size an ELF64 image's header gives it (lld writes the section headers last), or 0. */
static long elf_size(const unsigned char *image) {
    uint64_t shoff;
    uint16_t shentsize, shnum;
    if (memcmp(image, "\x7f" "ELF", 4) != 0 || image[4] != 2) return 0;
    memcpy(&shoff, image + 0x28, 8);
    memcpy(&shentsize, image + 0x3a, 2);
    memcpy(&shnum, image + 0x3c, 2);
    return (long)(shoff + (uint64_t)shentsize * shnum);
}

static const struct emu_image *emulated(const void *image) {
    if (emu_image_count == 0) return NULL;
    long size = elf_size(image);
    for (long i = 0; i < emu_image_count; ++i)
        if (emu_images[i].size == size && memcmp(emu_images[i].bytes, image, (size_t)size) == 0) return &emu_images[i];
    return NULL;
}

static int is_emu_module(void *m) {
    return (char *)m >= (char *)emu_modules && (char *)m < (char *)(emu_modules + EMU_MAX);
}
static int is_emu_function(void *f) {
    return (char *)f >= (char *)emu_functions && (char *)f < (char *)(emu_functions + EMU_MAX);
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
    case 719: return "hipErrorLaunchFailure";
    default: return "hipErrorUnknown";
    }
}

const char *hipGetErrorName(int rc) { return names(rc); }
const char *hipGetErrorString(int rc) {
    if (rc == HIP_ERROR_LAUNCH_FAILURE || (rc == 200 && fake_emu_error[0])) return fake_emu_error;
    return rc ? "fake failure" : "no error";
}
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
    fake_emu_error[0] = 0;
    const struct emu_image *e = emulated(image);
    if (e != NULL) {
        if (emu_module_count == EMU_MAX) return 2; /* hipErrorOutOfMemory */
        void *handle = dlopen(e->library, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) {
            snprintf(fake_emu_error, sizeof fake_emu_error, "%s", dlerror());
            return 200;
        }
        emu_modules[emu_module_count].handle = handle;
        *module = &emu_modules[emu_module_count++];
        return 0;
    }
    *module = (void *)(uintptr_t)(0x5000 + fake_loads);
    return 0;
}
int hipModuleUnload(void *module) {
    fake_unloads++;
    if (is_emu_module(module)) dlclose(((struct emu_module *)module)->handle);
    return 0;
}
int hipModuleGetFunction(void **fn, void *module, const char *name) {
    if (strcmp(name, "missing_kernel") == 0) return 500;
    if (is_emu_module(module)) {
        char symbol[512];
        snprintf(symbol, sizeof symbol, "tc_run_%s", name);
        void *run = dlsym(((struct emu_module *)module)->handle, symbol);
        if (run == NULL || emu_function_count == EMU_MAX) return 500;
        emu_functions[emu_function_count].run = (emu_run)run;
        *fn = &emu_functions[emu_function_count++];
        return 0;
    }
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
    if (is_emu_function(f)) {
        fake_emu_launches++;
        fake_emu_error[0] = 0;
        if (((struct emu_function *)f)->run(params, gx, gy, gz, bx, by, bz, smem, fake_emu_error,
                                            (int)sizeof fake_emu_error))
            return HIP_ERROR_LAUNCH_FAILURE;
    }
    return 0;
}

int hipDeviceSynchronize(void) { fake_syncs++; return 0; }
int hipStreamCreate(void **s) { *s = (void *)(uintptr_t)0x7000; return 0; }
int hipStreamDestroy(void *s) { (void)s; return 0; }
int hipStreamSynchronize(void *s) { (void)s; fake_syncs++; return 0; }
