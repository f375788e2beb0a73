"""TileLang's `tilelang.contrib` package, through the import hook: `tilelang.contrib.nvcc` is
`tilecraft.compat.contrib.nvcc` (compute-capability queries). TileLang's other contrib modules (its own
compiler drivers, cutedsl) have no counterpart; importing one is an error naming docs/compat.md."""
