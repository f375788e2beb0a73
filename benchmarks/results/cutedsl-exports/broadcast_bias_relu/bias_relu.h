/* bias_relu.h: the C API of the tilecraft kernel bias_relu (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link bias_relu.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   X: (200, 96) float32
 *   b: (96) float32
 *   Y: (200, 96) float32, written
 */
#ifndef TILECRAFT_BIAS_RELU_H
#define TILECRAFT_BIAS_RELU_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_bias_relu_load(const char *cubin_path);

/* Launch every kernel of bias_relu in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_bias_relu(CUdeviceptr X, CUdeviceptr b, CUdeviceptr Y, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
