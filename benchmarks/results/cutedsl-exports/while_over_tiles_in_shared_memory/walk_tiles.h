/* walk_tiles.h: the C API of the tilecraft kernel walk_tiles (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link walk_tiles.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   A: (384) float32
 *   B: (384) float32, written
 *   bounds: (2) int32
 */
#ifndef TILECRAFT_WALK_TILES_H
#define TILECRAFT_WALK_TILES_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_walk_tiles_load(const char *cubin_path);

/* Launch every kernel of walk_tiles in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_walk_tiles(CUdeviceptr A, CUdeviceptr B, CUdeviceptr bounds, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
