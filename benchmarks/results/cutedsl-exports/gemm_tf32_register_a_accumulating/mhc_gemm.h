/* mhc_gemm.h: the C API of the tilecraft kernel mhc_gemm (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link mhc_gemm.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   X: (70, 96) bfloat16
 *   Fn: (24, 96) float32
 *   Out: (70, 24) float32, written
 */
#ifndef TILECRAFT_MHC_GEMM_H
#define TILECRAFT_MHC_GEMM_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_mhc_gemm_load(const char *cubin_path);

/* Launch every kernel of mhc_gemm in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_mhc_gemm(CUdeviceptr X, CUdeviceptr Fn, CUdeviceptr Out, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
