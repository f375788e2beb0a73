"""With bounds checks on (TILECRAFT_BOUNDS_CHECK=1 or the pass config tilecraft.bounds_check), every
conformance kernel's CUDA still compiles with nvcc, and each checked access is numbered with its kernel
line in the launch metadata the runtime reports from (no GPU needed; tests/conformance/
test_bounds_check_switch.py runs the checks on a GPU)."""

from __future__ import annotations

import pytest

import tilecraft
from tilecraft import settings
from tilecraft.errors import LoweringError, ToolchainError
from tilecraft.testing.conformance.cases import CASES


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_checked_cuda_compiles(nvcc, case, arch, tmp_path):
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    try:
        with settings.override(TILECRAFT_BOUNDS_CHECK=True):
            artifact = tilecraft.lower(case.build(), target=f"cuda -arch={arch}", execution_backend="nvrtc")
    except LoweringError as err:
        pytest.skip(f"not supported on CUDA: {err.message}")
    source = artifact.source("cuda-source")
    sites = [site for info in artifact.kernels for site in info.bounds_sites]
    assert source.startswith("#define TC_BOUNDS_CHECK 1") == bool(sites)
    # every check printed names one of the kernel's sites (a printer may number an access it then prints
    # another way, which leaves a site unused; a load inside an index is printed, with its check, twice)
    printed = checked_site_numbers(source)
    assert not sites or (printed and printed <= set(range(1, len(sites) + 1)))
    assert all(site.startswith("buffer ") and " at " in site for site in sites)
    try:
        cubin = compile_cubin(source, arch, keep_dir=tmp_path)
    except ToolchainError as err:
        pytest.fail(f"nvcc rejected the checked source of {case.name} for {arch}:\n{err}")
    assert cubin[:4] == b"\x7fELF"


def checked_site_numbers(source: str) -> set[int]:
    """The site number (the last argument) of every `tc_in_bounds(...)` call in the kernel's body."""
    numbers = set()
    body = source[source.find('extern "C"'):]
    start = body.find("tc_in_bounds(")
    while start >= 0:
        depth, end = 0, start + len("tc_in_bounds")
        while True:
            depth += {"(": 1, ")": -1}.get(body[end], 0)
            if depth == 0:
                break
            end += 1
        numbers.add(int(body[start:end].rsplit(",", 1)[1]))
        start = body.find("tc_in_bounds(", start + 1)
    return numbers
