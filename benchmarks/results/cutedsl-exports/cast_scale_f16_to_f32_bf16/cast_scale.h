/* cast_scale.h: the C API of the tilecraft kernel cast_scale (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link cast_scale.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   X: (777) float16
 *   Y: (777) float32, written
 *   Z: (777) bfloat16, written
 */
#ifndef TILECRAFT_CAST_SCALE_H
#define TILECRAFT_CAST_SCALE_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_cast_scale_load(const char *cubin_path);

/* Launch every kernel of cast_scale in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_cast_scale(CUdeviceptr X, CUdeviceptr Y, CUdeviceptr Z, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
