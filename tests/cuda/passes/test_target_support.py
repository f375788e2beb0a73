"""check-target-support (CUDA), Before/Expected: a kernel the backend lowers passes through unchanged; an
arch or a shared-memory budget it cannot meet stops lowering with the reason."""

from __future__ import annotations

import pytest

from tests.cuda.passes.kernels import staged
from tests.transform.helpers import SM80
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import UNCHANGED, assert_pass, pass_test, run_pass


@pass_test("check-target-support", SM80)
def test_a_kernel_the_backend_lowers_passes_unchanged(target):
    """sm_80 and 512 bytes of shared memory: nothing to refuse, nothing changed."""
    assert_pass(target, "check-target-support", staged, UNCHANGED)


def test_an_arch_before_sm_80_is_refused():
    with pytest.raises(LoweringError, match="needs sm_80 or newer"):
        run_pass("cuda -arch=sm_75", "check-target-support", staged)


def test_shared_memory_past_the_block_budget_is_refused_at_the_allocation():
    with pytest.raises(LoweringError, match="needs 512 bytes of shared memory per block") as info:
        run_pass("cuda -arch=sm_80 -max_shared_memory_per_block_optin=256", "check-target-support", staged)
    assert 's = T.alloc_shared((128,), "float32")' in str(info.value)
