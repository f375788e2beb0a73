#!/usr/bin/env bash
# Makes .tl/ (git-ignored), what a device call carries to run TileLang 0.1.15 beside tilecraft:
#   .tl/tlsite.tar.xz   TileLang 0.1.15 and the wheels it needs that the device image lacks, unpacked for
#                       the device's Python 3.12 (tilelang/3rdparty/tvm/src removed: 44 MB instead of 90)
#   .tl/examples.tar.xz TileLang's examples at a35008a (the regression suite's files)
#   .tl/setup.sh        sourced on the device: unpacks both under /tmp, exports TL_SITE and TL_EXAMPLES
# Usage: TILELANG_GIT=<a git dir of tile-ai/tilelang holding a35008a> bash benchmarks/tilelang_carry.sh
# then, on the device: run(command="source .tl/setup.sh && bash benchmarks/gpu_check_....sh",
#                          carry=[".tl/tlsite.tar.xz", ".tl/examples.tar.xz", ".tl/setup.sh"])
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TILELANG_GIT:?set TILELANG_GIT to a git dir of tile-ai/tilelang that holds commit a35008a}"
PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p .tl "$work/site"
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d "$work/wheels" \
    tilelang==0.1.15 apache-tvm-ffi==0.1.12 torch-c-dlpack-ext==0.1.5 z3-solver==4.15.4
for wheel in "$work"/wheels/*.whl; do
    "$PYTHON" -m zipfile -e "$wheel" "$work/site"
done
rm -rf "$work/site/tilelang/3rdparty/tvm/src"  # sources of TileLang's TVM: not needed to run it
tar -C "$work/site" -cf - . | xz -T0 -6 > .tl/tlsite.tar.xz
git --git-dir="$TILELANG_GIT" archive a35008a examples | xz -T0 -6 > .tl/examples.tar.xz
cat > .tl/setup.sh <<'SETUP'
# Sourced on the device: TileLang 0.1.15 under /tmp/site, its examples (a35008a) under /tmp/tl/examples.
mkdir -p /tmp/site /tmp/tl
[ -d /tmp/site/tilelang ] || tar -C /tmp/site -xJf .tl/tlsite.tar.xz
[ -d /tmp/tl/examples ] || tar -C /tmp/tl -xJf .tl/examples.tar.xz
chmod -R u+x /tmp/site/tilelang/bin 2>/dev/null || true
export TL_SITE=/tmp/site TL_EXAMPLES=/tmp/tl/examples
SETUP
ls -l .tl
