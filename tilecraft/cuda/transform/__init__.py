"""Passes only the CUDA pipeline runs."""
