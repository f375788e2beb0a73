/* two_kernels.h: the C API of the tilecraft kernel two_kernels (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link two_kernels.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   X: (1000) float32
 *   tmp: (1000) float32, written
 *   Y: (1000) float32, written
 */
#ifndef TILECRAFT_TWO_KERNELS_H
#define TILECRAFT_TWO_KERNELS_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_two_kernels_load(const char *cubin_path);

/* Launch every kernel of two_kernels in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_two_kernels(CUdeviceptr X, CUdeviceptr tmp, CUdeviceptr Y, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
