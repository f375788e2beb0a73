/* sinks_past_the_fragment.h: the C API of the tilecraft kernel sinks_past_the_fragment (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link sinks_past_the_fragment.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   Sinks: (2) float32
 *   X: (2, 50) float32
 *   Y: (2, 50) float32, written
 */
#ifndef TILECRAFT_SINKS_PAST_THE_FRAGMENT_H
#define TILECRAFT_SINKS_PAST_THE_FRAGMENT_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_sinks_past_the_fragment_load(const char *cubin_path);

/* Launch every kernel of sinks_past_the_fragment in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_sinks_past_the_fragment(CUdeviceptr Sinks, CUdeviceptr X, CUdeviceptr Y, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
