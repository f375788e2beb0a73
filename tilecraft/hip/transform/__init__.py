"""Passes only the HIP pipeline runs."""
