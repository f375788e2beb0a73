#!/usr/bin/env bash
# Issue 14 on a GPU machine, in one go (under 8 minutes): the runtime's GPU tests (custom op under
# torch.compile, streams, CUDA-graph capture and replay, DLPack/CuPy, the compiled launcher on real
# tensors, the argument attacks under both launchers, the AOT export called from C), then the launch
# benchmark, printed against the issue's targets. Logs go to $OUT (or ./runtime-logs).
# Usage: bash benchmarks/runtime_gpu_check.sh
set -u
OUT=${OUT:-runtime-logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TILECRAFT_CACHE_DIR=${TILECRAFT_CACHE_DIR:-/tmp/tilecraft-cache-runtime}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" | tee "$OUT/versions.txt"
python3 -c "import tilelang; print('tilelang', tilelang.__version__)" >> "$OUT/versions.txt" 2>&1
timeout 300 python3 -m pytest -q -rs -p no:cacheprovider \
  tests/torch tests/cuda/test_native_launch.py tests/cuda/test_gpu.py tests/execution/test_argument_attacks.py \
  tests/execution/test_native_launcher.py tests/execution/test_export_c.py tests/cuda/test_export_c.py \
  > "$OUT/tests.txt" 2>&1
echo "tests (exit $?):"; grep -E "passed|failed|FAILED|SKIPPED|Error" "$OUT/tests.txt" | tail -30
timeout 180 python3 benchmarks/cuda.py --launch-only --json "$OUT/launch.json" > "$OUT/launch.txt" 2>&1
echo "benchmark (exit $?):"; tail -4 "$OUT/launch.txt"
timeout 60 python3 benchmarks/profile_launch.py > "$OUT/profile.txt" 2>&1; head -30 "$OUT/profile.txt"
python3 - "$OUT/launch.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as err:
    sys.exit(f"no benchmark results: {err}")
l, g, b = r["launch"], r["graph"], r["launcher"]
def row(what, got, limit, unit="us"):
    print(f"  {what:58s} {got:8.2f} {unit}  target <= {limit:g} {unit}  {'MET' if got <= limit else 'MISSED by %.2f' % (got - limit)}")
print("issue 14 targets (host time per call of a 32-element kernel, median of drained batches):")
row("tilecraft, output allocated (compiled launcher)", l["tilecraft_compiled_allocated_us"], 5)
row("tilecraft, output passed in (compiled launcher)", l["tilecraft_compiled_given_us"], 3)
for other in ("torch", "tilelang"):
    for form in ("allocated", "given"):
        key = f"{other}_{form}_us"
        if key in l:
            row(f"tilecraft {form} below {other} {form} ({l[key]:.2f} us)", l[f"tilecraft_compiled_{form}_us"], l[key])
print(f"  Python path for reference: allocated {l['tilecraft_python_allocated_us']:.2f} us, given {l['tilecraft_python_given_us']:.2f} us")
row("CUDA-graph replay, device time per kernel (100 kernels)", g["graph_us_per_kernel"], 2)
row("compiled launcher build, fresh cache", b["launcher_build_ms"], 2000, "ms")
row("compiled launcher load, warm process", b["launcher_warm_load_ms"], 10, "ms")
PY
