/* blocksparse_gemm.h: the C API of the tilecraft kernel blocksparse_gemm (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link blocksparse_gemm.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   A: (272, 392) float16
 *   B: (392, 264) float16
 *   BlockMask: (5, 3, 7) bool
 *   C: (272, 264) float16, written
 */
#ifndef TILECRAFT_BLOCKSPARSE_GEMM_H
#define TILECRAFT_BLOCKSPARSE_GEMM_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_blocksparse_gemm_load(const char *cubin_path);

/* Launch every kernel of blocksparse_gemm in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_blocksparse_gemm(CUdeviceptr A, CUdeviceptr B, CUdeviceptr BlockMask, CUdeviceptr C, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
