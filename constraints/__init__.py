"""lift.constraints: z3 models for tuning values (thesis 4.3) and parallel mappings (5.3).

    space = lift.constraints.mapping_space(prog, lift.devices.profile("mali-g72"))
    space.stats()                      # constraint instances by kind (Table 5.4)
    choice = space.sample(1, seed=0)[0]  # {map label: Table 5.2 code}
    lowered = space.realise(choice)
"""

from .context import Context, MapSite, analyse
from .launch import ndrange
from .mapping import CODES, FUSED, GLB, LCL, SEQ, WRG, describe
from .model import Constraint, Model, Pred
from .realise import check_vectorisable, realise, substitute_sizes
from .space import Space, choose_mapping, code_of, joint_space, mapping_space, tuning_space
from .tuning import TuningParam, reduce_ranges, simplify

__all__ = [
    "tuning_space", "mapping_space", "joint_space", "choose_mapping", "Space", "Constraint", "Pred",
    "Model", "TuningParam", "Context", "MapSite", "analyse", "realise", "substitute_sizes",
    "check_vectorisable", "reduce_ranges", "simplify", "describe", "code_of", "ndrange",
    "CODES", "SEQ", "FUSED", "LCL", "WRG", "GLB",
]
