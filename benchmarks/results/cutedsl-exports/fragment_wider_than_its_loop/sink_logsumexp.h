/* sink_logsumexp.h: the C API of the tilecraft kernel sink_logsumexp (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link sink_logsumexp.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   Sinks: (3) float32
 *   X: (3, 100, 64) float32
 *   Y: (3, 100) float32, written
 */
#ifndef TILECRAFT_SINK_LOGSUMEXP_H
#define TILECRAFT_SINK_LOGSUMEXP_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_sink_logsumexp_load(const char *cubin_path);

/* Launch every kernel of sink_logsumexp in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_sink_logsumexp(CUdeviceptr Sinks, CUdeviceptr X, CUdeviceptr Y, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
