/* q_t_times_do.h: the C API of the tilecraft kernel q_t_times_do (target cuda -arch=sm_90a -backend=cutedsl -device=0 -max_shared_memory_per_block_optin=232448).
 * Link q_t_times_do.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
 *   Q: (100, 40) float32
 *   dO: (100, 72) float32
 *   dH: (4, 40, 72) float32, written
 */
#ifndef TILECRAFT_Q_T_TIMES_DO_H
#define TILECRAFT_Q_T_TIMES_DO_H
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_q_t_times_do_load(const char *cubin_path);

/* Launch every kernel of q_t_times_do in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_q_t_times_do(CUdeviceptr Q, CUdeviceptr dO, CUdeviceptr dH, CUstream stream);

#ifdef __cplusplus
}
#endif
#endif
