#!/usr/bin/env bash
# The sixteenth session's CUDA paths on a GPU (none ran on one when they landed), a few minutes:
#   1. conformance on the cuda target for what changed: int8 tensor-core gemms (mma.sync m16n8k32, ss and
#      register A, TileLang's w4a8 kernel), TMA loads into tiles without a layout and into 128-byte-row
#      swizzle16 tiles (copy_through_stages, gemm_int8_nn, gemm_w4a8_register_a), vectorized runs into a
#      swizzled operand tile, a fragment row read at a loop index, the dequantize / sub-byte cases;
#      then the whole conformance suite on cuda;
#   2. benchmarks/heldout_gemm.py (issue 29's held-out GEMM shapes against cuBLAS);
#   3. with TL_EXAMPLES=<tilelang>/examples and TL_SITE=<TileLang 0.1.15 site-packages>: the
#      dequantize_gemm and flash_decoding regressions side by side (benchmarks/tilelang_regression.py),
#      and TileLang's dequantize tests under tilecraft.compat.
# Usage: [TL_EXAMPLES=... TL_SITE=...] bash benchmarks/gpu_check_int8_tma.sh   (logs under $OUT or ./int8-tma-logs)
set -u
OUT=${OUT:-int8-tma-logs}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
git log --oneline -1 2>/dev/null | tee -a "$OUT/gpu.txt"
JOBS=""
python3 -c "import xdist" 2>/dev/null && JOBS="-n 8"
PYTEST="python3 -m pytest -q -p no:cacheprovider $JOBS"
CHANGED="int8 or w4a8 or stages or operand_tile or row_of_a_fragment or subbyte or dequant or fp4"
$PYTEST tests/conformance -k "cuda and ($CHANGED)" > "$OUT/conformance_changed.txt" 2>&1
echo "conformance (changed paths): exit $?"; tail -1 "$OUT/conformance_changed.txt"
$PYTEST tests/conformance -k cuda > "$OUT/conformance_cuda.txt" 2>&1
echo "conformance (all cuda): exit $?"; grep FAILED "$OUT/conformance_cuda.txt" | head; tail -1 "$OUT/conformance_cuda.txt"
python3 benchmarks/heldout_gemm.py --json "$OUT/heldout.json" > "$OUT/heldout.txt" 2>&1
grep -E "^best" "$OUT/heldout.txt"
if [ -n "${TL_EXAMPLES:-}" ] && [ -n "${TL_SITE:-}" ]; then
    python3 benchmarks/tilelang_regression.py run --examples "$TL_EXAMPLES" --tilelang-site "$TL_SITE" \
        --json "$OUT/regression.json" --only dequantize_gemm,flash_decoding --timeout 90 > "$OUT/regression.txt" 2>&1
    tail -12 "$OUT/regression.txt"
    (cd "$TL_EXAMPLES/dequantize_gemm" && python3 -m tilecraft.compat -m pytest -q -p no:cacheprovider \
        test_example_dequantize_gemm.py) > "$OUT/dequantize_tests.txt" 2>&1
    echo "TileLang's dequantize tests under tilecraft.compat: exit $?"; tail -2 "$OUT/dequantize_tests.txt"
fi
