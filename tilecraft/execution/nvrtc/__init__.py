"""The `nvrtc` execution backend: Build compiles CUDA source with NVRTC, in process, to a cubin
(compiler.py); Load and Launch are the shared CUDA driver runtime's (tilecraft/execution/cuda_driver).
Importing this package imports nothing else; `spec` is cheap, the rest loads on first use.
"""
