/* two_gemm_paths.h: the C API of the tilecraft kernel two_gemm_paths (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link two_gemm_paths.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   K: (128, 128) float16
 *   Q: (160, 128) float16
 *   P: (128, 32) float32, written
 *   D: (160, 128) float32, written
 */
#ifndef TILECRAFT_TWO_GEMM_PATHS_H
#define TILECRAFT_TWO_GEMM_PATHS_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_two_gemm_paths_load(const char *cubin_path);

/* Launch every kernel of two_gemm_paths in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_two_gemm_paths(CUdeviceptr K, CUdeviceptr Q, CUdeviceptr P, CUdeviceptr D, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
