"""What one element of an elementwise HLO op costs in XLA's GPU cost model: the clock cycles XLA
measured per element on an sm_86 GPU (its default profile, which XProf's op profile uses for
every GPU), counted as FLOPs; 3 for an op it did not measure (an add, a compare, a convert...)."""

from __future__ import annotations

# Ops computed element by element: a fusion recomputes them for each user that is not one.
ELEMENTWISE = frozenset({
    "abs", "add", "and", "atan2", "bitcast-convert", "cbrt", "ceil", "clamp", "clz", "compare", "complex", "convert",
    "copy", "cosine", "divide", "erf", "exponential", "exponential-minus-one", "floor", "imag", "is-finite", "log",
    "log-plus-one", "logistic", "map", "maximum", "minimum", "multiply", "negate", "not", "or", "popcnt", "power",
    "real", "reduce-precision", "remainder", "round-nearest-afz", "round-nearest-even", "rsqrt", "select",
    "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "stochastic-convert",
    "subtract", "tan", "tanh", "xor"})
# Of those, the ones priced per element (a copy moves data; a map is priced by what it applies).
PRICED = ELEMENTWISE - {"copy", "map"}
# Those XLA's target-free model counts as transcendentals, apart from FLOPs.
TRANSCENDENTAL = frozenset({"exponential", "log", "logistic", "power", "sqrt", "cbrt", "rsqrt", "tanh", "sine",
                            "cosine", "exponential-minus-one", "log-plus-one", "atan2", "tan"})
DEFAULT = 3

_F16, _F32, _F64, _C64, _C128 = 10, 11, 12, 15, 18
# (opcode, xla.PrimitiveType) -> cycles per element, sm_86 (XLA's GPU op profiles).
_CYCLES = {
    **{(op, _F16): c for op, c in (("cbrt", 925), ("cosine", 691), ("exponential", 108),
                                   ("exponential-minus-one", 396), ("log", 266), ("log-plus-one", 284),
                                   ("logistic", 226), ("rsqrt", 97), ("sqrt", 97), ("tanh", 212), ("atan2", 482),
                                   ("power", 975))},
    **{(op, _F32): c for op, c in (("cbrt", 867), ("cosine", 662), ("exponential", 86),
                                   ("exponential-minus-one", 381), ("log", 244), ("log-plus-one", 262),
                                   ("logistic", 176), ("rsqrt", 75), ("sine", 662), ("sqrt", 75), ("tanh", 190),
                                   ("atan2", 486), ("power", 925))},
    **{(op, _F64): c for op, c in (("cbrt", 6339), ("cosine", 1717), ("exponential", 1652),
                                   ("exponential-minus-one", 1900), ("log", 608), ("log-plus-one", 2073),
                                   ("logistic", 2412), ("rsqrt", 698), ("sine", 1789), ("sqrt", 986),
                                   ("tanh", 1609), ("add", 97), ("atan2", 3747), ("divide", 2016),
                                   ("multiply", 97), ("power", 5511), ("subtract", 97))},
    **{(op, _C64): c for op, c in (("exponential", 1360), ("exponential-minus-one", 1400), ("log", 950),
                                   ("log-plus-one", 842), ("rsqrt", 2383), ("sqrt", 3193), ("atan2", 5353),
                                   ("divide", 687), ("power", 3351))},
    **{(op, _C128): c for op, c in (("cosine", 6613), ("exponential", 4028), ("exponential-minus-one", 4161),
                                    ("log", 7599), ("log-plus-one", 6962), ("rsqrt", 11318), ("sine", 5878),
                                    ("sqrt", 15606), ("tanh", 9939), ("add", 97), ("atan2", 39027),
                                    ("divide", 7941), ("multiply", 270), ("power", 18205), ("subtract", 97))},
    # Integers: S8, S16, S32, S64, U8, U16, U32, U64.
    ("divide", 2): 370, ("power", 2): 392, ("divide", 3): 367, ("power", 3): 396, ("divide", 4): 306,
    ("divide", 5): 918, ("power", 5): 601, ("divide", 6): 306, ("power", 6): 388, ("divide", 7): 302,
    ("power", 7): 399, ("divide", 8): 115, ("divide", 9): 838, ("power", 9): 604,
}


def flops_per_element(opcode: str, element_type: int) -> int:
    return _CYCLES.get((opcode, element_type), DEFAULT)
