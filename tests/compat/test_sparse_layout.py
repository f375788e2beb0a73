"""`tilelang.cuda.intrinsics.sparse_layout` (what TileLang's gemm_sp example and tests import) under the
import hook: the 2:4 group table and the metadata factor T.gemm_sp reads its E with."""

from __future__ import annotations

import tilecraft.language as T
from tilecraft.compat import hook


def test_the_group_table_and_metadata_factors_are_tilelangs():
    hook.install()
    try:
        from tilelang.cuda.intrinsics.sparse_layout import GROUP_CONFIG, get_e_factor, get_e_replicate_factor
    finally:
        hook.uninstall()
    assert GROUP_CONFIG[T.float] == (1, 2) and GROUP_CONFIG[T.float8_e4m3] == (2, 4)
    assert {str(d) for d in GROUP_CONFIG} == {"float32", "float16", "bfloat16", "int8", "uint8",
                                              "float8_e4m3fn", "float8_e5m2"}  # fmt: skip
    factors = [get_e_factor(a, e) for a, e in ((T.float16, T.int16), (T.int8, T.int32), (T.bfloat16, T.int8),
                                               (T.float32, T.int16))]  # fmt: skip
    assert factors == [16, 32, 8, 8]
    assert (get_e_replicate_factor(T.int8), get_e_replicate_factor(T.float16)) == (1, 2)
