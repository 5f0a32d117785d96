"""liftcl: a LIFT-style functional rewriting compiler from Python array programs to OpenCL.

    N = Size("N")
    dot = fun([Array(Float, N), Array(Float, N)],
              lambda x, y: reduce(add, 0.0) << map(mult) << zip(x, y))
    lift.interpret(dot, x, y)
"""

from lift import devices, explore, rewrites
from lift.compile import compile
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
)
from lift.explore import TuneResult, tune
from lift.interpret import interpret
from lift.ir.nodes import Expr, FunDecl, Lambda, Param
from lift.ir.patterns import (
    as_scalar,
    as_vector,
    fun,
    get,
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
from lift.userfun import user_fun
from lift.userfun.builtins import add, id, max_, min_, mult

__version__ = "0.1.0"

__all__ = [
    "Float", "Double", "Int", "Bool", "Array", "Tuple", "Vector", "Size", "Type",
    "fun", "user_fun", "id", "add", "mult", "max_", "min_",
    "map", "reduce", "zip", "get", "split", "join", "slide", "pad", "transpose", "transpose_w",
    "let", "value", "iterate", "map_nd", "zip_nd", "split_nd", "join_nd", "slide_nd", "pad_nd",
    "transpose_nd", "take", "map_glb", "map_wrg", "map_lcl", "map_seq", "reduce_seq",
    "to_global", "to_local", "to_private", "as_vector", "as_scalar", "vectorise", "ocl_kernel",
    "typecheck", "interpret", "size_conditions", "compile", "Program", "devices", "tune", "TuneResult",
    "rewrites", "explore", "Expr", "FunDecl", "Lambda", "Param",
    "LiftError", "LiftTypeError", "LiftValueError", "RewriteError", "UnsatisfiableError",
    "NotSynchronisableError", "UserFunError", "DeviceError", "UnsupportedError",
    "LiftWarning", "RewritePointSkipped", "MappingFallback", "DeviceSkipped",
]
