/* views_alias_their_base.h: the C API of the tilecraft kernel views_alias_their_base (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link views_alias_their_base.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   X: (10, 12) float32
 *   tmp: (10, 12) float32, written
 *   Y: (10, 12) float32, written
 *   Z: (10, 12) float32, written
 */
#ifndef TILECRAFT_VIEWS_ALIAS_THEIR_BASE_H
#define TILECRAFT_VIEWS_ALIAS_THEIR_BASE_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_views_alias_their_base_load(const char *cubin_path);

/* Launch every kernel of views_alias_their_base in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_views_alias_their_base(CUdeviceptr X, CUdeviceptr tmp, CUdeviceptr Y, CUdeviceptr Z, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
