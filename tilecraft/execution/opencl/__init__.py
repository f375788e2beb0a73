"""The `opencl` execution backend: OpenCL C source -> pyopencl -> a program built for one OpenCL device.

Host arrays are copied to device buffers for each call and back afterwards, so a call behaves like a
host function call. Importing this package imports nothing else (pyopencl included); `spec` is cheap,
the rest loads on first use.
"""
