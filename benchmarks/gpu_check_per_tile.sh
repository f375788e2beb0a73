#!/usr/bin/env bash
# Issue 29, the fourteenth session's changes on a CUDA GPU (sm_90a), most important first so that a short
# device budget still brings back the correctness part. Each step's log goes under $OUT (or
# ./per-tile-logs):
#   1. the attention and GEMM conformance cases with {"tl.disable_warp_specialized": true}: the TMA ring
#      per copy (software_pipeline._per_tile, one stage included) and the late TMA waits (late_waits.py);
#   2. the GEMV, reducer and per-thread cases (vectorize-loops with two runs, the largest-first layout
#      default) and the fp8 cast (the reduction source's runs);
#   3. with TL_EXAMPLES=<tilelang>/examples: TileLang's gqa_decode example under tilecraft.compat (its own
#      check against its reference);
#   4. with TL_EXAMPLES and TILELANG_SITE (TileLang 0.1.15 unpacked, benchmarks/NOTES-tilelang-regression.md
#      "How to measure"): the regression timings of gqa_decode, gemv, fusedmoe and the cast examples on
#      both compilers (CUPTI kernel time).
# Usage: [TL_EXAMPLES=...] [TILELANG_SITE=...] bash benchmarks/gpu_check_per_tile.sh
set -u
OUT=${OUT:-per-tile-logs}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$PWD
export PYTHONUNBUFFERED=1 PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
git log --oneline -1 2>/dev/null | tee -a "$OUT/gpu.txt"
JOBS=""
python3 -c "import xdist" 2>/dev/null && JOBS="-n 12"
PYTEST="python3 -m pytest -q -rs -p no:cacheprovider $JOBS"

TILECRAFT_CONFORMANCE_PASS_CONFIGS='{"tl.disable_warp_specialized": true}' timeout 70 \
    $PYTEST tests/conformance -k "cuda and (attention or gemm)" > "$OUT/conformance_no_producer.txt" 2>&1
echo "1. per-tile rings (exit $?): $(tail -1 "$OUT/conformance_no_producer.txt")"
timeout 40 $PYTEST tests/conformance -k "cuda and (gemv or reducer or vectorized or per_thread or cast)" \
    > "$OUT/conformance_layouts.txt" 2>&1
echo "2. layouts and vector runs (exit $?): $(tail -1 "$OUT/conformance_layouts.txt")"
if [ -n "${TL_EXAMPLES:-}" ]; then
    (cd "$TL_EXAMPLES/flash_decoding" && timeout 60 python3 -m tilecraft.compat example_gqa_decode.py) \
        > "$OUT/gqa_decode_example.txt" 2>&1
    echo "3. gqa_decode example (exit $?): $(grep -E 'pass|Error' "$OUT/gqa_decode_example.txt" | tail -2)"
fi
if [ -n "${TL_EXAMPLES:-}" ] && [ -n "${TILELANG_SITE:-}" ]; then
    timeout 240 python3 benchmarks/tilelang_regression.py run --examples "$TL_EXAMPLES" \
        --tilelang-site "$TILELANG_SITE" --json "$OUT/regression.json" \
        --only gqa_decode,gemv/,fusedmoe,cast/ --timeout 60 > "$OUT/regression.txt" 2>&1
    echo "4. regression timings (exit $?):"
    tail -12 "$OUT/regression.txt"
fi
