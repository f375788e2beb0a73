"""The built-in backend packages, imported lazily by the backend registry on its first lookup.

This is the only module of shared code allowed to name built-in backends (the boundary test in
tests/backend/test_boundaries.py exempts it). A package listed here that does not exist yet is skipped.
"""

BUILTIN_BACKEND_PACKAGES: tuple[str, ...] = ("tilecraft.cuda", "tilecraft.opencl", "tilecraft.cpu")
