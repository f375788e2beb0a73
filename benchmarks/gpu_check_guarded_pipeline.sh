#!/usr/bin/env bash
# Issue 29 item 3 (pipelined loops under a block-uniform guard) on an H100, in one go (under 3 minutes
# with pytest-xdist): the conformance cases of the guarded kernels on every path a guard changes (the
# producer warpgroup, the TMA ring without it, cp.async with wgmma, mma.sync), the other pipelined
# kernels whose passes it touched (GEMMs, flash attention, T.Persistent, clusters, staged tiles), then
# TileLang's blocksparse_gemm case timed on each path. Logs go to $OUT (or ./guarded-logs).
# Usage: bash benchmarks/gpu_check_guarded_pipeline.sh   (TL_EXAMPLES=<tilelang>/examples also runs
# TileLang's example file under tilecraft.compat)
set -u
OUT=${OUT:-guarded-logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TILECRAFT_CACHE_DIR=${TILECRAFT_CACHE_DIR:-/tmp/tilecraft-cache-guarded}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
JOBS=""
python3 -c "import xdist" 2>/dev/null && JOBS="-n 8"
GUARDED="blocksparse or selected_blocks"
PIPELINED="$GUARDED or gemm or flash_attention or persistent or clusters or staged or two_copies or shared_tiles"
run() {  # run NAME PASS_CONFIGS_JSON -k EXPRESSION
    local name=$1 configs=$2 select=$3
    TILECRAFT_CONFORMANCE_PASS_CONFIGS=$configs timeout 150 python3 -m pytest -q -rs -p no:cacheprovider $JOBS \
        tests/conformance/test_conformance.py -k "$select" > "$OUT/$name.txt" 2>&1
    echo "$name (exit $?): $(grep -E '[0-9]+ (passed|failed)' "$OUT/$name.txt" | tail -1)"
    grep -E "^FAILED|^ERROR" "$OUT/$name.txt" | head -20
}
run conformance-default "{}" "(cuda-nvrtc and ($PIPELINED)) or (cuda-nvcc and ($GUARDED))"
run blocksparse-tma-ring '{"tl.disable_warp_specialized": true}' "cuda-nvrtc and ($GUARDED)"
run blocksparse-cp-async '{"tl.disable_tma_lower": true}' "cuda-nvrtc and ($GUARDED)"
run blocksparse-mma-sync '{"tl.disable_wgmma": true}' "cuda-nvrtc and ($GUARDED)"
if [ -d "${TL_EXAMPLES:-}" ]; then  # TileLang's examples as written, with their own checks against torch
    timeout 60 python3 -m tilecraft.compat "$TL_EXAMPLES/blocksparse_gemm/example_blocksparse_gemm.py" \
        > "$OUT/example.txt" 2>&1
    echo "blocksparse_gemm example (exit $?): $(grep -E 'Verification|Error' "$OUT/example.txt" | tail -1)"
    # sparse GQA decode (a let or a mask read from global memory around the K/V copies): since the N-D TMA
    # change these loops are warp-specialized on sm_90a with the guarded general schedule; their main()
    # checks against a torch reference (assert_close raises on a mismatch)
    for ex in indice mask; do
        (cd "$TL_EXAMPLES/blocksparse_attention" && timeout 90 python3 -m tilecraft.compat \
            "example_tilelang_sparse_gqa_decode_varlen_$ex.py") > "$OUT/gqa_decode_$ex.txt" 2>&1
        echo "sparse_gqa_decode_varlen_$ex example (exit $?; 0: its check passed): $(grep -E 'Error' "$OUT/gqa_decode_$ex.txt" | tail -1)"
    done
fi
timeout 120 python3 benchmarks/blocksparse_gemm.py --json "$OUT/blocksparse_gemm.json" > "$OUT/bench.txt" 2>&1
echo "benchmark (exit $?):"; cat "$OUT/bench.txt" | tail -8
