"""The `nvcc` execution backend: the CUDA target compiles eagerly with nvcc (toolchain.py) and the
artifact carries the cubin; loading and launching are shared with the `nvrtc` execution backend."""
