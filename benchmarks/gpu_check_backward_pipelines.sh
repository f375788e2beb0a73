#!/usr/bin/env bash
# The seventeenth session's CUDA paths on a GPU (none ran on one when they landed), a few minutes:
#   1. conformance on the cuda target for what changed: the causal backward whose pipelined loop starts
#      at the diagonal with 1-D lse / Delta slices as TMA boxes (attention_backward_causal_from_the_diagonal),
#      the float16 accumulator's fma.rn.f16 (per_thread_float16_accumulator_gemv), T.gemm_sp, and the
#      sixteenth session's int8 / TMA / vectorized paths;
#   2. with TL_EXAMPLES=<tilelang>/examples and TL_SITE=<TileLang 0.1.15 site-packages>: TileLang's
#      attention-sink backward tests under tilecraft.compat, benchmarks/attention_styles.py (three texts
#      of one attention forward against TileLang's example and SDPA), and the regressions these changes
#      target (attention_sink backward, mha_bwd, dequant_gemv, w4a8) side by side.
# Usage: [TL_EXAMPLES=... TL_SITE=...] bash benchmarks/gpu_check_backward_pipelines.sh  (logs under $OUT or ./backward-logs)
set -u
OUT=${OUT:-backward-logs}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
git log --oneline -1 2>/dev/null | tee -a "$OUT/gpu.txt"
JOBS=""
python3 -c "import xdist" 2>/dev/null && JOBS="-n 8"
CHANGED="attention_backward or float16_accumulator or gemm_sp or int8 or w4a8 or stages or operand_tile or row_of_a_fragment"
python3 -m pytest -q -p no:cacheprovider $JOBS tests/conformance -k "cuda and ($CHANGED)" > "$OUT/conformance_changed.txt" 2>&1
echo "conformance (changed paths): exit $?"; grep FAILED "$OUT/conformance_changed.txt" | head; tail -1 "$OUT/conformance_changed.txt"
if [ -n "${TL_EXAMPLES:-}" ] && [ -n "${TL_SITE:-}" ]; then
    (cd "$TL_EXAMPLES/attention_sink" && python3 -m tilecraft.compat -m pytest -q -p no:cacheprovider \
        test_example_attention_sink.py -k bwd_bhsd) > "$OUT/sink_tests.txt" 2>&1
    echo "TileLang's attention-sink backward tests under tilecraft.compat: exit $?"; tail -2 "$OUT/sink_tests.txt"
    python3 benchmarks/attention_styles.py --examples "$TL_EXAMPLES" --tilelang-site "$TL_SITE" \
        --json "$OUT/attention_styles.json" > "$OUT/attention_styles.txt" 2>&1
    echo "attention_styles: exit $?"; tail -3 "$OUT/attention_styles.txt"
    python3 benchmarks/tilelang_regression.py run --examples "$TL_EXAMPLES" --tilelang-site "$TL_SITE" \
        --json "$OUT/regression.json" --only attention_sink,mha_bwd,dequant_gemv,dequant_gemm_w4a8 \
        --timeout 90 > "$OUT/regression.txt" 2>&1
    tail -16 "$OUT/regression.txt"
fi
