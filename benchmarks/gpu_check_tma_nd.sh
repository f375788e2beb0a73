#!/usr/bin/env bash
# Issue 29 item 4 on an H100 (about 3 minutes): TMA boxes of bshd regions (K[b, rows, h, :], 4-D maps) and
# warp specialization of one-stage attention loops. Runs, each with its log under $OUT (or ./tma-nd-logs):
#   1. the conformance cases these change, through both CUDA execution backends: flash_attention_bshd_*
#      (new: ragged, two batches, grouped heads, one stage, (tokens, heads, dim)), the older bshd
#      flash_attention_{full,causal} (now TMA + producer, one stage), the bhsd ones (unchanged path, as a
#      control), the two other one-stage loops that now get a producer, the cluster gemms;
#   2. the bshd cases again without the producer, without the gemm-softmax overlap, and the cluster gemms
#      with TMA multicast (its row slicing now finds the box's row entry);
#   3. the hardware-free tests of the change (tensor maps, boxes, coordinates, refusals, nvcc);
#   4. benchmarks/bshd_paths.py: TileLang's bshd regression configs on each path (default / no overlap /
#      no producer / no TMA), correctness against SDPA and kernel time. Skip it with --no-bench.
# Usage: bash benchmarks/gpu_check_tma_nd.sh [--no-bench]
set -u
OUT=${OUT:-tma-nd-logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TILECRAFT_CACHE_DIR=${TILECRAFT_CACHE_DIR:-/tmp/tilecraft-cache-tma-nd}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
git log --oneline -1 | tee "$OUT/commit.txt"
PYTEST="python3 -m pytest -q -rs -p no:cacheprovider -n 8"
CONF=tests/conformance/test_conformance.py
CASES="flash_attention or gemm_register_a_from_global or row_vectors_across_a_tile or gemm_in_clusters"

timeout 150 $PYTEST $CONF -k "cuda and ($CASES)" > "$OUT/conformance.txt" 2>&1
echo "1. conformance (exit $?):"; grep -E "passed|failed|FAILED|Error" "$OUT/conformance.txt" | tail -30

run_with() {  # $1: log name, $2: pass configs (JSON), $3: -k expression
  TILECRAFT_CONFORMANCE_PASS_CONFIGS="$2" timeout 90 $PYTEST $CONF -k "$3" > "$OUT/$1.txt" 2>&1
  echo "2. $1 $2 (exit $?):"; grep -E "passed|failed|FAILED|Error" "$OUT/$1.txt" | tail -10
}
run_with no-producer '{"tl.disable_warp_specialized": true}' "cuda-nvrtc and flash_attention_bshd"
run_with no-overlap '{"tilecraft.cuda.gemm_softmax_overlap": false}' "cuda-nvrtc and flash_attention_bshd"
run_with multicast '{"tilecraft.cuda.tma_multicast": true}' "cuda-nvrtc and gemm_in_clusters"

timeout 90 $PYTEST tests/cuda/test_tma_nd.py tests/cuda/passes/test_lower_to_threads_tma.py > "$OUT/tests.txt" 2>&1
echo "3. tests (exit $?):"; grep -E "passed|failed|FAILED|Error" "$OUT/tests.txt" | tail -10

if [ "${1:-}" != "--no-bench" ]; then
  timeout 240 python3 benchmarks/bshd_paths.py --json "$OUT/bshd_paths.json" > "$OUT/bshd_paths.txt" 2>&1
  echo "4. bshd_paths (exit $?):"; cat "$OUT/bshd_paths.txt" | grep -v "^ " | tail -12
fi
