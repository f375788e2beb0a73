"""`T.annotate_safe_value` on a SIMT target (HIP, gfx942) in the CPU emulator: the T.Parallel nest and
the T.copy into a shared tile or a fragment read the safe value past the tensor's edge."""

from __future__ import annotations

import numpy as np
import pytest

from tests.hip.test_emulated_language_features import hip, run  # noqa: F401 - the fixture
from tests.language import test_safe_value as safe

RNG = np.random.default_rng(33)


@pytest.mark.parametrize("how", ["nest", "shared", "fragment"])
def test_loads_above_the_tensor_read_the_safe_value(hip, how):  # noqa: F811
    m, n = 77, 45
    a = RNG.standard_normal((m, n)).astype(np.float32)
    b = safe.poisoned((m, n), np.float32)
    run(hip, safe.shifted_tiles(m, n, 32, 10.5, how), a, b)
    np.testing.assert_array_equal(b, safe.reference(a, np.float32(10.5)))
