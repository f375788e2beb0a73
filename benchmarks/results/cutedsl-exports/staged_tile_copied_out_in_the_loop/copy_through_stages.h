/* copy_through_stages.h: the C API of the tilecraft kernel copy_through_stages (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link copy_through_stages.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   A: (500, 64) float16
 *   B: (500, 64) float16, written
 */
#ifndef TILECRAFT_COPY_THROUGH_STAGES_H
#define TILECRAFT_COPY_THROUGH_STAGES_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_copy_through_stages_load(const char *cubin_path);

/* Launch every kernel of copy_through_stages in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_copy_through_stages(CUdeviceptr A, CUdeviceptr B, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
