"""Source-printing helpers shared by backends that emit C-family code (the CPU's C, CUDA C++)."""
