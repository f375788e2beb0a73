"""Passes shared by the SIMT targets (a block of threads per work-group): tile ops and T.Parallel
nests lowered to per-thread code over inferred layouts, cross-thread reductions, atomics and barrier
insertion. Each backend plugs in its op table, its strict layouts and its own statements' accesses."""
