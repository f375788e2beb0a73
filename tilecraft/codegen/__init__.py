"""Source-printing helpers shared by backends that emit C-family code."""
