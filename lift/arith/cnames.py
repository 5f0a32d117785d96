"""Names that may reach OpenCL C: C's and OpenCL C's reserved words and built-ins, and the check
that a name a user gives (a `Size`, a user function's name) is a plain C identifier that none of
them shadows.

    size_name_problem("N") -> None;  size_name_problem("N+1") -> "is not a C identifier ..."
"""

from __future__ import annotations

import re

_C_KEYWORDS = """
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
_Bool _Complex _Imaginary bool true false half uchar ushort uint ulong size_t ptrdiff_t intptr_t uintptr_t
void event_t sampler_t image1d_t image2d_t image3d_t image1d_array_t image2d_array_t image1d_buffer_t
kernel __kernel global __global local __local constant __constant private __private generic __generic
read_only write_only read_write __read_only __write_only __read_write uniform pipe complex imaginary
quad vec_type_hint work_group_size_hint reqd_work_group_size attribute __attribute__ packed aligned
"""
_C_BUILTINS = """
sqrt exp exp2 exp10 log log2 log10 sin cos tan sinh cosh tanh asin acos atan atan2 pow pown powr rootn
fabs floor ceil trunc round rint fmod erf erfc isnan isinf isfinite copysign hypot expm1 log1p cbrt
fmin fmax min max abs clamp mix sign select dot cross length normalize mad fma
distance fast_distance fast_length fast_normalize degrees radians step smoothstep rsqrt fract fdim
asinh acosh atanh asinpi acospi atanpi atan2pi sinpi cospi tanpi sincos tgamma lgamma ldexp frexp ilogb
logb modf nan nextafter remainder remquo maxmag minmag bitselect shuffle shuffle2 any all isequal
isnotequal isgreater isgreaterequal isless islessequal isordered isunordered signbit rotate popcount
clz mul24 mad24 mul_hi mad_hi add_sat sub_sat hadd rhadd upsample abs_diff vload vstore
get_global_id get_local_id get_group_id get_global_size get_local_size get_num_groups barrier
INFINITY NAN HUGE_VALF MAXFLOAT M_PI M_PI_F M_E M_E_F NULL printf
"""
_VECTOR_BASES = "char uchar short ushort int uint long ulong float double half bool".split()

C_RESERVED: frozenset[str] = frozenset(
    _C_KEYWORDS.split()
    + _C_BUILTINS.split()
    + [f"{b}{n}" for b in _VECTOR_BASES for n in (2, 3, 4, 8, 16)]
    + [f"convert_{b}{n}" for b in _VECTOR_BASES for n in ("", 2, 3, 4, 8, 16)]
    + [f"as_{b}{n}" for b in _VECTOR_BASES for n in ("", 2, 3, 4, 8, 16)]  # reinterpretations: macros
)
C_BUILTINS: frozenset[str] = frozenset(_C_BUILTINS.split())  # the functions and constants above

_TYPES = "char uchar short ushort int uint long ulong float double half".split()
_ROUNDING = ("", "_rte", "_rtz", "_rtp", "_rtn")
# OpenCL C's built-in functions whose names are families (atomics, vector loads, conversions): a kernel,
# a user function or a variable liftcl names must not take one of them.
OPENCL_FUNCTIONS: frozenset[str] = frozenset(
    [f"{p}_{op}" for p in ("atomic", "atom") for op in "add sub xchg inc dec cmpxchg min max and or xor".split()]
    + [f"{f}{n}" for f in ("vload", "vstore", "vload_half", "vstore_half", "vloada_half", "vstorea_half")
       for n in ("", 2, 3, 4, 8, 16)]
    + [f"as_{t}{n}" for t in _TYPES for n in ("", 2, 3, 4, 8, 16)]
    + [f"convert_{t}{n}{sat}{r}" for t in _TYPES for n in ("", 2, 3, 4, 8, 16) for sat in ("", "_sat")
       for r in _ROUNDING]
    + [f"native_{f}" for f in "cos divide exp exp2 exp10 log log2 log10 powr recip rsqrt sin sqrt tan".split()]
    + [f"half_{f}" for f in "cos divide exp exp2 exp10 log log2 log10 powr recip rsqrt sin sqrt tan".split()]
    + "async_work_group_copy async_work_group_strided_copy wait_group_events prefetch mem_fence read_mem_fence "
      "write_mem_fence get_work_dim get_global_offset get_enqueued_local_size get_global_linear_id "
      "get_local_linear_id work_group_barrier work_group_reduce_add work_group_broadcast sub_group_barrier "
      "read_imagef write_imagef".split())

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_c_identifier(name: str) -> bool:
    """True when `name` is an ASCII C identifier that is not an OpenCL C reserved word, builtin or struct name."""
    reserved = name in C_RESERVED or name.startswith(("__", "Tuple_"))  # Tuple_*: struct names
    return bool(_IDENT.match(name)) and not reserved


# OpenCL C's built-in families (the functions and macros a kernel may call or use), by prefix.
_BUILTIN_PREFIXES = ("get_", "atomic_", "atom_", "vload", "vstore", "as_", "convert_", "native_", "half_",
                     "async_", "wait_group", "prefetch", "work_group_", "sub_group_", "mem_fence", "read_mem",
                     "write_mem", "read_image", "write_image", "CLK_", "FLT_", "DBL_", "LIFT_")
_MORE_BUILTINS = frozenset("""
    mad24 mul24 mad_hi mul_hi rotate upsample popcount clz ctz add_sat sub_sat hadd rhadd abs_diff
    acosh asinh atanh acospi asinpi atanpi atan2pi cospi sinpi tanpi fdim frexp ldexp lgamma lgamma_r
    logb ilogb modf nan nextafter remainder remquo rsqrt sincos tgamma degrees radians step smoothstep
    distance fast_distance fast_length fast_normalize isequal isnotequal isgreater isgreaterequal isless
    islessequal islessgreater isordered isunordered isnormal signbit any all bitselect shuffle shuffle2
    vec_step printf barrier fence main signed unsigned bool char int long float double
    INT_MAX INT_MIN UINT_MAX CHAR_BIT CHAR_MAX CHAR_MIN SCHAR_MAX SCHAR_MIN UCHAR_MAX SHRT_MAX SHRT_MIN
    USHRT_MAX LONG_MAX LONG_MIN ULONG_MAX FP_FAST_FMA FP_FAST_FMAF FP_ILOGB0 FP_ILOGBNAN MAXFLOAT HUGE_VAL
    M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI M_SQRT2 M_SQRT1_2 M_LOG2E_F
    M_LOG10E_F M_LN2_F M_LN10_F M_PI_2_F M_PI_4_F M_1_PI_F M_2_PI_F M_2_SQRTPI_F M_SQRT2_F M_SQRT1_2_F
    EOF __OPENCL_VERSION__ CL_VERSION_1_0 CL_VERSION_1_1 CL_VERSION_1_2 CL_VERSION_2_0 FLT_MAX FLT_MIN
    FLT_EPSILON DBL_MAX DBL_MIN DBL_EPSILON MAXFLOAT INFINITY NAN true false CLK_LOCAL_MEM_FENCE
    CLK_GLOBAL_MEM_FENCE CLK_IMAGE_MEM_FENCE FLT_DIG FLT_MANT_DIG FLT_MAX_EXP FLT_MIN_EXP FLT_RADIX DBL_DIG
""".split())
OPENCL_NAMES = _MORE_BUILTINS  # OpenCL C's other built-in functions, macros and constants


def size_name_problem(name: object) -> str | None:
    """Why `name` cannot name a size in OpenCL C (a kernel parameter `int name`), or None: it must be
    an ASCII C identifier that is no C or OpenCL C keyword, type, built-in function or macro."""
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a string"
    if not _IDENT.match(name):
        return "is not a C identifier (ASCII letters, digits and _, not starting with a digit)"
    if name in C_RESERVED or name in _MORE_BUILTINS or name.startswith(("__", "Tuple_")):
        return "is a C or OpenCL C keyword, type or built-in"
    if name.startswith(_BUILTIN_PREFIXES):
        return "starts like OpenCL C's built-in functions and macros"
    return None
