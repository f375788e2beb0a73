#!/usr/bin/env bash
# Issue 30 (TileLang's dequantize_gemm examples) on a CUDA GPU, in a few minutes: T.import_source of the
# examples' CUDA C decoders (lop3 / inline PTX), T.call_extern with T.access_ptr, T.alloc_buffer (a split-K
# workspace), per-thread decoding inside a wgmma GEMM. Runs, each with its log under $OUT (or ./dequant-logs):
#   1. tests/cuda/test_extern_codegen.py and tests/language/test_extern.py (generated CUDA's structure, nvcc
#      for sm_80 and sm_90a; the builtins on the CPU);
#   2. with TL_EXAMPLES=<tilelang>/examples: examples/dequantize_gemm/test_example_dequantize_gemm.py under
#      tilecraft.compat, one line per case (each checked against torch by the example itself):
#      test_example_dequant_gemv_fp16xint4 (the lop3 decoder), test_example_dequant_gemm_fp4_hopper,
#      test_example_dequant_gemm_bf16_mxfp4_hopper (the mxfp4 twiddling decoder), and
#      test_example_dequant_gemm_w4a8; the three Hopper cases skip on a GPU other than compute 9.0;
#   3. the same examples with their decoders written in T.* (fast_decoding=False / fast_dequant=False) and
#      fp4 with split=2 (the T.alloc_buffer workspace), against torch: where 2 fails and 3 passes, the
#      imported decoder's call is at fault, not the rest of the kernel.
# Usage: [TL_EXAMPLES=PATH/TO/tilelang/examples] bash benchmarks/gpu_check_dequant.sh
# On a lent device machine (which sees only the repository's tree) copy TileLang's examples/dequantize_gemm
# into an untracked folder of the tree first, e.g. tl_examples/dequantize_gemm, and pass
# TL_EXAMPLES=$PWD/tl_examples.
set -u
OUT=${OUT:-dequant-logs}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TILECRAFT_CACHE_DIR=${TILECRAFT_CACHE_DIR:-/tmp/tilecraft-cache-dequant}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee "$OUT/nvidia-smi.txt"
git log --oneline -1 2>/dev/null | tee "$OUT/commit.txt"
JOBS=""
python3 -c "import xdist" 2>/dev/null && JOBS="-n 8"
PYTEST="python3 -m pytest -q -rs -p no:cacheprovider $JOBS"

timeout 200 $PYTEST tests/cuda/test_extern_codegen.py tests/language/test_extern.py > "$OUT/tests.txt" 2>&1
echo "1. tests (exit $?): $(grep -E '[0-9]+ (passed|failed)' "$OUT/tests.txt" | tail -1)"
grep -E "^FAILED|^ERROR" "$OUT/tests.txt" | head -20

if [ -d "${TL_EXAMPLES:-}" ]; then  # TileLang's examples as written, checked against torch by themselves
    (cd "$TL_EXAMPLES/dequantize_gemm" && timeout 400 python3 -m tilecraft.compat -m pytest -q -rA \
        -p no:cacheprovider test_example_dequantize_gemm.py) > "$OUT/examples.txt" 2>&1
    echo "2. test_example_dequantize_gemm (exit $?):"
    grep -E "^(PASSED|FAILED|SKIPPED|ERROR)" "$OUT/examples.txt" | sed 's/^/   /'
    grep -E "^E  " "$OUT/examples.txt" | head -10 | sed 's/^/   /'

    cat > "$OUT/slow_paths.py" <<'PY'
import os
import sys

sys.path.insert(0, os.getcwd())  # the examples' directory (the script's own is $OUT)
import torch
import tilelang
import tilelang.language as T
import example_dequant_gemv_fp16xint4 as gv
import example_dequant_gemm_fp4_hopper as fp4
import example_dequant_gemm_bf16_mxfp4_hopper as mx

failed = 0
def case(name, fn):
    global failed
    try:
        fn()
        print(f"   pass: {name}")
    except Exception as e:  # noqa: BLE001 - one line per case
        failed += 1
        print(f"   FAIL: {name}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")

def gemv_slow():
    M, N, K = 1, 1024, 1024
    k = gv.dequantize_gemv(M, N, K, "float16", "float16", "float16", 4, "int8", "uint", 4, 32, False, False, True, -1, False)
    A = torch.rand(M, K, dtype=torch.float16, device="cuda")
    qB = torch.randint(0, 127, (N, K // 2), dtype=torch.int8, device="cuda")
    C = torch.zeros(M, N, dtype=torch.float16, device="cuda")
    k(A, qB, C)
    q = qB.to(torch.uint8).to(torch.int32)
    nib = torch.stack((q & 0x0F, q >> 4), dim=-1).reshape(N, K)
    B = torch.where(nib >= 8, nib - 16, nib).to(torch.half)  # the T.* decoder sign-extends
    torch.testing.assert_close(C, torch.matmul(A.float(), B.T.float()).half(), atol=1e3, rtol=1e-1)

def fp4_split2():
    k = fp4.matmul(256, 256, 256, T.float16, T.float16, T.float32, num_bits=4, block_M=128, block_N=128, block_K=128,
                   num_stages=2, threads=256, split=2)
    k.get_profiler(tilelang.TensorSupplyType.Integer).assert_allclose(fp4.ref_program, rtol=0.01, atol=0.01)

def mx_slow(bias):
    k = mx.matmul(256, 256, 256, T.bfloat16, T.bfloat16, T.float32, num_bits=4, scale_size=32, block_M=256,
                  block_N=128, block_K=128, num_stages=2, threads=256, split=1, fast_dequant=False, with_bias=bias)
    ref = mx.ref_program_simple_with_bias if bias else mx.ref_program_simple
    k.get_profiler(tilelang.TensorSupplyType.Auto).assert_allclose(ref, rtol=0.01, atol=0.01)

case("gemv fast_decoding=False", gemv_slow)
if torch.cuda.get_device_capability() == (9, 0):
    case("fp4 split=2 (T.alloc_buffer workspace)", fp4_split2)
    case("mxfp4 fast_dequant=False", lambda: mx_slow(False))
    case("mxfp4 fast_dequant=False with_bias=True", lambda: mx_slow(True))
    case("mxfp4 fast_dequant=True with_bias=True", lambda: mx.main(fast_dequant=True, with_bias=True))
sys.exit(1 if failed else 0)
PY
    (cd "$TL_EXAMPLES/dequantize_gemm" && timeout 400 python3 -m tilecraft.compat "$OUT/slow_paths.py") \
        > "$OUT/slow_paths.txt" 2>&1
    echo "3. decoders in T.*, split-K workspace (exit $?):"
    grep -E "^   (pass|FAIL)" "$OUT/slow_paths.txt"
else
    echo "2., 3. skipped: set TL_EXAMPLES=<tilelang>/examples to run TileLang's dequantize examples"
fi
