"""Built-in user functions, generic over scalar and vector types."""

from __future__ import annotations

from lift.userfun import user_fun

id = user_fun(lambda x: x, name="id")  # noqa: A001 - LIFT's name for the copy function
add = user_fun(lambda x, y: x + y, name="add")
sub = user_fun(lambda x, y: x - y, name="sub")
mult = user_fun(lambda x, y: x * y, name="mult")
div = user_fun(lambda x, y: x / y, name="div")
neg = user_fun(lambda x: -x, name="neg")
max_ = user_fun(lambda x, y: x if x > y else y, name="max_")
min_ = user_fun(lambda x, y: x if x < y else y, name="min_")

OPERATORS = {"add": add, "sub": sub, "mult": mult, "div": div, "neg": neg}
