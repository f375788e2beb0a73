/* mha_fwd_bhsd.h: the C API of the tilecraft kernel mha_fwd_bhsd (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link mha_fwd_bhsd.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   Q: (1, 2, 300, 64) float16
 *   K: (1, 2, 300, 64) float16
 *   V: (1, 2, 300, 64) float16
 *   Output: (1, 2, 300, 64) float16, written
 */
#ifndef TILECRAFT_MHA_FWD_BHSD_H
#define TILECRAFT_MHA_FWD_BHSD_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_mha_fwd_bhsd_load(const char *cubin_path);

/* Launch every kernel of mha_fwd_bhsd in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_mha_fwd_bhsd(CUdeviceptr Q, CUdeviceptr K, CUdeviceptr V, CUdeviceptr Output, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
