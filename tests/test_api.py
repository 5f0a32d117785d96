"""The public API of DESIGN.md is a contract: every name programs outside this repo use exists."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import lift

TYPES = ["Float", "Double", "Int", "Bool", "Array", "Tuple", "Vector", "Size"]
DEFINITIONS = ["fun", "user_fun", "id", "add", "mult", "max_", "min_"]
HIGH_LEVEL = ["map", "reduce", "zip", "get", "split", "join", "slide", "pad", "transpose", "transpose_w",
              "let", "value", "iterate", "map_nd", "zip_nd", "split_nd", "join_nd", "slide_nd", "pad_nd",
              "transpose_nd", "take"]
OPENCL = ["map_glb", "map_wrg", "map_lcl", "map_seq", "reduce_seq", "to_global", "to_local", "to_private",
          "as_vector", "as_scalar", "vectorise", "ocl_kernel"]
FUNCTIONS = ["typecheck", "interpret", "compile", "tune"]
ERRORS = ["LiftError", "LiftTypeError", "RewriteError", "UnsatisfiableError", "NotSynchronisableError",
          "UserFunError", "DeviceError"]


@pytest.mark.parametrize("name", TYPES + DEFINITIONS + HIGH_LEVEL + OPENCL + FUNCTIONS + ERRORS)
def test_top_level_name(name):
    assert hasattr(lift, name), f"lift.{name} is part of the public API"
    assert name in lift.__all__


def test_errors_refine_builtins():
    assert issubclass(lift.LiftTypeError, TypeError)
    for name in ERRORS[1:]:
        assert issubclass(getattr(lift, name), lift.LiftError)


def test_user_fun_c_exists():
    f = lift.user_fun.c("fma3", ["a", "b", "c"], "return a * b + c;", [lift.Float] * 3, lift.Float)
    assert f.name == "fma3" and f.out_type == lift.Float


def test_sizes_are_symbolic():
    n = lift.Size("N")
    assert str(n * 2) == "2*N" and str(n // 4) == "N // 4"


@pytest.mark.parametrize("module,names", [
    ("lift.devices", ["current", "profile", "list"]),
    ("lift.rules", ["ALL", "explore"]),
    ("lift.rewrites", ["apply_all"]),
    ("lift.constraints", ["tuning_space", "mapping_space"]),
    ("lift.testing", ["assert_preserves"]),
])
def test_submodules(module, names):
    mod = importlib.import_module(module)
    for name in names:
        assert hasattr(mod, name), f"{module}.{name}"


def test_rules_are_values_with_names_and_laws():
    import lift.rules

    assert isinstance(lift.rules.ALL, tuple) and len(lift.rules.ALL) >= 26
    for rule in lift.rules.ALL:
        assert rule.name and callable(rule.matches) and callable(rule.apply)


def test_device_profiles():
    for name in ("mali-g72", "nvidia", "pocl-cpu"):
        assert lift.devices.profile(name).max_work_group_size > 0


def test_offline_program_for_a_profile():
    n = lift.Size("N")
    prog = lift.compile(lift.fun([lift.Array(lift.Float, n)], lambda x: lift.map(lift.id) << x),
                        device=lift.devices.profile("mali-g72"))
    assert "kernel void" in prog.source and prog.device.name == "Mali-G72"
    with pytest.raises(lift.DeviceError, match="not attached"):
        prog(np.ones(4, np.float32))


def test_program_attributes():
    n = lift.Size("N")
    prog = lift.compile(lift.fun([lift.Array(lift.Float, n)], lambda x: lift.map(lift.id) << x))
    for attr in ("source", "kernels", "ndrange", "memory_bytes", "barriers", "choices", "time"):
        assert hasattr(prog, attr), f"Program.{attr}"


def test_every_public_submodule_is_an_attribute_after_a_bare_import() -> None:
    """DESIGN.md's public submodules, reached as attributes in a fresh interpreter (no earlier imports)."""
    import subprocess
    import sys

    code = ("import lift, types\n"
            "for name in ('constraints', 'rules', 'rewrites', 'testing', 'devices', 'explore'):\n"
            "    assert isinstance(getattr(lift, name), types.ModuleType), name\n"
            "lift.constraints.mapping_space; lift.rules.ALL; lift.rewrites.apply_all; lift.testing.assert_preserves\n"
            "lift.devices.profile; lift.explore.tune\n"
            "try:\n    lift.no_such_module\nexcept AttributeError:\n    pass\n"
            "else:\n    raise SystemExit('no error')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_deprecated_pipeline_alias_is_gone():
    """Issue 24: `lift.compile` is the pipeline; the tuner's evaluator is only `Evaluator`."""
    import pytest

    import lift.explore
    from lift.explore import evaluate

    with pytest.raises(AttributeError):
        lift.explore.Pipeline  # noqa: B018
    with pytest.raises(AttributeError):
        evaluate.Pipeline  # noqa: B018
