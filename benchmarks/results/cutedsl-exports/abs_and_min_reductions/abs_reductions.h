/* abs_reductions.h: the C API of the tilecraft kernel abs_reductions (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link abs_reductions.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   X: (64, 80) float32
 *   amax: (64) float32, written
 *   asum: (64) float32, written
 *   cmin: (80) float32, written
 */
#ifndef TILECRAFT_ABS_REDUCTIONS_H
#define TILECRAFT_ABS_REDUCTIONS_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_abs_reductions_load(const char *cubin_path);

/* Launch every kernel of abs_reductions in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_abs_reductions(CUdeviceptr X, CUdeviceptr amax, CUdeviceptr asum, CUdeviceptr cmin, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
