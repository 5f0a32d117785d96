"""Symbolic integer arithmetic: sizes and indices in canonical, range-aware form."""

from lift.arith.convert import C_HELPERS, range_constraints_z3, to_c, to_z3
from lift.arith.expr import (
    Arith,
    ArithLike,
    Cst,
    ExactDiv,
    FloorDiv,
    Max,
    Min,
    Mod,
    Prod,
    Sum,
    Var,
    add,
    as_arith,
    exact_div,
    floordiv,
    max_,
    min_,
    mod,
    mul,
    size,
)
from lift.arith.ops import evaluate, free_vars, substitute, try_evaluate
from lift.arith.ranges import (
    lower,
    prove_divides,
    prove_eq,
    prove_le,
    prove_lt,
    prove_nonneg,
    prove_positive,
    upper,
)

__all__ = [
    "Arith", "ArithLike", "Cst", "Var", "Sum", "Prod", "FloorDiv", "ExactDiv", "Mod", "Min", "Max",
    "add", "mul", "floordiv", "exact_div", "mod", "min_", "max_", "as_arith", "size",
    "evaluate", "try_evaluate", "free_vars", "substitute",
    "lower", "upper", "prove_nonneg", "prove_positive", "prove_le", "prove_lt", "prove_eq",
    "prove_divides", "to_c", "to_z3", "range_constraints_z3", "C_HELPERS",
]
