"""`tilecraft.carver.template.MatmulTemplate` (TileLang's GEMM autotune examples build their configs
from it): tilings that fit the device, ranked sensibly, and an equivalent kernel that computes the
template."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.carver.arch import CDNA, CUDA
from tilecraft.carver.roller import Hint
from tilecraft.carver.roller.rasterization import NoRasterization, Rasterization2DColumn
from tilecraft.carver.template import MatmulTemplate

H100 = "cuda -arch=sm_90a -sm_count=132"
A100 = "cuda -arch=sm_80 -sm_count=108"
A6000 = "cuda -arch=sm_86 -sm_count=84"


def template(M, N, K, **kw):
    kw = {"in_dtype": T.float16, "out_dtype": T.float16, "accum_dtype": T.float32, **kw}
    return MatmulTemplate(M=M, N=N, K=K, **kw)


@pytest.mark.parametrize("target", [H100, A100, A6000])
@pytest.mark.parametrize(
    "shape", [(4096, 4096, 4096), (1000, 1000, 1000), (128, 4096, 4096), (8192, 64, 1024)]
)
def test_every_hint_fits_the_device(target, shape):
    arch = CUDA(target)
    hints = template(*shape).with_arch(arch).recommend_hints(topk=20)
    assert 1 <= len(hints) <= 20 and all(isinstance(h, Hint) for h in hints)
    for h in hints:
        (bm, bn), (wm, wn), (bk,) = h.block, h.warp, h.rstep
        assert bm % wm == 0 and bn % wn == 0 and wm % 16 == 0 and wn % 16 == 0 and bk % 16 == 0
        assert h.threads == (bm // wm) * (bn // wn) * 32 <= 1024
        assert h.pipeline_stage == 2 and h.use_async  # cp.async on sm_80+
        assert h.pipeline_stage * (bm + bn) * bk * 2 <= arch.smem_cap
        # no tile is much larger than the problem
        assert bm <= max(16, 1 << (shape[0] - 1).bit_length()) and bn <= max(
            16, 1 << (shape[1] - 1).bit_length()
        )
    times = [h.estimated_ms for h in hints]
    assert times == sorted(times)


def test_a_large_gemm_gets_large_tiles_and_a_panel_order():
    hints = template(4096, 4096, 4096).with_arch(CUDA(H100)).recommend_hints(topk=5)
    best = hints[0]
    assert best.block[0] * best.block[1] >= 128 * 128 and best.warp == [64, 64]
    # A and B (64 MiB) do not fit in H100's 50 MiB L2: panels of sqrt(132) = 11 columns
    assert (
        isinstance(best.rasterization_plan, Rasterization2DColumn)
        and best.rasterization_plan.panel_width == 11
    )


def test_a_gemm_that_fits_in_l2_is_not_rasterized_and_fills_the_device():
    arch = CUDA(H100)
    best = template(1024, 1024, 1024).with_arch(arch).recommend_hints(topk=1)[0]
    assert isinstance(best.rasterization_plan, NoRasterization)
    tiles = math.ceil(1024 / best.block[0]) * math.ceil(1024 / best.block[1])
    assert tiles <= arch.compute_max_core  # one wave


def test_a_smaller_shared_memory_gets_shorter_steps():
    big = template(4096, 4096, 4096).with_arch(CUDA(H100)).recommend_hints(topk=1)[0]
    small = template(4096, 4096, 4096).with_arch(CUDA(A6000)).recommend_hints(topk=1)[0]
    assert small.smem_bytes <= CUDA(A6000).smem_cap < big.smem_bytes


def test_a_wavefront_device_counts_64_lanes():
    hints = template(4096, 4096, 4096).with_arch(CDNA("hip -arch=gfx942")).recommend_hints(topk=5)
    for h in hints:
        assert h.threads == (h.block[0] // h.warp[0]) * (h.block[1] // h.warp[1]) * 64


def test_the_example_reads_its_configs_from_the_hints():
    """What TileLang's example_gemm_autotune.get_configs(with_roller=True) does with the hints."""
    hints = template(512, 512, 512).with_arch(CUDA(A100)).recommend_hints(topk=4)
    for hint in hints:
        block_m, block_n = hint.block
        warp_m, warp_n = hint.warp
        config = {
            "block_M": block_m,
            "block_N": block_n,
            "block_K": hint.rstep[0],
            "num_stages": hint.pipeline_stage if hint.pipeline_stage > 1 else 0,
            "thread_num": (block_m // warp_m) * (block_n // warp_n) * 32,
        }
        assert config["thread_num"] == hint.threads and config["num_stages"] == 2
    assert "block" in hints[0].to_dict() and "warp" in hints[0].to_dict()


@pytest.mark.parametrize(
    "kw",
    [{}, {"trans_B": False, "with_bias": True, "out_dtype": T.float32}, {"trans_A": True, "trans_B": False}],
)
def test_the_equivalent_function_computes_the_template(kw):
    M, N, K = 100, 72, 40
    t = template(M, N, K, **kw)
    kernel = tilecraft.compile(t.equivalent_function(), target="c")
    rng = np.random.default_rng(len(kw))
    a = rng.standard_normal((K, M) if t.trans_A else (M, K)).astype(np.float16)
    b = rng.standard_normal((N, K) if t.trans_B else (K, N)).astype(np.float16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = (a64.T if t.trans_A else a64) @ (b64.T if t.trans_B else b64)
    c = np.full((M, N), np.nan, np.dtype(t.out_dtype))
    if t.with_bias:
        bias = rng.standard_normal(N).astype(np.float32)
        kernel(a, b, bias, c)
        ref = ref + bias
    else:
        kernel(a, b, c)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


def test_errors_say_what_to_do():
    with pytest.raises(ValueError, match=r"call \.with_arch\(model\) with a device model"):
        template(64, 64, 64).recommend_hints()
    with pytest.raises(ValueError, match="M must be a positive int"):
        MatmulTemplate(M=0, N=4, K=4)
    with pytest.raises(TypeError, match="device model"):
        template(64, 64, 64).with_arch("cuda")
    import tilecraft.carver.template as templates

    with pytest.raises(AttributeError, match="only MatmulTemplate is provided"):
        templates.GEMVTemplate  # noqa: B018


def test_tilelangs_import_paths(tmp_path):
    from tilecraft.compat import hook

    hook.install()
    try:
        from tilelang.carver.roller.rasterization import NoRasterization as NoRaster
        from tilelang.carver.template import MatmulTemplate as Template

        assert Template is MatmulTemplate and NoRaster is NoRasterization
    finally:
        hook.uninstall()
