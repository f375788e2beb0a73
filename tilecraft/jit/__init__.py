"""Compile and JIT entry points, the Kernel object and array interop."""
