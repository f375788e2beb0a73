/* combine_lse.h: the C API of the tilecraft kernel combine_lse (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link combine_lse.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   G: (3, 4, 200) float32
 *   L: (3, 200) float32, written
 */
#ifndef TILECRAFT_COMBINE_LSE_H
#define TILECRAFT_COMBINE_LSE_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_combine_lse_load(const char *cubin_path);

/* Launch every kernel of combine_lse in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_combine_lse(CUdeviceptr G, CUdeviceptr L, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
