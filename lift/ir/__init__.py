"""The LIFT IR: nodes, the front end that builds them, traversal and printing."""

from lift.ir.alpha import alpha_equal, canonical, refresh, substitute
from lift.ir.nodes import *  # noqa: F403
from lift.ir.nodes import ALL_NODE_TYPES, Expr, FunCall, FunDecl, Lambda, Literal, Node, Param, UserFun
from lift.ir.paths import Path, at, children, replace_at, walk, with_children
from lift.ir.printer import show

__all__ = ["ALL_NODE_TYPES", "Expr", "FunCall", "FunDecl", "Lambda", "Literal", "Node", "Param",
           "UserFun", "alpha_equal", "canonical", "refresh", "substitute",
           "Path", "at", "children", "replace_at", "walk",
           "with_children", "show"]
