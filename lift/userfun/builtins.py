"""Built-in user functions, generic over scalar and vector types."""

from __future__ import annotations

from lift.userfun import user_fun

id = user_fun(lambda x: x, name="id")  # noqa: A001 - LIFT's name for the copy function
add = user_fun(lambda x, y: x + y, name="add")
sub = user_fun(lambda x, y: x - y, name="sub")
mult = user_fun(lambda x, y: x * y, name="mult")
div = user_fun(lambda x, y: x / y, name="div")
neg = user_fun(lambda x: -x, name="neg")
# NaN propagates, as numpy's np.maximum / np.minimum: `x != x` holds only for a NaN `x`, and a NaN
# `y` is never `< x` or `> x`, so either operand's NaN wins in any order (associative and
# commutative up to the sign of zero: on ties the second operand is kept).
max_ = user_fun(lambda x, y: x if x > y or x != x else y, name="max_")
min_ = user_fun(lambda x, y: x if x < y or x != x else y, name="min_")

OPERATORS = {"add": add, "sub": sub, "mult": mult, "div": div, "neg": neg}
