"""The CuTe DSL variant's target: kind `cuda` itself, not a kind of its own.

A variant shares its kind's rules (attributes, normalizer, detector, examples): `cuda -arch=sm_90a
-backend=cutedsl` is the same GPU as `cuda -arch=sm_90a`, handled by this backend instead of the cuda
one. TileLang spells it `target="cutedsl"`, which is registered here as a variant spelling, so
`"cutedsl -arch=sm_90a"` parses to `cuda -arch=sm_90a -backend=cutedsl`.
"""

from __future__ import annotations

import tilecraft.cuda  # noqa: F401 - registers kind cuda, whose targets this variant takes
from tilecraft.backend.target_kind import register_target_variant
from tilecraft.cuda.target import KIND

VARIANT = "cutedsl"

register_target_variant(VARIANT, KIND)
