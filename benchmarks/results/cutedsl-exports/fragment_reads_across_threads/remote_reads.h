/* remote_reads.h: the C API of the tilecraft kernel remote_reads (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link remote_reads.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   X: (32, 64) float32
 *   W: (64, 32) float32
 *   Y: (32, 64) float32, written
 *   Z: (32, 64) float32, written
 *   R: (4) float32, written
 */
#ifndef TILECRAFT_REMOTE_READS_H
#define TILECRAFT_REMOTE_READS_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_remote_reads_load(const char *cubin_path);

/* Launch every kernel of remote_reads in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_remote_reads(CUdeviceptr X, CUdeviceptr W, CUdeviceptr Y, CUdeviceptr Z, CUdeviceptr R, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
