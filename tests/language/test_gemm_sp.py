"""T.gemm_sp on the CPU target: A given 2:4-compressed (kept values and metadata) times B, against the dense
product in float64, for each operand placement of TileLang's gemm_sp tests (ss, rs, sr, rr), K-major A and
E, every metadata width and the float32 (1 of 2) format; with ragged sizes and a poisoned output. The
conformance suite runs a ragged float16 one on every backend (and compiles it with nvcc): case
gemm_sp_float16_k_major_register_a_ragged."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ParseError
from tilecraft.testing.conformance import sparse_gemms as SP

CONFIGS = {
    "int8_int32_k_major_register_a": SP.SparseGemm(
        64, 40, 128, 64, 32, 64, "int8", "int32", transpose_a=True, register_a=True
    ),
    "bfloat16_int8_k_major_register_ab": SP.SparseGemm(
        70, 50, 96, 32, 32, 32, "bfloat16", "int8", True, False, register_a=True, register_b=True
    ),
    "float32_one_of_two_register_b": SP.SparseGemm(
        48, 40, 64, 32, 32, 32, "float32", "int16", False, False, register_b=True
    ),
    "float8_e5m2_int32_e_k_major_only": SP.SparseGemm(
        32, 32, 128, 32, 32, 64, "float8_e5m2", "int32", transpose_e=True
    ),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_gemm_sp_matches_the_dense_product(name):
    g = CONFIGS[name]
    arrays = SP.inputs(g)(np.random.default_rng(7))
    tilecraft.compile(SP.build(g), target="c")(*arrays)
    ref = SP.reference(g)(arrays)[3]
    err = np.abs(arrays[3].astype(np.float64) - ref).max() / np.abs(ref).max()
    assert err <= (0 if g.accum == "int32" else 1e-5)


def test_the_helpers_metadata_is_tilelangs_natural_layout():
    """One word by hand: int16 metadata holds four groups, lowest nibble first, (first, second) position."""
    rng = np.random.default_rng(3)
    dense, sparse, meta = SP.compress(rng, 2, 16, "float16", "int16")
    for row in range(2):
        word = int(meta[row, 0].view(np.uint16))
        for g in range(4):
            group = dense[row, 4 * g : 4 * g + 4]
            first, second = word >> (4 * g) & 3, word >> (4 * g + 2) & 3
            assert first < second and set(np.flatnonzero(group)) <= {first, second}
            assert (group[first], group[second]) == tuple(sparse[row, 2 * g : 2 * g + 2])


def _kernel(a_shape, e_shape, e_dtype="int16", a_dtype="float16", transpose_e=False):
    @T.prim_func
    def bad(A: T.Tensor(a_shape, a_dtype), E: T.Tensor(e_shape, e_dtype), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared(a_shape, a_dtype)
            E_s = T.alloc_shared(e_shape, e_dtype)
            B_s = T.alloc_shared((64, 32), a_dtype)
            C_f = T.alloc_fragment((32, 32), "float32")
            T.gemm_sp(A_s, E_s, B_s, C_f, transpose_E=transpose_e)

    return bad


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ((32, 32), (32, 2), "int16"),
            r"E \(32, 2\) does not describe A of 32 x 64: int16 metadata covers 16",
        ),
        (((32, 32), (32, 4), "int16", "float16", True), r"E must be \(4, 32\) \(transpose_E=True\)"),
        (((32, 16), (32, 4)), r"A_sparse \(32, 16\) holds an A of 32 x 32"),
        (((32, 32), (32, 4), "float16"), "metadata must be an 8-, 16- or 32-bit integer type, got float16"),
        (((32, 32), (32, 4), "int16", "int32"), "no sparse format for A of dtype int32"),
    ],
)
def test_mismatched_operands_are_refused_at_the_call(args, message):
    with pytest.raises(ParseError, match=message):
        _kernel(*args)
