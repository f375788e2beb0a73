/* ragged_gemm_store.h: the C API of the tilecraft kernel ragged_gemm_store (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link ragged_gemm_store.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   A: (100, 64) float32
 *   B: (64, 96) float32
 *   C: (100, 96) float32, written
 */
#ifndef TILECRAFT_RAGGED_GEMM_STORE_H
#define TILECRAFT_RAGGED_GEMM_STORE_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_ragged_gemm_store_load(const char *cubin_path);

/* Launch every kernel of ragged_gemm_store in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_ragged_gemm_store(CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
