"""Integer arithmetic analysis: interval bounds, canonical simplification and proofs.

For example `simplify((i * 8 + j) // 8, {j: (0, 7)})` gives `i`, and
`bound(i * 4 + j, {i: (0, 31), j: (0, 3)})` gives `Interval[0, 127]`.
"""

from tilecraft.ir.arith.analyzer import Analyzer, assumed_divisible, can_prove, simplify
from tilecraft.ir.arith.bounds import bound, dtype_interval
from tilecraft.ir.arith.interval import Interval

__all__ = ["Analyzer", "Interval", "assumed_divisible", "bound", "can_prove", "dtype_interval", "simplify"]
