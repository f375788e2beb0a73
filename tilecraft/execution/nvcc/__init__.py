"""The `nvcc` execution backend: the CUDA target compiles eagerly with nvcc (toolchain.py) and the
artifact carries the cubin; Load and Launch are the shared CUDA driver runtime's
(tilecraft/execution/cuda_driver)."""
