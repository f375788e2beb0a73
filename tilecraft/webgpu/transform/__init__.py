"""Passes of the WebGPU backend only."""
