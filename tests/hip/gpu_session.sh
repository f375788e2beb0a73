#!/usr/bin/env bash
# On a machine with an AMD GPU, ROCm's HIP runtime, a ROCm build of torch and clang-19/lld-19: run the HIP
# backend's audit (conformance kit included) and its tests; output under $OUT (default ./hip-session).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/hip-session}"
mkdir -p "$OUT"
{ rocminfo 2>&1 | grep -E "Name:|gfx" | head -20; python3 -c "import torch; print('torch', torch.__version__, torch.version.hip)"; } >"$OUT/device.txt" 2>&1
python3 -m tilecraft backend check hip -v >"$OUT/backend-check.txt" 2>&1; echo "backend check: exit $?" >>"$OUT/summary.txt"
python3 -m pytest -q tests/hip -rs >"$OUT/pytest-hip.txt" 2>&1; echo "pytest tests/hip: exit $?" >>"$OUT/summary.txt"
python3 -m pytest -q tests/conformance -k hip -rs >"$OUT/pytest-conformance.txt" 2>&1
echo "pytest tests/conformance -k hip: exit $?" >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
