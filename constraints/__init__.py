"""lift.constraints: z3 models for tuning values (thesis 4.3) and parallel mappings (5.3).

    space = lift.constraints.mapping_space(prog, lift.devices.profile("mali-g72"))
    space.stats()                      # constraint instances by kind (Table 5.4)
    choice = space.sample(1, seed=0)[0]  # {map label: Table 5.2 code}
    lowered = space.realise(choice)

The package states constraints and solves them; it builds no IR. The program a choice gives is
built by `lift.realise` (stage "realised"; `realise`, `substitute_sizes` and `check_vectorisable`
are that module's, also read from here), and the rewriting stages a space is stated over by
`lift.rules.prepare`.
"""

import importlib
from typing import TYPE_CHECKING, Any

from .context import Context, MapSite, analyse
from .launch import ndrange
from .mapping import CODES, FUSED, GLB, LCL, SEQ, WRG, describe
from .model import Constraint, Model, Pred
from .space import Space, choose_mapping, code_of, joint_space, mapping_space, tuning_space
from .tuning import TuningParam, reduce_ranges, simplify

if TYPE_CHECKING:  # read from lift.realise on use (`__getattr__`), which imports this package's modules
    from lift.realise import check_vectorisable, realise, substitute_sizes

_REALISE = ("realise", "substitute_sizes", "check_vectorisable")  # lift.realise's, read from here on use


def __getattr__(name: str) -> Any:
    if name in _REALISE:  # on use: lift.realise imports this package's modules
        return getattr(importlib.import_module("lift.realise"), name)
    raise AttributeError(f"module 'lift.constraints' has no attribute {name!r}")


__all__ = [
    "tuning_space", "mapping_space", "joint_space", "choose_mapping", "Space", "Constraint", "Pred",
    "Model", "TuningParam", "Context", "MapSite", "analyse", "realise", "substitute_sizes",
    "check_vectorisable", "reduce_ranges", "simplify", "describe", "code_of", "ndrange",
    "CODES", "SEQ", "FUSED", "LCL", "WRG", "GLB",
]
