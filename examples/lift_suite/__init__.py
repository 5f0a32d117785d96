"""LIFT's own benchmark suite written with liftcl: `cgo17` (CGO 2017's programs), `stencils` (CGO
2018's), each program a `Case` (`case`) with its numpy reference; `benchmarks/lift_suite.py`
prints the table."""
