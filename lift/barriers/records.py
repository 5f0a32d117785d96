"""The records of the barrier stage: placements, the dependences they resolve, and `Synchronised`.

Stage `Allocated -> Synchronised`: `Synchronised.after` maps the IR path of a node to the
barriers the code generator emits right after that node's code; `Synchronised.uniform` maps
the IR path of a map to the way its loop is made uniform (`Uniform`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from lift.allocation import Allocated
from lift.arith import Arith, to_c
from lift.ir.paths import Path

FENCES = {"local": "CLK_LOCAL_MEM_FENCE", "global": "CLK_GLOBAL_MEM_FENCE"}
PROBE_FENCE = "LIFT_PROBE"  # the fence of the candidate barriers of a probe run (never printed)


def fence_for(spaces: set[str] | frozenset[str]) -> str:
    """The fence flags for dependences through memories in `spaces` ("local", "global" or both)."""
    return " | ".join(FENCES[s] for s in ("local", "global") if s in spaces)


@dataclass(frozen=True, slots=True)
class Dependence:
    """Access `second` (by one work-item) depends on access `first` (by another) to `buffer`.

    `kind` is "read-after-write", "write-after-read" or "write-after-write"; `carried` names
    the loop whose next iteration performs `second` (None: the same iteration); `witness`
    is a race z3 found without a barrier (None: z3 could not decide, so it counts as one)."""

    kind: str
    buffer: str
    space: str
    first: str
    second: str
    carried: str | None = None
    witness: str | None = None

    def __str__(self) -> str:
        return self.describe()

    def describe(self, *, witness: bool = True) -> str:
        """The dependence in words; with `witness`, also the race z3 found (which may vary
        between runs: generated code shows the dependence without it)."""
        when = f" in the next iteration of {self.carried}" if self.carried else ""
        verb, then = {"read-after-write": ("writes", "read"), "write-after-read": ("reads", "overwritten")}.get(
            self.kind, ("writes", "written again"))
        what = (f"{self.first} {verb} {self.buffer} ({self.space}), {then} by other work-items{when}: "
                f"{self.second}")
        race = "" if not witness else f" (race: {self.witness})" if self.witness else " (not disproven)"
        return f"{self.kind}: {what}{race}"


@dataclass(frozen=True, slots=True)
class Placement:
    """A barrier after the node at `path`, with the dependences it resolves."""

    path: Path
    fence: str
    after: str
    reason: str
    buffers: tuple[str, ...]
    dependences: tuple[Dependence, ...] = ()
    uniform: str = ""  # how the loop around the barrier was made uniform ("": it already was)

    @property
    def comment(self) -> str:
        """The reason without z3's race examples, for the generated code."""
        text = "; ".join(d.describe(witness=False) for d in self.dependences) or self.reason
        return f"{text}; {self.uniform}" if self.uniform and self.dependences else text


@dataclass(frozen=True, slots=True)
class Uniform:
    """A `map_lcl`/`map_glb` loop made uniform so that every work-item of a group reaches its barriers.

    Every work-item runs the loop up to `bound` (the `count` iterations rounded up to a multiple
    of the work-items `stride`; `once`: a single trip, `bound == count`) and runs the body only
    for iterations below `count`; the guard is split around each barrier directly in the body.
    `path` is the IR path of the map (the key of `Synchronised.uniform`)."""

    path: Path
    kind: str
    dim: int
    count: Arith
    bound: Arith
    once: bool
    loop: str  # the map, in LIFT notation

    @property
    def note(self) -> str:
        """The change in words, for `Program.barriers` and the generated code."""
        units = {"lcl": "get_local_size", "glb": "get_global_size"}[self.kind]
        trips = ("its single iteration runs in every work-item" if self.once else
                 f"every work-item runs its {to_c(self.count)} iterations rounded up to {to_c(self.bound)} "
                 f"(a multiple of {units}({self.dim}))")
        return (f"{self.loop} made uniform: {trips}, with the body guarded by "
                f"iteration < {to_c(self.count)} on either side of the barrier")


@dataclass(frozen=True)
class Synchronised:
    """Stage record: the allocation and the barriers to emit, by the path they follow."""

    allocated: Allocated
    after: Mapping[Path, tuple[Placement, ...]]
    uniform: Mapping[Path, Uniform] = field(default_factory=dict)  # loops made uniform, by the map's path


class _EveryNode(Mapping[Path, tuple[Placement, ...]]):
    """A placement after every node: where the code generator could emit a barrier."""

    def __getitem__(self, key: Path) -> tuple[Placement, ...]:
        return (Placement(key, PROBE_FENCE, "", " ".join(map(str, key)), ()),)

    def get(self, key: Path, default: object = None) -> tuple[Placement, ...]:
        return self[key]

    def __iter__(self) -> Iterator[Path]:
        return iter(())

    def __len__(self) -> int:
        return 0


def candidates(alloc: Allocated) -> Synchronised:
    """A `Synchronised` that marks every place a barrier could go (for the probe run of codegen).

    Each mark is a barrier with fence `PROBE_FENCE` whose comment is the path it follows."""
    return Synchronised(alloc, _EveryNode())


def probe_key(comment: str) -> Path:
    """The path a probe mark (made by `candidates`) follows."""
    return tuple(int(k) for k in comment.split())


__all__ = ["FENCES", "PROBE_FENCE", "fence_for", "Dependence", "Placement", "Uniform", "Synchronised",
           "candidates", "probe_key"]
