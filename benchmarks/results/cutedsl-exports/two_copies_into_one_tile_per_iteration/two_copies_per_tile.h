/* two_copies_per_tile.h: the C API of the tilecraft kernel two_copies_per_tile (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link two_copies_per_tile.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   A: (256, 320) float16
 *   B: (320, 192) float16
 *   C: (256, 192) float32, written
 */
#ifndef TILECRAFT_TWO_COPIES_PER_TILE_H
#define TILECRAFT_TWO_COPIES_PER_TILE_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_two_copies_per_tile_load(const char *cubin_path);

/* Launch every kernel of two_copies_per_tile in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_two_copies_per_tile(CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
