#!/usr/bin/env bash
# Issue 30 (TileLang's gemv example) on a CUDA GPU, in about a minute: per-thread (SIMT) code, blocks of
# two thread dims, barriers placed for per-thread shared-memory accesses, per-thread atomics, TVM's thread
# all-reduce and TileLang's reducers. Runs, each with its log under $OUT (or ./gemv-logs):
#   1. the conformance cases of tilecraft/testing/conformance/per_thread.py through both CUDA execution
#      backends (ragged sizes, float64 references; blocks of 8, 24, 64, 256 threads);
#   2. tests/cuda/test_per_thread_code.py (the generated CUDA's structure; nvcc for sm_90a and sm_80);
#   3. with TL_EXAMPLES=<tilelang>/examples: examples/gemv/test_example_gemv.py under tilecraft.compat
#      (its six kernels, each checked against torch by the example's own assert_allclose), then
#      regression_example_gemv.py (N = K = 4096, each kernel timed with do_bench).
# Usage: [TL_EXAMPLES=PATH/TO/tilelang/examples] bash benchmarks/gpu_check_gemv.sh
# On a lent device machine (which sees only the repository's tree) copy TileLang's examples/gemv into an
# untracked folder of the tree first, e.g. tl_examples/gemv, and pass TL_EXAMPLES=$PWD/tl_examples. The
# device image has torch with CUDA and nvcc (checked 2026-12: torch 2.11+cu130, /usr/local/cuda/bin/nvcc).
set -u
OUT=${OUT:-gemv-logs}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TILECRAFT_CACHE_DIR=${TILECRAFT_CACHE_DIR:-/tmp/tilecraft-cache-gemv}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
git log --oneline -1 2>/dev/null | tee "$OUT/commit.txt"
JOBS=""
python3 -c "import xdist" 2>/dev/null && JOBS="-n 8"
PYTEST="python3 -m pytest -q -rs -p no:cacheprovider $JOBS"

timeout 100 $PYTEST tests/conformance/test_conformance.py -k "cuda and (per_thread or reducer)" \
    > "$OUT/conformance.txt" 2>&1
echo "1. conformance (exit $?): $(grep -E '[0-9]+ (passed|failed)' "$OUT/conformance.txt" | tail -1)"
grep -E "^FAILED|^ERROR|SKIPPED" "$OUT/conformance.txt" | head -20

timeout 100 $PYTEST tests/cuda/test_per_thread_code.py > "$OUT/tests.txt" 2>&1
echo "2. tests (exit $?): $(grep -E '[0-9]+ (passed|failed)' "$OUT/tests.txt" | tail -1)"
grep -E "^FAILED|^ERROR" "$OUT/tests.txt" | head -20

if [ -d "${TL_EXAMPLES:-}" ]; then  # TileLang's example as written, checked against torch by itself
    (cd "$TL_EXAMPLES/gemv" && timeout 120 python3 -m tilecraft.compat test_example_gemv.py) \
        > "$OUT/example.txt" 2>&1
    echo "3. test_example_gemv (exit $?; 0: every kernel matched torch): $(grep -E 'Test passed|Error' "$OUT/example.txt" | tail -1)"
    (cd "$TL_EXAMPLES/gemv" && timeout 120 python3 -m tilecraft.compat regression_example_gemv.py) \
        > "$OUT/regression.txt" 2>&1
    echo "   regression_example_gemv (exit $?): $(grep -E 'example_gemv|Error' "$OUT/regression.txt" | tail -1) (mean ms of the six kernels)"
else
    echo "3. skipped: set TL_EXAMPLES=<tilelang>/examples to run TileLang's gemv example"
fi
