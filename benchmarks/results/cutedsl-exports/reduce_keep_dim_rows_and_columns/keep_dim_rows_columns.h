/* keep_dim_rows_columns.h: the C API of the tilecraft kernel keep_dim_rows_columns (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link keep_dim_rows_columns.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   X: (100, 48) float32
 *   Y: (100, 48) float32, written
 *   S: (4, 48) float32, written
 */
#ifndef TILECRAFT_KEEP_DIM_ROWS_COLUMNS_H
#define TILECRAFT_KEEP_DIM_ROWS_COLUMNS_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_keep_dim_rows_columns_load(const char *cubin_path);

/* Launch every kernel of keep_dim_rows_columns in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_keep_dim_rows_columns(CUdeviceptr X, CUdeviceptr Y, CUdeviceptr S, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
