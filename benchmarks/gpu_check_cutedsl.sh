#!/usr/bin/env bash
# Issue 33 on the H200 (about 2-3 minutes): the CuTe DSL variant (target "cuda -arch=sm_90a -backend=cutedsl")
# on a GPU machine without the CuTe DSL. The DSL (nvidia-cutlass-dsl, a 92 MB libs wheel) does not travel
# with a device call; the cubins it compiles do. So, first, on a machine with the DSL and no GPU:
#   pip install 'tilecraft[cutedsl]'      # or: pip install nvidia-cutlass-dsl
#   python benchmarks/cutedsl.py prebuild # -> benchmarks/results/cutedsl-exports (cubins + Python + JSON, a few MB)
# then run this script on the GPU with those exports in the working tree (they are not git-ignored, so a
# device call carries them). It writes, under $OUT (or ./cutedsl-logs):
#   1. cutedsl_device.log / cutedsl_device.json: every exported conformance kernel loaded with tilecraft.load
#      (no compiler) and checked against its float64 reference; the float16 GEMM at 4096^3 in TFLOP/s,
#      cutedsl exports next to the cuda backend (the same kernel text, compiled there) and cuBLAS;
#   2. tests.txt: the hardware-free tests of the variant (they skip the DSL compile where it is absent).
# Usage: bash benchmarks/gpu_check_cutedsl.sh [EXPORT_DIR]
set -u
OUT=${OUT:-cutedsl-logs}
DIR=${1:-benchmarks/results/cutedsl-exports}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TILECRAFT_CACHE_DIR=${TILECRAFT_CACHE_DIR:-/tmp/tilecraft-cache-cutedsl}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
git log --oneline -1 | tee "$OUT/commit.txt"
python3 -c "import cutlass; print('CuTe DSL', cutlass.__version__)" > "$OUT/dsl.txt" 2>&1 || echo "no CuTe DSL here (expected)" >> "$OUT/dsl.txt"
if [ ! -f "$DIR/index.json" ]; then
  echo "no exports at $DIR: run 'python benchmarks/cutedsl.py prebuild' where the CuTe DSL is installed" | tee "$OUT/error.txt"
  exit 2
fi

timeout 200 python3 benchmarks/cutedsl.py device "$DIR" > "$OUT/cutedsl_device.log" 2>&1
echo "1. device run (exit $?):"; tail -3 "$OUT/cutedsl_device.log"; grep -E ": fail" "$OUT/cutedsl_device.log" | head -20

timeout 60 python3 -m pytest -q -rs -p no:cacheprovider -n 8 tests/cutedsl > "$OUT/tests.txt" 2>&1
echo "2. tests (exit $?):"; grep -E "passed|failed|FAILED|Error" "$OUT/tests.txt" | tail -5
