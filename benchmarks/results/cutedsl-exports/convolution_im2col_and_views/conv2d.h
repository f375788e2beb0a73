/* conv2d.h: the C API of the tilecraft kernel conv2d (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link conv2d.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   data: (3, 13, 11, 6) float16
 *   kernel: (3, 3, 6, 40) float16
 *   out: (3, 6, 5, 40) float16, written
 */
#ifndef TILECRAFT_CONV2D_H
#define TILECRAFT_CONV2D_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_conv2d_load(const char *cubin_path);

/* Launch every kernel of conv2d in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_conv2d(CUdeviceptr data, CUdeviceptr kernel, CUdeviceptr out, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
