"""tilecraft: a tile-level kernel language with a pure-Python compiler and pluggable backends."""
__version__ = "0.1.0"
