"""Passes only the CPU pipeline runs."""
