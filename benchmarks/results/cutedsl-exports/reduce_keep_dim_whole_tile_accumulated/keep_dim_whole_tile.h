/* keep_dim_whole_tile.h: the C API of the tilecraft kernel keep_dim_whole_tile (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link keep_dim_whole_tile.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   H: (3, 5, 24, 40) float32
 *   dH: (3, 5, 24, 40) float32
 *   Out: (3, 2) float32, written
 */
#ifndef TILECRAFT_KEEP_DIM_WHOLE_TILE_H
#define TILECRAFT_KEEP_DIM_WHOLE_TILE_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_keep_dim_whole_tile_load(const char *cubin_path);

/* Launch every kernel of keep_dim_whole_tile in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_keep_dim_whole_tile(CUdeviceptr H, CUdeviceptr dH, CUdeviceptr Out, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
