"""TILECRAFT_BOUNDS_CHECK=1 turns the bounds checks on for every kernel compiled, on every target that
can check (it declares the pass config `tilecraft.bounds_check`); an out-of-bounds access is skipped and
the call raises OutOfBoundsError naming the buffer, the kernel line and the element offset. A target that
cannot check says so once and runs its kernels unchecked. The switch is part of the cache key."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft.language as T
from tilecraft import settings
from tilecraft.errors import OutOfBoundsError

N = 200
BAD_LINE = 24  # the line of the read past the end, below


def overrun():
    @T.prim_func
    def overrun(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), shift: T.int32):
        with T.Kernel(1, threads=32) as _:
            for i in T.serial(N):
                Y[i] = X[i + shift] * 2.0  # reads X[N] when shift is 1

    return overrun


def can_check(ctx) -> bool:
    return "tilecraft.bounds_check" in ctx.backend.pass_configs


def checked(kernel) -> bool:
    """Whether the kernel's own code (past the device header, which defines the check) checks."""
    source = kernel.get_kernel_source()
    return "tc_in_bounds(" in source[source.index("overrun_kernel") :]


def _compile(ctx, **options):
    from tests.conformance.test_conformance import compile_or_skip
    from tilecraft.jit import lower

    lower._warn_unchecked.cache_clear()  # said once per backend and process: clear it to see it here
    if can_check(ctx):
        return compile_or_skip(overrun(), ctx, **options)
    with pytest.warns(RuntimeWarning, match=f"backend '{ctx.backend.name}' cannot check buffer accesses"):
        return compile_or_skip(overrun(), ctx, **options)


def test_the_switch_checks_every_access_where_the_target_can(backend_ctx):
    backend = backend_ctx.execution_backend()
    with settings.override(TILECRAFT_BOUNDS_CHECK=True):
        kernel = _compile(backend_ctx)
    if not can_check(backend_ctx):
        return
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    y = backend.to_device(np.full(N, np.nan, np.float32))
    kernel(backend.to_device(x), y, 0)  # in bounds: no report, and nothing left over from an earlier call
    np.testing.assert_array_equal(backend.to_host(y), x * 2)
    with pytest.raises(OutOfBoundsError, match=rf"buffer X at {__file__}:{BAD_LINE}:\d+: Y\[i\] = X\[i \+ shift\]"
                       rf".* \(element offset {N}\)"):  # fmt: skip
        kernel(backend.to_device(x), y, 1)
    expected = np.append(x[1:] * 2, 0.0)  # the bad read was skipped (it gives 0), the rest ran
    np.testing.assert_array_equal(backend.to_host(y), expected)
    kernel(backend.to_device(x), y, 0)  # the record starts clean again
    np.testing.assert_array_equal(backend.to_host(y), x * 2)


def test_the_switch_is_part_of_the_cache_key(backend_ctx):
    if not can_check(backend_ctx):
        pytest.skip(f"{backend_ctx.backend.name} cannot check bounds")
    sources = []
    for on in (True, False, True):
        with settings.override(TILECRAFT_BOUNDS_CHECK=on):
            sources.append(checked(_compile(backend_ctx)))
    assert sources == [True, False, True]


def test_a_kernel_that_sets_the_pass_config_keeps_its_choice(backend_ctx):
    if not can_check(backend_ctx):
        pytest.skip(f"{backend_ctx.backend.name} cannot check bounds")
    with settings.override(TILECRAFT_BOUNDS_CHECK=True):
        kernel = _compile(backend_ctx, pass_configs={"tilecraft.bounds_check": False})
    assert not checked(kernel)
