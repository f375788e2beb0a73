"""CUDA instruction layouts: what mma.sync and wgmma impose on the fragments they read and write."""
