"""T.rng_init / T.rng_rand / T.rng_rand_float: cuRAND's Philox4_32_10, XORWOW and MRG32k3a, checked
against a step-by-step Python reference (tests/language/rng_reference.py) on every target that runs here:
integers and uniform floats bit for bit, normals to a few float32 / float64 ulps (the targets' log, sin
and cos). Philox's first block also against Random123's known-answer vector; CUDA's source compiles."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.conformance.targets import declared_cases, resolve
from tests.language import rng_reference as ref
from tests.language.helpers import assert_roundtrip
from tests.transform.helpers import WEBGPU, assert_nvcc_compiles
from tilecraft.codegen.headers import RNG
from tilecraft.errors import LoweringError, ParseError

RUNNABLE = [c for c in declared_cases() if c.kind in ("c", "opencl", "cuda")]
CURAND_NAMES = {"philox": "curandStatePhilox4_32_10_t", "xorwow": "curandStateXORWOW_t",
                "mrg32k3a": "curandStateMRG32k3a_t"}  # fmt: skip
DRAWS = 7  # per kind of draw and thread: odd, so Philox's blocks of four and Box-Muller's pairs straddle


def _draws(generator: str, seed: int, seq: int, off: int, blocks: int = 2):
    """Each block's one thread draws DRAWS of each kind, its generator at offset off + block * 3."""

    @T.prim_func
    def draws(A: T.Tensor((blocks, DRAWS), "uint32"), B: T.Tensor((blocks, DRAWS), "float32"),
              C: T.Tensor((blocks, DRAWS), "float64"), D: T.Tensor((blocks, DRAWS), "float32"),
              E: T.Tensor((blocks, DRAWS), "float64")):  # fmt: skip
        with T.Kernel(blocks, threads=1) as bx:
            T.rng_init(seed, seq, off + bx * 3, generator=CURAND_NAMES[generator])
            for j in T.serial(DRAWS):
                A[bx, j] = T.rng_rand()
            for j in T.serial(DRAWS):
                B[bx, j] = T.rng_rand_float()
            for j in T.serial(DRAWS):
                C[bx, j] = T.rng_rand_float(bit=64)
            for j in T.serial(DRAWS):
                D[bx, j] = T.rng_rand_float(dist="normal")
            for j in T.serial(DRAWS):
                E[bx, j] = T.rng_rand_float(bit=64, dist="normal")

    return draws


def _expected(generator: str, seed: int, seq: int, off: int):
    g = ref.GENERATORS[generator](seed, seq, off)
    ints = [g.next() for _ in range(DRAWS)]
    f32 = [ref.uniform_f32(g) for _ in range(DRAWS)]
    f64 = [ref.uniform_f64(g) for _ in range(DRAWS)]
    normals = {}
    for bits in (32, 64):
        values = []
        while len(values) < DRAWS:
            values += ref.normal_pairs(g, bits)
        normals[bits] = values[:DRAWS]  # the spare of an odd count stays in the state, unused
    return ints, f32, f64, normals[32], normals[64]


def _run(func, case, shapes_dtypes):
    ctx = resolve(case)
    backend = ctx.execution_backend()
    arrays = [np.full(shape, 7, dtype) for shape, dtype in shapes_dtypes]
    placed = [backend.to_device(a) for a in arrays]
    tilecraft.compile(func, ctx=ctx)(*placed)
    return [np.asarray(backend.to_host(p)) for p in placed]


PARAMS = [(42, 0, 0), (123, 5, 1 << 40 | 3), (0, 1 << 33, 10)]


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.id for c in RUNNABLE])
@pytest.mark.parametrize("generator", list(CURAND_NAMES))
@pytest.mark.parametrize("seed,seq,off", PARAMS, ids=["plain", "far-offset", "far-subsequence"])
def test_draws_follow_curand(case, generator, seed, seq, off):
    if generator == "xorwow" and seq >= 1 << 33:
        seq = 3  # the reference's 160x160 matrix powers are slow; the kernel's jump is checked at 5
    shapes = [((2, DRAWS), t) for t in (np.uint32, np.float32, np.float64, np.float32, np.float64)]
    got = _run(_draws(generator, seed, seq, off), case, shapes)
    for block in range(2):
        ints, f32, f64, n32, n64 = _expected(generator, seed, seq, off + block * 3)
        np.testing.assert_array_equal(got[0][block], np.array(ints, np.uint32))
        np.testing.assert_array_equal(got[1][block], np.array(f32, np.float32))
        np.testing.assert_array_equal(got[2][block], np.array(f64))
        np.testing.assert_allclose(got[3][block], n32, rtol=2e-6, atol=2e-6)
        np.testing.assert_allclose(got[4][block], n64, rtol=1e-13, atol=1e-13)
    assert np.all((got[1] > 0) & (got[1] <= 1)) and np.all((got[2] > 0) & (got[2] <= 1))


def test_philox_starts_with_random123s_known_answer():
    """Philox4x32-10 of counter 0 and key 0 (seed 0, subsequence 0, offset 0): Random123's vector."""
    assert ref.philox_block([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    pi = ref.philox_block([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0])
    assert pi == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]
    a = np.zeros((1, DRAWS), np.uint32)
    rest = [np.zeros((1, DRAWS), t) for t in (np.float32, np.float64, np.float32, np.float64)]
    tilecraft.compile(_draws("philox", 0, 0, 0, blocks=1), target="c")(a, *rest)
    assert list(a[0, :4]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_mrg32k3a_with_seed_zero_is_lecuyers_published_stream():
    """Seed 0 leaves all six words at 12345, L'Ecuyer's default, whose uniforms (scaled by RngStreams'
    1 / (m1 + 1) = 2.328306549295727688e-10) start 0.12701112204657714, 0.3185275653967945."""
    g = ref.Mrg32k3a(0, 0, 0)
    first = [g.raw() * 2.328306549295727688e-10 for _ in range(2)]
    assert first == pytest.approx([0.12701112204657714, 0.3185275653967945], rel=1e-15)
    c = np.zeros((1, DRAWS), np.float64)
    arrays = [np.zeros((1, DRAWS), t) for t in (np.uint32, np.float32)]
    tilecraft.compile(_draws("mrg32k3a", 0, 0, 0, blocks=1), target="c")(
        *arrays, c, np.zeros((1, DRAWS), np.float32), np.zeros((1, DRAWS))
    )
    g = ref.Mrg32k3a(0, 0, 0)
    [g.next() for _ in range(2 * DRAWS)]  # the uint32 and float32 draws come first
    assert c[0, 0] == ref.uniform_f64(g)


def per_thread(threads: int, blocks: int):
    """Each thread draws twice from subsequence tx + bx * threads (seq=None), the init inside a branch
    and across a barrier from the draws, the second draw by even threads only."""

    @T.prim_func
    def per_thread(A: T.Tensor((blocks, threads, 2), "uint32"), n: T.int32):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((threads,), "int32")
            if bx < n:
                T.rng_init(9, off=1, generator="curandStateXORWOW_t")
                s[tx] = 1
                T.cumsum(s, dim=0)
                A[bx, tx, 0] = T.rng_rand() + T.cast(s[threads - 1], "uint32") * 0
                if tx % 2 == 0:
                    A[bx, tx, 1] = T.rng_rand()

    return per_thread


def per_thread_expected(threads: int, blocks: int, n: int) -> np.ndarray:
    want = np.full((blocks, threads, 2), 7, np.uint32)
    for bx in range(min(n, blocks)):
        for tx in range(threads):
            g = ref.Xorwow(9, tx + bx * threads, 1)
            want[bx, tx, 0] = g.next()
            if tx % 2 == 0:
                want[bx, tx, 1] = g.next()
    return want


def test_threads_default_to_their_global_index_as_subsequence():
    """seq=None: thread tx of block bx draws subsequence tx + bx * threads, also across a barrier and
    inside a branch, and only the threads that draw advance their generator."""
    a = np.full((3, 5, 2), 7, np.uint32)
    tilecraft.compile(per_thread(5, 3), target="c")(a, 2)
    np.testing.assert_array_equal(a, per_thread_expected(5, 3, 2))


def test_the_ir_prints_and_parses_back():
    assert "rng_init" in assert_roundtrip(_draws("mrg32k3a", 1, 2, 3))


def test_tc_rng_constants_are_derived():
    """The minimal polynomial of XORWOW, x^(2^67) mod it, and MRG32k3a's A1^(2^76), A2^(2^76)."""
    text = RNG.read_text()
    p = ref.xorwow_polynomial()
    assert p.bit_length() == 161

    def words(name: str) -> list[int]:
        found = re.search(rf"{name}\[\d\] = \{{([^}}]*)\}}", text)
        return [int(w.strip().rstrip("u"), 0) for w in found.group(1).split(",")]

    as_words = lambda x: [(x >> (32 * i)) & ref.M32 for i in range(5)]  # noqa: E731
    assert words("p") == as_words(p & ((1 << 160) - 1))
    assert words("x67") == as_words(ref.poly_pow_x(2**67, p))
    flat = lambda m: [x for row in m for x in row]  # noqa: E731
    assert words("a1p76") == flat(ref.mat_pow(ref.A1, 2**76, ref.M1))
    assert words("a2p76") == flat(ref.mat_pow(ref.A2, 2**76, ref.M2))


def test_misuse_is_refused_at_its_line():
    with pytest.raises(ParseError, match="none came before it in this kernel"):

        @T.prim_func
        def no_init(A: T.Tensor((4,), "uint32")):
            with T.Kernel(1, threads=1):
                A[0] = T.rng_rand()

    with pytest.raises(ParseError, match="unknown generator 'curandStateSobol32_t'"):

        @T.prim_func
        def sobol(A: T.Tensor((4,), "uint32")):
            with T.Kernel(1, threads=1):
                T.rng_init(1, generator="curandStateSobol32_t")

    with pytest.raises(ParseError, match="bit must be 32 or 64"):

        @T.prim_func
        def half(A: T.Tensor((4,), "float16")):
            with T.Kernel(1, threads=1):
                T.rng_init(1)
                A[0] = T.rng_rand_float(bit=16)


def _bits(generator: str):
    @T.prim_func
    def bits(A: T.Tensor((4,), "uint32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4):
            T.rng_init(1, generator=generator)
            A[T.get_thread_binding()] = T.rng_rand()
            B[T.get_thread_binding()] = T.rng_rand_float(dist="normal")

    return bits


def test_targets_without_the_generators_refuse_them():
    with pytest.raises(LoweringError, match="T.rng_init is not supported on the WebGPU target"):
        tilecraft.lower(_bits("philox"), target=WEBGPU)
    with pytest.raises(LoweringError, match=r"float64 values: WGSL's float64 has only"):
        tilecraft.lower(_draws("philox", 1, 0, 0), target=WEBGPU)
    metal = "metal -family=apple8"
    with pytest.raises(LoweringError, match=r"T.rng_init \(mrg32k3a\) computes in float64, but Metal has no"):
        tilecraft.lower(_bits("mrg32k3a"), target=metal)
    source = tilecraft.lower(_bits("xorwow"), target=metal).source("metal-source")
    assert "tc_rng_init_xorwow(" in source and "#define TC_PRIVATE thread" in source


def test_cuda_source_compiles(tmp_path):
    for generator in CURAND_NAMES:
        source = assert_nvcc_compiles(_draws(generator, 1, 2, 3), tmp_path)
        assert f"tc_rng_init_{generator}(" in source and "__sincosf" in source
