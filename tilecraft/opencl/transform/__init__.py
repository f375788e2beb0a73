"""Passes only the OpenCL pipeline runs."""
