"""Tensor Comprehensions (Vasilache et al. 2018, section 3) as liftcl programs.

    progs = lift.tc('''
    def tmm(float(M,K) A, float(N,K) B) -> (C) {
        C(m,n) +=! A(m,kk) * B(n,kk)
    }''')
    print(progs["tmm"])   # (A, B) => map((m) => map((n) => reduce(add, 0.0) << map(mult) << zip(m, n)) << B) << A

Each function is parsed (`syntax`), its index ranges inferred (`ranges`), and translated to an
ordinary `lift.fun` program (`function`, `translation`, `access`, `scalar`): maps over the output's
dimensions, a reduce over the reduction variables, tensors read through `slide`/`transpose` views,
an int tensor's elements used as a subscript (`X(I(i, k), j)`) through `gather` (lift.gather), and a
version read more than once bound with `let`.
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Mapping

from lift.comprehension.function import translate
from lift.comprehension.syntax import parse
from lift.errors import nesting_guard
from lift.ir.nodes import Lambda

__all__ = ["tc"]

@nesting_guard("lift.tc")
def tc(source: str, *, constants: Mapping[str, int] | None = None, sizes: Mapping[str, int] | None = None,
       file: str | None = None) -> dict[str, Lambda]:
    """The programs of a TC source, by function name: `lift.tc(src)["mv"]` is a `lift.fun` program.

    `constants` fixes int scalar parameters used in subscripts (sconv2d's strides `sh`, `sw`), which
    are then not parameters of the program; `sizes` fixes size names (`{"M": 128}`: the program's
    types say 128, as TC specialises to the sizes it runs with). Errors name the TC line and column (`file`, if given,
    is the name they print; the source is registered with `linecache` so they show the line)."""
    if file is None:  # a name per source text, for linecache
        file = f"<tc-{hashlib.sha1(source.encode()).hexdigest()[:8]}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[file] = (len(source), None, lines, file)
    return {f.name: translate(f, dict(constants or {}), sizes) for f in parse(source, file)}
