#!/usr/bin/env bash
# Everything a GPU machine should check, in one go: toolchain report, the GPU tests, the conformance
# suite through both CUDA execution backends, `tilecraft backend check cuda`, and the CUDA benchmark. Logs
# go to $OUT (or ./gpu-logs).
# Usage: bash benchmarks/gpu_session.sh [--quick]
set -u
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TILECRAFT_CACHE_DIR=${TILECRAFT_CACHE_DIR:-/tmp/tilecraft-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -m tilecraft doctor > "$OUT/doctor.txt" 2>&1; head -20 "$OUT/doctor.txt"
timeout 240 python3 -m pytest tests/cuda -q -rs -p no:cacheprovider > "$OUT/cuda-tests.txt" 2>&1
tail -5 "$OUT/cuda-tests.txt"
timeout 400 python3 -m pytest tests/conformance -q -rs -p no:cacheprovider -k "cuda" > "$OUT/conformance.txt" 2>&1
grep -E "passed|failed|FAILED|Error" "$OUT/conformance.txt" | tail -40
timeout 600 python3 -m tilecraft backend check cuda > "$OUT/backend-check-cuda.txt" 2>&1
tail -25 "$OUT/backend-check-cuda.txt"
timeout 120 python3 benchmarks/profile_launch.py > "$OUT/profile.txt" 2>&1; head -40 "$OUT/profile.txt"
if [ "${1:-}" != "--no-bench" ]; then
  timeout 600 python3 benchmarks/cuda.py ${1:-} --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
  tail -25 "$OUT/bench.txt"
fi
