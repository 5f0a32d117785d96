"""liftcl: a LIFT-style functional rewriting compiler from Python array programs to OpenCL.

    N = Size("N")
    dot = fun([Array(Float, N), Array(Float, N)],
              lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y))
    lift.interpret(dot, x, y)
"""

from typing import Any

from lift import devices, explore, rewrites
from lift.arrays import DeviceArray, from_dlpack, to_device
from lift.choices import Choices
from lift.compile import compile
from lift.comprehension import tc
from lift.errors import (
    DeviceError,
    DeviceSkipped,
    LiftError,
    LiftTypeError,
    LiftValueError,
    LiftWarning,
    MappingFallback,
    NotSynchronisableError,
    RewriteError,
    RewritePointSkipped,
    UnsatisfiableError,
    UnsupportedError,
    UserFunError,
    UserFunGlobalChanged,
)
from lift.explore import TuneResult, tune
from lift.explore.many import tune_all
from lift.gather import gather
from lift.interpret import interpret
from lift.ir.nodes import Expr, FunDecl, Lambda, Param
from lift.ir.patterns import (
    as_scalar,
    as_vector,
    fun,
    get,
    iota,
    iterate,
    join,
    join_nd,
    let,
    map,
    map_glb,
    map_lcl,
    map_nd,
    map_seq,
    map_wrg,
    ocl_kernel,
    pad,
    pad_nd,
    reduce,
    reduce_atomic,
    reduce_seq,
    slide,
    slide_nd,
    split,
    split_nd,
    take,
    to_global,
    to_local,
    to_private,
    transpose,
    transpose_nd,
    transpose_w,
    value,
    vectorise,
    zip,
    zip_nd,
)
from lift.program import Program
from lift.typecheck import size_conditions, typecheck
from lift.types import Array, Bool, Double, Float, Int, Size, Tuple, Type, Vector
from lift.userfun import select, user_fun
from lift.userfun.builtins import add, id, max_, min_, mult
from lift.version import __version__ as __version__

# Public submodules imported on first use (`lift.constraints.mapping_space(...)` after a bare
# `import lift`): `lift.testing` imports hypothesis, `lift.constraints` the z3 models. They are not
# in `__all__`, so `from lift import *` stays cheap.
_LAZY = ("constraints", "testing", "rules")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"lift.{name}")
    raise AttributeError(f"module 'lift' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "Float", "Double", "Int", "Bool", "Array", "Tuple", "Vector", "Size", "Type",
    "fun", "user_fun", "select", "id", "add", "mult", "max_", "min_",
    "map", "reduce", "zip", "gather", "get", "iota", "split", "join", "slide", "pad", "transpose", "transpose_w",
    "let", "value", "iterate", "map_nd", "zip_nd", "split_nd", "join_nd", "slide_nd", "pad_nd",
    "transpose_nd", "take", "map_glb", "map_wrg", "map_lcl", "map_seq", "reduce_seq",
    "reduce_atomic", "to_global", "to_local", "to_private", "as_vector", "as_scalar", "vectorise", "ocl_kernel",
    "DeviceArray", "to_device", "from_dlpack",
    "typecheck", "interpret", "size_conditions", "compile", "tc", "Choices", "Program", "devices", "tune", "TuneResult",
    "tune_all",
    "rewrites", "explore", "rules", "Expr", "FunDecl", "Lambda", "Param",
    "LiftError", "LiftTypeError", "LiftValueError", "RewriteError", "UnsatisfiableError",
    "NotSynchronisableError", "UserFunError", "DeviceError", "UnsupportedError",
    "LiftWarning", "RewritePointSkipped", "MappingFallback", "DeviceSkipped", "UserFunGlobalChanged",
]
