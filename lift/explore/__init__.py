"""lift.explore: stage 10, exploration of the constrained space (thesis 4.5, 6.3).

    result = lift.explore.tune(dot, x, y, budget=60)        # exported as lift.tune
    result.best(x, y); result.pareto; result.history

`tune` (tune.py) drives a search strategy (search.py) over search points, each a `lift.Choices`
(points.py) planned by `lift.compile.plan` (evaluate.py), seeded for the automatic rewrite
points (seeds.py), keeps the time/memory front (pareto.py) and a persistent tuning database
(database.py).
"""

from .database import TuningDatabaseWarning, TuningDB
from .dbkeys import measure_key, program_hash, shapes_key, tuning_key
from .evaluate import Evaluator, Record, mismatch
from .pareto import dominates, front, pareto_front
from .search import Evolution, LocalSearch, RandomSearch, RandomThenLocal, Strategy, Table, replay
from .seeds import Seeded
from .tune import TuneResult, tune

__all__ = [
    "tune", "TuneResult", "Record", "Evaluator", "mismatch",
    "TuningDB", "TuningDatabaseWarning", "program_hash", "shapes_key", "tuning_key", "measure_key",
    "dominates", "front", "pareto_front",
    "Strategy", "RandomSearch", "LocalSearch", "RandomThenLocal", "Evolution", "Seeded", "Table", "replay",
]
