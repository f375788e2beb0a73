/* gemm.h: the C API of the tilecraft kernel gemm (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link gemm.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   A: (200, 72) float32
 *   B: (72, 136) float32
 *   C: (200, 136) float32, written
 */
#ifndef TILECRAFT_GEMM_H
#define TILECRAFT_GEMM_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_gemm_load(const char *cubin_path);

/* Launch every kernel of gemm in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_gemm(CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
