#!/usr/bin/env bash
# Does the NVIDIA driver of this machine expose Vulkan to WebGPU, and if so, does the webgpu backend's
# conformance kit pass on it? One command for the GPU machine, from the repository root; output under
# $OUT (default ./out): adapters.txt, webgpu_conformance.txt, summary.txt.
#
# The GPU machine has no network. Bring along (here, before the run):
#   wheels:  python3 -m pip download 'wgpu>=0.32' -d .wheels      (Python >= 3.11 on both machines)
#   loader:  the Vulkan loader debs, as the device notes say: (cd .gl && apt-get download libvulkan1 ...)
# and carry .wheels and .gl. The script unpacks the loader only where `ldconfig -p` has no libvulkan.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-./out}"
mkdir -p "$OUT"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
PY="${PYTHON:-python3}"
{
  echo "== python: $($PY --version 2>&1)"
  if ! ldconfig -p | grep -q libvulkan; then
    if ls .gl/*.deb >/dev/null 2>&1; then
      for f in .gl/*.deb; do dpkg -x "$f" /; done
      ldconfig
      echo "== Vulkan loader unpacked from .gl"
    else
      echo "== no libvulkan and no .gl/*.deb: bring the Vulkan loader (see the top of this script)"
    fi
  fi
  ldconfig -p | grep libvulkan || echo "== still no libvulkan"
  if [ -z "${VK_DRIVER_FILES:-}" ]; then
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
               /etc/vulkan/icd.d/nvidia_icd.json; do
      if [ -f "$icd" ]; then export VK_DRIVER_FILES="$icd"; break; fi
    done
  fi
  echo "== VK_DRIVER_FILES=${VK_DRIVER_FILES:-<none found>}"
  if ! $PY -c "import wgpu" 2>/dev/null; then
    $PY -m pip install -q --no-index --find-links .wheels wgpu 2>&1 | tail -2
  fi
  $PY -c "import tilecraft" 2>/dev/null || $PY -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
} >"$OUT/summary.txt" 2>&1

$PY - "$OUT" <<'PYEOF' >>"$OUT/summary.txt" 2>&1
import sys, time
from pathlib import Path

out = Path(sys.argv[1])
try:
    import wgpu
except Exception as err:  # noqa: BLE001
    print(f"== wgpu cannot be imported: {err}")
    raise SystemExit(0)
adapters = wgpu.gpu.enumerate_adapters_sync()
lines = [f"{k}: {dict(a.info)}" for k, a in enumerate(adapters)]
(out / "adapters.txt").write_text("\n".join(lines) + "\n")
print(f"== wgpu {wgpu.__version__}: {len(adapters)} adapters")
print("\n".join(lines))
nvidia = [k for k, a in enumerate(adapters) if a.info.get("backend_type") == "Vulkan"
          and (a.info.get("vendor_id") == 0x10DE or "nvidia" in str(a.info).lower())]
if not nvidia:
    print("== RESULT: no Vulkan adapter for the NVIDIA GPU; the webgpu conformance was not run")
    raise SystemExit(0)
index = nvidia[0]
print(f"== RESULT: NVIDIA adapter {index} found; running the webgpu conformance kit on it")
from tilecraft.backend import create_backend_context
from tilecraft.testing import conformance as kit

ctx = create_backend_context(f"webgpu -adapter={index}", execution_backend="wgpu")
counts, report = {}, [f"target: {ctx.target}"]
for case in kit.CASES:
    start = time.time()
    verdict = kit.run_case(case, ctx)
    counts[verdict.status] = counts.get(verdict.status, 0) + 1
    report.append(f"{verdict.status:5} {time.time() - start:6.2f}s {case.name} {verdict.reason[:600]}")
for name, check in kit.CHECKS.items():
    verdict = kit.verdict_of(lambda: check(ctx))
    counts[verdict.status] = counts.get(verdict.status, 0) + 1
    report.append(f"{verdict.status:5} {name} {verdict.reason[:600]}")
report.append(f"counts: {counts}")
(out / "webgpu_conformance.txt").write_text("\n".join(report) + "\n")
print(f"== conformance on adapter {index}: {counts}")
PYEOF
cat "$OUT/summary.txt"
