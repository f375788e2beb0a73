/* keep_dim_whole_tile.c: loads keep_dim_whole_tile's cubin and launches it with the CUDA driver API (see keep_dim_whole_tile.h). */
#include "keep_dim_whole_tile.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static const char *symbols[1] = {"keep_dim_whole_tile_kernel0_0"};
static const int dynamic_smem[1] = {8192};
static CUfunction functions[1];

static int64_t tc_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static int64_t tc_floormod(int64_t a, int64_t b) { return a - b * tc_floordiv(a, b); }
static int64_t tc_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t tc_max(int64_t a, int64_t b) { return a > b ? a : b; }

CUresult tilecraft_keep_dim_whole_tile_load(const char *cubin_path) {
    FILE *file = fopen(cubin_path, "rb");
    if (file == NULL) return CUDA_ERROR_FILE_NOT_FOUND;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *image = malloc(size > 0 ? (size_t)size : 1);
    size_t got = image != NULL && size > 0 ? fread(image, 1, (size_t)size, file) : 0;
    fclose(file);
    if (image == NULL || size <= 0 || got != (size_t)size) {
        free(image);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    CUmodule module;
    CUresult rc = cuModuleLoadData(&module, image);
    free(image);
    if (rc != CUDA_SUCCESS) return rc;
    for (int k = 0; k < 1; k++) {
        rc = cuModuleGetFunction(&functions[k], module, symbols[k]);
        if (rc != CUDA_SUCCESS) return rc;
        if (dynamic_smem[k] > 49152) {
            rc = cuFuncSetAttribute(functions[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem[k]);
            if (rc != CUDA_SUCCESS) return rc;
        }
    }
    return CUDA_SUCCESS;
}

CUresult tilecraft_keep_dim_whole_tile(CUdeviceptr H, CUdeviceptr dH, CUdeviceptr Out, CUstream stream) {
    (void)tc_floormod; (void)tc_min; (void)tc_max;
    { /* kernel 0: keep_dim_whole_tile_kernel0_0 */
        int64_t gx = INT64_C(3);
        int64_t gy = INT64_C(1);
        int64_t gz = INT64_C(1);
        if (gx < 0 || gy < 0 || gz < 0 || gx > INT64_C(2147483647) || gy > 65535 || gz > 65535) return CUDA_ERROR_INVALID_VALUE;
        void *params[] = {&H, &dH, &Out};
        if (gx && gy && gz) {
            CUresult rc = cuLaunchKernel(functions[0], (unsigned)gx, (unsigned)gy, (unsigned)gz, 128, 1, 1, 8192, stream, params, NULL);
            if (rc != CUDA_SUCCESS) return rc;
        }
    }
    return CUDA_SUCCESS;
}
