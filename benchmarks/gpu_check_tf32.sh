#!/usr/bin/env bash
# Issue 29 (TileLang's deepseek_mhc example_mhc_pre at 0.03x) on an H100/H200, in under 3 minutes. Logs go
# to $OUT (or ./tf32-logs):
#   1. the conformance cases of gemms on CUDA (both execution backends): the TF32 ones (gemm_tf32_*: shared
#      tiles with every transpose pair and ragged sizes, a float32 x tfloat32 mix, mhc's register-A gemm
#      accumulating over a pipelined loop), and every other gemm (float32 ones on FMA with the xor_rows
#      tiles, 16-bit and float8 on tensor cores, the loops whose tiles are now allocated around the loop),
#      and the fragment reads across threads (aligned column blocks read from registers, or broadcast once
#      before a serial loop: gemm_tf32_register_a_with_row_sums is mhc's whole gemm kernel);
#   2. the same TF32 and float32 cases on the sm_80 path (tl.disable_wgmma);
#   3. the hardware-free tests of the change (nvcc, the host emulation of the TF32 templates, bank counts);
#   4. benchmarks/mhc_pre_kernels.py: mhc's gemm kernel (built-in copy) timed with CUPTI and checked against
#      torch float32 (TF32: relative error about 3e-4); with TL_EXAMPLES=<tilelang>/examples also the
#      example's own two kernels under tilecraft.compat, and under TileLang itself when it is installed.
# Usage: bash benchmarks/gpu_check_tf32.sh [--no-bench]
set -u
OUT=${OUT:-tf32-logs}
mkdir -p "$OUT"
ROOT=$PWD
export PYTHONUNBUFFERED=1 PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
export TILECRAFT_CACHE_DIR=${TILECRAFT_CACHE_DIR:-/tmp/tilecraft-cache-tf32}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
git log --oneline -1 2>/dev/null | tee "$OUT/commit.txt"
JOBS=""
python3 -c "import xdist" 2>/dev/null && JOBS="-n 8"
PYTEST="python3 -m pytest -q -rs -p no:cacheprovider $JOBS"
CONF=tests/conformance/test_conformance.py

SELECT="tf32 or gemm or fragment_column_blocks or fragment_reads or row_vectors"
timeout 150 $PYTEST $CONF -k "cuda and ($SELECT)" > "$OUT/conformance.txt" 2>&1
echo "1. conformance, cuda and ($SELECT) (exit $?):"; grep -E "passed|failed|FAILED|Error" "$OUT/conformance.txt" | tail -30

TILECRAFT_CONFORMANCE_PASS_CONFIGS='{"tl.disable_wgmma": true}' timeout 60 $PYTEST $CONF \
    -k "cuda-nvrtc and (tf32 or gemm_f32 or float32 or batched_gemm)" > "$OUT/conformance-sm80-path.txt" 2>&1
echo "2. the same without wgmma (exit $?):"; grep -E "passed|failed|FAILED|Error" "$OUT/conformance-sm80-path.txt" | tail -10

timeout 120 $PYTEST tests/cuda/test_tf32_gemm.py tests/cuda/test_tf32_mma_emulated.py tests/cuda/test_fma_shared_layouts.py \
    tests/cuda/passes/test_lower_to_threads_tf32.py tests/cuda/passes/test_inject_software_pipeline.py \
    tests/transform/test_remote_fragment_reads.py \
    > "$OUT/tests.txt" 2>&1
echo "3. tests (exit $?):"; grep -E "passed|failed|FAILED|Error" "$OUT/tests.txt" | tail -10

if [ "${1:-}" != "--no-bench" ]; then
    timeout 120 python3 benchmarks/mhc_pre_kernels.py --builtin --json "$OUT/mhc_builtin.json" > "$OUT/mhc_builtin.txt" 2>&1
    echo "4. mhc gemm kernel, built-in copy (exit $?):"; grep -vE "Warning|_record" "$OUT/mhc_builtin.txt" | tail -8
    if [ -d "${TL_EXAMPLES:-}/deepseek_mhc" ]; then
        (cd "$TL_EXAMPLES/deepseek_mhc" && timeout 150 python3 -m tilecraft.compat "$ROOT/benchmarks/mhc_pre_kernels.py" \
            --json "$ROOT/$OUT/mhc_tilecraft.json") > "$OUT/mhc_tilecraft.txt" 2>&1
        echo "4. example_mhc_pre kernels under tilecraft (exit $?):"; grep -vE "Warning|_record" "$OUT/mhc_tilecraft.txt" | tail -8
        if (cd /tmp && python3 -c "import tilelang" 2>/dev/null); then
            (cd "$TL_EXAMPLES/deepseek_mhc" && PYTHONPATH= timeout 150 python3 "$ROOT/benchmarks/mhc_pre_kernels.py" \
                --json "$ROOT/$OUT/mhc_tilelang.json") > "$OUT/mhc_tilelang.txt" 2>&1
            echo "4. example_mhc_pre kernels under TileLang (exit $?):"; grep -vE "Warning|_record" "$OUT/mhc_tilelang.txt" | tail -8
        fi
    fi
fi
