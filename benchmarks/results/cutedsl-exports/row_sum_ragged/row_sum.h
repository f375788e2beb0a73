/* row_sum.h: the C API of the tilecraft kernel row_sum (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link row_sum.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   X: (300, 64) float32
 *   out: (300) float32, written
 */
#ifndef TILECRAFT_ROW_SUM_H
#define TILECRAFT_ROW_SUM_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_row_sum_load(const char *cubin_path);

/* Launch every kernel of row_sum in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_row_sum(CUdeviceptr X, CUdeviceptr out, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
