"""The `nvrtc` execution backend: CUDA source -> NVRTC (in process) -> cubin -> the CUDA driver.

Also home of what both CUDA execution backends share: the driver binding (driver.py), loading and
launching a cubin (runtime.py, launch.py, grid.py) and GPU array interop (interop.py). Importing this
package imports nothing else; `spec` is cheap, the rest loads on first use.
"""
