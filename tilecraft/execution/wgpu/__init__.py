"""The `wgpu` execution backend: WGSL compute pipelines on a WebGPU adapter through wgpu-py.

Host arrays are copied to storage buffers for each call and back afterwards, so a call behaves like a
host function call. Importing this package imports nothing else (wgpu included); `spec` is cheap, the
rest loads on first use.
"""
