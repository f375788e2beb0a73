/* im2col_tiles.h: the C API of the tilecraft kernel im2col_tiles (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link im2col_tiles.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   data: (3, 13, 11, 6) float32
 *   col: (90, 54) float32, written
 */
#ifndef TILECRAFT_IM2COL_TILES_H
#define TILECRAFT_IM2COL_TILES_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_im2col_tiles_load(const char *cubin_path);

/* Launch every kernel of im2col_tiles in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_im2col_tiles(CUdeviceptr data, CUdeviceptr col, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
