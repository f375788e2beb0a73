/* decode_scores.h: the C API of the tilecraft kernel decode_scores (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link decode_scores.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   Q: (64, 32) float16
 *   K: (100, 32) float16
 *   S: (64, 4) float32, written
 *   L: (64) float32, written
 */
#ifndef TILECRAFT_DECODE_SCORES_H
#define TILECRAFT_DECODE_SCORES_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_decode_scores_load(const char *cubin_path);

/* Launch every kernel of decode_scores in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_decode_scores(CUdeviceptr Q, CUdeviceptr K, CUdeviceptr S, CUdeviceptr L, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
