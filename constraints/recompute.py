"""Moved to `lift.rules.recompute` (a rewriting pass, run as a stage of `lift.compile`): these
names stay importable from here only for the modules that still import them from here
(rewrites/fusion_points.py); import them from `lift.rules.recompute`."""

from lift.rules.recompute import fuse_into_stencils, recompute_layouts, stencil_fused

__all__ = ["recompute_layouts", "fuse_into_stencils", "stencil_fused"]
