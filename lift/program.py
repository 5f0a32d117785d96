"""`Program`: a `KernelSource` built for a live device, called like a function on arrays.

Stage `KernelSource -> Program`. A call's cost is its kernels' cost:

* **Per-shape host plans.** The first call with a shape of arguments binds the size variables,
  checks every argument's dtype and shape (errors name the argument) and the program's size
  conditions (the code relies on them: `as_vector(8)` of `[Float]N` reads aligned float8s), and
  works out what depends only on the shapes (`_Shape`: buffer sizes, launch ranges, kernel
  arguments, the specialised program that runs them); later calls with the same shapes and
  dtypes check those and launch.
* **Replay.** A thread's last call with numpy arrays is kept ready to run again
  (`_Replay`): a call with the very same arrays (same objects, shapes, strides, dtypes and
  addresses) launches its kernels with their arguments already set, skipping the per-shape
  lookup and the binding of arguments (a third of a small call's host time: arg-min of 2^20,
  Xeon PoCL 3.0, 30 -> 10 us before the launch).
* **Zero copy** where the device computes in host memory (`runtime.DeviceContext.zero_copy`,
  probed when the context opens): arguments are used in place (copied once into aligned memory
  only when not C-contiguous), and the kernels write new numpy arrays (`runtime.HOST`) that
  are the results. Arguments that start where the program's vector loads may not (numpy aligns
  large arrays to 16 bytes) run the program's any-alignment variant
  (`lift.codegen.printer.unaligned_variant`, built at its first use). A device with memory of
  its own (a GPU) copies arguments in and results out through buffers reused across calls.
* **Results on the device**: `keep=True` returns `lift.DeviceArray`s that feed the next program
  without a round trip; `sync=False` returns them before the kernels finish.

Results are numpy arrays (vectors as a trailing axis), numpy scalars for scalar results, and
tuples for tuple results or arrays of tuples; `out=` writes into the caller's arrays. A result
is never changed by a later call, nor by the caller changing the arguments afterwards.
A program compiled by `lift.compile(expr)` from a program with symbolic sizes may carry a
specialiser (`lift.specialise`): the first call with new sizes specialises it, and calls with
those sizes run the specialised program (this generic one when there is none or it fails).

A `Program` may be called from several threads at once: each thread runs its calls on its own
queue, kernel objects and device buffers (`_Lane`), and the first call with new sizes
specialises the program once under a lock (`lift.specialise`).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from lift import runtime
from lift.arith import Arith, Cst, as_arith, evaluate, try_evaluate, upper
from lift.arrays import DeviceArray
from lift.codegen.printer import relaxable, unaligned_variant, vector_alignment
from lift.devices import Device
from lift.errors import DeviceError, LiftTypeError, LiftValueError
from lift.gather import check_indices, index_inputs
from lift.interpret import arguments, check_conditions, leaf_shape, leaves
from lift.ir.nodes import Lambda, Node
from lift.plan import COUNTER_ROLE, BarrierInfo, KernelSource, Launch
from lift.typecheck import size_conditions
from lift.types import ArrayType, ScalarType, TupleType, Type, base_type

INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class NDRange:
    """The symbolic global and local sizes of one launch."""

    kernel: str
    global_size: tuple[Arith, ...]
    local_size: tuple[Arith, ...] | None


@dataclass(eq=False)
class _Lane:
    """What one thread's calls of a `Program` use and change: the device context with the
    thread's queue, its own kernel objects (a call sets their arguments), its device buffers,
    the host arrays held until their copies complete, and (with a specialiser) the program that
    ran its last call."""

    dc: runtime.DeviceContext
    built: Any
    kernels: dict[str, Any]
    pool: runtime.BufferPool
    last: Any = None
    relaxed: dict[str, Any] | None = None  # the kernels of the any-alignment variant, once used
    small: dict[tuple, Any] = field(default_factory=dict)  # buffers of small arguments, kept (`_in_place`)
    args: dict[int, list[Any]] = field(default_factory=dict)  # per kernel object, its arguments last set
    large: dict[str, tuple] = field(default_factory=dict)  # per input: a large argument's (address, bytes, buffer)
    results: dict[str, tuple] = field(default_factory=dict)  # per small output, its kept host array and buffer
    replay: _Replay | None = None  # the thread's last call, ready to run again (`Program._replayed`)


class Program:
    """A compiled program: `Program(*arrays) -> ndarray | scalar | tuple`.

    k = Program(plan); k(x, y); k.time(x, y, repeat=5) -> [seconds, ...]

    Thread-safe: several threads may call one program at once, and each call returns its own
    result. Each thread has its own queue, kernel objects and device buffers (made at its first
    call), so calls from different threads overlap on the device; the first call with sizes the
    program has not seen specialises it once, under the lock that serialises `lift.compile`
    (z3 is not thread-safe), while the other threads' calls with those sizes wait for it.
    """

    def __init__(self, plan: KernelSource, *, device: Any = None, choices: Any = None,
                 node: Node | None = None, cache_dir: runtime.CacheDir = None,
                 options: tuple[str, ...] = (), wide: Callable[[], KernelSource] | None = None,
                 specialiser: Any = None, checks: Node | None = None) -> None:
        self._choices = choices
        self.node = node
        # the size conditions a call must meet: the program's own and, with `checks` (the rewritten
        # program the plan was generated from), the divisibility its rewrites added (blocks, vectors:
        # a block that does not divide would read past the arrays); its other conditions can be
        # stricter than its kernels (a tail pad of length 0 is refused by typing, computed right)
        self._conditions = size_conditions(node) if isinstance(node, Lambda) else []
        if isinstance(checks, Lambda) and checks is not node:
            self._conditions += [c for c in size_conditions(checks) if c.kind == "divides"]
        self._gathers = index_inputs(node) if isinstance(node, Lambda) else ()  # index inputs: host-checked
        self._dc, self.offline = _attach(device)
        self._target = self._dc.device if self._dc is not None else device
        self._build = (tuple(options), cache_dir)
        self._wide = wide  # the same program with 64-bit indices, for sizes past `plan.index_limits`
        self._specialiser = specialiser  # a lift.specialise.Specialiser: calls specialise to their sizes
        self._lock = threading.RLock()  # held to swap in the 64-bit program (`_check`)
        self._load(plan)

    def _load(self, plan: KernelSource) -> None:
        """Take `plan` as the program's code and build it for the attached device."""
        self.plan = plan
        self._specs = {b.name: b for b in plan.buffers}
        self._inputs = _inputs_by_param(plan)
        self._local = threading.local()  # the calling thread's `_Lane`
        self._shapes: dict[Any, _Shape] = {}  # host plans by argument shapes and dtypes
        self._align = vector_alignment(plan.source)  # what the global buffers' starts must be a multiple of
        self._relaxable = relaxable(plan.source)  # else misaligned arguments are copied (hand-written vectors)
        self._relaxed_built: runtime.Built | None = None  # `unaligned_variant`, built at its first use
        self._trees = tuple(_tree(t) for t in plan.param_types)
        self._flat = all(t is None for t in self._trees)  # no parameter is a tuple
        check_limits(plan, self._target, allocations=False)  # allocations: when a call binds the sizes
        if self._dc is None:  # compiled for a profile whose device is not attached: describe only
            self.build_info = None
            return
        options, cache_dir = self._build
        self.build_info = runtime.build(self._dc, plan.source, options=options, cache_dir=cache_dir)
        self._lane()  # the building thread's kernels, now: a kernel missing from the build is an error here

    def copying(self) -> Program:
        """This program with calls that copy their arguments in and their results out, as on a
        device with memory of its own (a GPU), even where the device shares host memory: the GPU
        path tested on a CPU runtime. Returns itself."""
        if self._dc is not None and self._dc.zero_copy:
            self._dc = replace(self._dc, zero_copy=False)
            self._local = threading.local()
            self._shapes = {}
        return self

    def _lane(self) -> _Lane:
        """The calling thread's queue, kernels and buffers (made at its first call)."""
        lane = getattr(self._local, "lane", None)
        built = self.build_info
        if lane is None or lane.built is not built:
            assert self._dc is not None and built is not None, "an offline program has no lanes (its calls raise first)"
            dc = runtime.for_thread(self._dc)
            zeroed = frozenset(b.name for b in self.plan.buffers if b.role == COUNTER_ROLE)
            kernels = runtime.kernels(built, self.plan.kernels, self._scalars())
            lane = _Lane(dc, built, kernels, runtime.BufferPool(dc, zeroed))
            self._local.lane = lane
        return lane

    def _scalars(self) -> dict[str, tuple[str | None, ...]]:
        """Per kernel, the C type of each scalar (size) argument, None for the others."""
        return {launch.kernel: tuple(a.ctype if a.kind == "size" else None for a in launch.args)
                for launch in self.plan.launches}

    def _relaxed_kernels(self, lane: _Lane) -> dict[str, Any]:
        """The calling thread's kernels of the program's any-alignment variant (built once)."""
        if lane.relaxed is None:
            with self._lock:
                if self._relaxed_built is None:
                    options, cache_dir = self._build
                    inputs = [b.name for b in self.plan.buffers if b.role == "input"]
                    self._relaxed_built = runtime.build(lane.dc, unaligned_variant(self.plan.source, inputs),
                                                        options=options, cache_dir=cache_dir)
            lane.relaxed = runtime.kernels(self._relaxed_built, self.plan.kernels, self._scalars())
        return lane.relaxed

    # ------------------------------------------------------------- description

    @property
    def choices(self) -> Any:
        """The `lift.Choices` the program was compiled with (`lift.compile(expr, choices=...)` rebuilds it)."""
        return self._choices

    @property
    def source(self) -> str:
        """The OpenCL C source."""
        return self.plan.source

    @property
    def kernels(self) -> tuple[str, ...]:
        """The kernel names, in launch order of first use."""
        return self.plan.kernels

    @property
    def device(self) -> Device:
        """The `lift.devices.Device` this program runs on (its offline profile when not attached)."""
        if self._dc is not None:
            return self._dc.device
        assert self.offline is not None  # `_attach` gives one or the other
        return self.offline.device

    @property
    def attached(self) -> bool:
        """Whether the program was built for an attached device and can run."""
        return self._dc is not None

    @property
    def ndrange(self) -> tuple[NDRange, ...]:
        """One `NDRange` (symbolic global and local sizes) per launch, in order."""
        return tuple(NDRange(ln.kernel, ln.global_size, ln.local_size) for ln in self.plan.launches)

    @property
    def barriers(self) -> tuple[BarrierInfo, ...]:
        """The barriers in the generated code and why each is there."""
        return self.plan.barriers

    @property
    def memory_bytes(self) -> dict[str, Arith]:
        """Bytes allocated per address space ("global", "local"), symbolic in the sizes."""
        if self.plan.memory_bytes:
            return dict(self.plan.memory_bytes)
        out: dict[str, Arith] = {}
        for b in self.plan.buffers:
            nbytes = b.count * b.scalar.dtype.itemsize
            out[b.space] = out[b.space] + nbytes if b.space in out else nbytes
        return out

    def memory_bytes_for(self, *arrays: Any) -> dict[str, int]:
        """`memory_bytes` evaluated for the sizes of `arrays`."""
        sizes = self._bound(arrays)
        return {space: evaluate(n, sizes) for space, n in self.memory_bytes.items()}

    def check_limits(self, *arrays: Any) -> None:
        """`DeviceError` unless the work-groups, local memory and buffers for `arrays` fit the device."""
        check_limits(self.plan, self.device, self._bound(arrays))

    @property
    def device_buffers(self) -> dict[str, Any]:
        """The global device buffers the calling thread's calls hold for reuse, by buffer name."""
        return self._lane().pool.buffers() if self._dc is not None else {}

    def sizes(self, *arrays: Any) -> dict[str, int]:
        """The size variables bound from the shapes of `arrays`."""
        return self._bound(arrays)

    @property
    def specialises(self) -> bool:
        """Whether calls run the program specialised to their sizes where that gains something
        (`lift.compile(expr)` of a program with symbolic sizes; see `lift.specialise`)."""
        return self._specialiser is not None

    def specialised(self, *arrays: Any, sizes: Mapping[str, int] | None = None) -> Program:
        """The program a call with `arrays` (or, without arrays, with the size bindings `sizes`:
        `prog.specialised(sizes={"M": 1024, "N": 1024, "K": 1024})`) runs: the one specialised to
        their sizes (compiled here at the first call with them; its `.source` and `.choices` are its
        own), or this one."""
        if sizes is None:
            bound = self._bound(arrays)
        else:
            if arrays:
                raise LiftTypeError("specialised takes the arguments or sizes=, not both", node=self.node)
            bound = {str(k): int(v) for k, v in sizes.items()}
            missing = sorted(set(self.plan.size_vars) - set(bound))
            if missing:
                raise LiftTypeError(f"sizes= gives no value for {', '.join(missing)}", node=self.node,
                                    expected=sorted(self.plan.size_vars), got=sorted(bound))
            self._check(bound)
        return self._routed(bound) or self

    @property
    def specialisations(self) -> tuple[Any, ...]:
        """Per size tuple of the recent calls, what runs them and why (`lift.specialise.Specialisation`:
        `.sizes`, `.program` (None: this generic program), `.reason`, `.seconds` it took)."""
        return self._specialiser.records if self._specialiser is not None else ()

    def _routed(self, sizes: dict[str, int]) -> Program | None:
        """The program specialised to `sizes`, if any: one that copies, as this one does (`copying`)."""
        program = self._specialiser.get(sizes).program if self._specialiser is not None else None
        if program is not None and self._dc is not None and not self._dc.zero_copy:
            program.copying()
        return program

    def __repr__(self) -> str:
        where = "on" if self.attached else "compiled offline for"
        return f"<lift.Program {', '.join(self.kernels)} {where} {self.device.name}>"

    # --------------------------------------------------------------------- running

    def __call__(self, *arrays: Any, out: Any = None, keep: bool = False, sync: bool = True) -> Any:
        """Run on the arguments and return the results.

        Arguments may be numpy arrays and scalars, DLPack-capable arrays (a PyTorch CPU tensor, a
        JAX array), `lift.DeviceArray`s and `pyopencl.array.Array`s. On a device that computes in
        host memory (a CPU runtime) nothing is copied: aligned C-contiguous arrays are read where
        they are (others copied once into aligned memory), and the kernels write new numpy arrays
        that are returned; a GPU's calls copy in and out. `out=`: the array to write the result
        into (a tuple of arrays for a tuple result; numpy's convention), which is returned.
        `keep=True`: the results as `lift.DeviceArray`s, left on the device for the next program.
        `sync=False` (implies `keep`): return at once; reading a result waits for its kernels (do
        not change the numpy arguments before then). What depends only on the argument shapes
        (sizes, launch ranges, buffer sizes, kernel arguments, the specialised program) is worked
        out by a shape's first call and reused by the next ones."""
        if out is None and not keep and sync:
            lane = getattr(self._local, "lane", None)  # none before the thread's first call (or offline)
            if lane is not None and lane.replay is not None and lane.built is self.build_info:
                try:
                    result = self._replayed(lane.replay, arrays)
                except Exception:  # noqa: BLE001 - the full call runs it again: a specialised program
                    lane.replay = None  # that fails is refused there, and any other error is raised there
                    result = _MISS
                if result is not _MISS:
                    return result
        return self._execute(arrays, out=out, keep=keep or not sync, sync=sync)[0]

    def _replayed(self, rp: _Replay, arrays: tuple) -> Any:
        """The thread's last call run again when `arrays` are the very arrays it ran on (the same
        objects, still with the same shapes, strides, dtypes and addresses, so every buffer and
        kernel argument it set still holds) and numbers of the same type and value, and the lane
        it ran on still has its buffers; `_MISS` otherwise. Small results are copied out of the
        lane's kept arrays; a larger result is a new array, set as that argument alone. (Lean on
        purpose: at a call's pace, after kernels that evicted the caches, each Python step costs
        several times its usual time.)"""
        if len(arrays) != len(rp.args):
            return _MISS
        for x, (ref, shp, strides, dtype, addr) in zip(arrays, rp.args):
            if ref is None:  # a number: `shp` its type, `strides` its value, `dtype` its sign
                if type(x) is not shp or not x == strides or not x and math.copysign(1.0, x) != dtype:
                    return _MISS
            elif ref() is not x or x.shape != shp or x.strides != strides or x.dtype is not dtype \
                    or runtime.address(x) != addr:
                return _MISS
        lane = rp.lane
        if lane.pool is not rp.pool:
            return _MISS
        results = lane.results
        for name, kept in rp.kept:
            if results.get(name) is not kept:
                return _MISS
        if self._specialiser is not None:  # still what runs these sizes (not refused, nor forgotten)
            rec = self._specialiser.decided(rp.shape.sizes)
            if rec is None or (rec.program or self) is not rp.program:
                return _MISS
            self._runs(rp.program)
        shape = rp.shape
        if rp.fresh:  # results too large to copy: new arrays, set as those arguments
            return self._replayed_fresh(rp, lane, shape)
        self._wait(lane.dc, shape, runtime.relaunch(lane.dc, rp.launches, lane.args))
        if rp.scalar:  # a numpy scalar: read out of the kept 0-d array
            return rp.kept[shape.layout[1]][1][0][()]
        return _assembled(shape.layout, [kept[0].copy() for _, kept in rp.kept], keep=False)

    def _replayed_fresh(self, rp: _Replay, lane: _Lane, shape: _Shape) -> Any:
        """`_replayed` where the results are new arrays per call (a call keeps all its results or
        none: `Program._run`'s `copied`)."""
        hosts: list[np.ndarray] = []
        fresh: dict[str, Any] = {}
        for name, dtype, shp, nbytes in shape.outputs:
            hosts.append(runtime.HOST.empty(shp, dtype, nbytes))
            fresh[name] = runtime.result_buffer(lane.dc, hosts[-1])
        launches = []
        for kernel, gsize, lsize, values in rp.launches:
            slots = rp.fresh.get(id(values))
            if slots:
                values = list(values)
                for k, name in slots:
                    values[k] = fresh[name]
            launches.append((kernel, gsize, lsize, values))
        for kernel, *_ in launches:  # arguments set anew each call: not remembered, nor the results held
            lane.args.pop(id(kernel), None)
        self._wait(lane.dc, shape, runtime.relaunch(lane.dc, launches, {}))
        return _assembled(shape.layout, hosts, keep=False)

    def time(self, *arrays: Any, repeat: int = 5) -> list[float]:
        """Seconds per run (summed kernel event times, transfers excluded), after one warm-up."""
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            raise LiftValueError(f"repeat must be an int of at least 1, got {repeat!r}")
        self._require_device()
        leaves, key = self._signature(arrays)
        shape = self._planned(arrays, key)
        self._runs(shape.program)
        if shape.program is not self:
            try:
                return shape.program._timed(shape, leaves, repeat)
            except Exception as err:  # noqa: BLE001 - the generic program runs the call instead
                shape = self._refused(shape, err, arrays, key)
        return self._timed(shape, leaves, repeat)

    def _execute(self, arrays: tuple, *, out: Any = None, keep: bool = False, sync: bool = True
                 ) -> tuple[Any, list[Any]]:
        """(the results, the launches' events) of a call (`out` itself for the results with `out=`)."""
        result, events = self._dispatched(arrays, out, keep, sync)
        return (out if out is not None else result), events

    def _dispatched(self, arrays: tuple, out: Any, keep: bool, sync: bool) -> tuple[Any, list[Any]]:
        self._require_device()
        if out is not None and keep:
            raise LiftValueError("out= writes numpy arrays; it cannot be combined with keep=True or sync=False",
                                 node=self.node)
        leaves, key = self._signature(arrays)
        shape = self._shapes.get(key) if key is not None and not self._gathers else None
        if shape is None:
            shape = self._planned(arrays, key)  # every argument checked, as lift.interpret checks them
        targets = _out_targets(out, shape, self.node)
        self._runs(shape.program)
        record = (self._lane(), arrays) if out is None and not keep and self._flat and not self._gathers else None
        if shape.program is self:
            return self._run(shape, leaves, targets, keep, sync, record)
        try:
            return shape.program._run(shape, leaves, targets, keep, sync, record)
        except Exception as err:  # noqa: BLE001 - the generic program runs the call instead
            shape = self._refused(shape, err, arrays, key)
            return self._run(shape, leaves, targets, keep, sync, record)

    def _refused(self, shape: _Shape, err: Exception, arrays: tuple, key: Any) -> _Shape:
        """The specialised program of `shape` failed: refused for its sizes (`lift.specialise`);
        the plan of this (generic) program instead."""
        assert self._specialiser is not None
        self._specialiser.refuse(shape.sizes, err)
        self._shapes.pop(key, None)
        self._runs(self)
        return self._planned(arrays, key)

    def _runs(self, target: Program) -> None:
        """`target` runs this call: the program that ran the calling thread's last one (this or a
        specialised one) drops that thread's device buffers, so that, as without specialisation, one
        shape's are held per thread."""
        if self._specialiser is None:
            return
        lane = self._lane()
        last, lane.last = lane.last, target
        if isinstance(last, Program) and last is not target and last._dc is not None:
            held = last._lane()
            held.pool = runtime.BufferPool(held.dc, held.pool.zeroed)

    def _require_device(self) -> None:
        if self.offline is not None:
            raise self.offline.error()

    # ------------------------------------------------------------ checks, per shape

    def _signature(self, arrays: tuple) -> tuple[list[Any], Any]:
        """The arguments' leaves in the plan's input order (device arrays, DLPack and pyopencl
        arrays made usable) and the key of their shapes and dtypes; key None when the arguments
        do not have the parameters' structure (the full check says why)."""
        if len(arrays) != len(self._trees):
            return [], None
        if self._flat:
            leaves = list(arrays)
        else:
            leaves = []
            try:
                for a, tree in zip(arrays, self._trees):
                    _flatten(a, tree, leaves)
            except _Mismatch:
                return [], None
        key: list[Any] = []
        for k, x in enumerate(leaves):
            if type(x) is np.ndarray:
                key.append((x.shape, x.dtype))
                continue
            x = leaves[k] = self._usable(x)
            if isinstance(x, np.ndarray | DeviceArray):
                key.append((x.shape, x.dtype, type(x)))
            elif isinstance(x, bool | int | float):
                key.append(type(x))
            else:
                return leaves, None
        return leaves, tuple(key)

    def _usable(self, x: Any) -> Any:
        """One argument leaf as a numpy array, a `DeviceArray`, or a Python number."""
        if isinstance(x, np.ndarray | DeviceArray | bool | int | float):
            return x
        if isinstance(x, np.generic):
            return np.asarray(x)
        if _is_cl_array(x):
            return self._from_cl_array(x)
        if hasattr(x, "__dlpack__"):
            try:
                return np.from_dlpack(x)
            except (TypeError, BufferError, RuntimeError, ValueError):
                pass  # not on the CPU: read through numpy below
        try:
            return np.asarray(x)
        except Exception:  # noqa: BLE001 - the full check names the argument
            return x

    def _from_cl_array(self, x: Any) -> Any:
        """A `pyopencl.array.Array`: its buffer when on this program's context, whole and
        contiguous; else its values read back."""
        if (self._dc is not None and x.context == self._dc.context and x.offset == 0
                and x.flags.c_contiguous and x.base_data is not None):
            event = x.events[-1] if x.events else None
            return DeviceArray(self._dc, x.base_data, x.shape, x.dtype, event=event)
        return x.get()

    def _planned(self, arrays: tuple, key: Any) -> _Shape:
        """The host plan of a call with `arrays` after checking them in full (errors name the
        argument), made by the program that runs it (this or the one specialised to its sizes)
        and remembered under `key`."""
        sizes = self._bound(arrays)
        known = self._shapes.get(key) if key is not None else None
        if known is not None:
            return known  # a program with index arrays checks them at every call, then launches
        runner = (self._routed(sizes) or self) if self._specialiser is not None else self
        try:
            if runner is not self:
                runner._check(sizes)  # its own conditions and index widths (a specialised program's)
            shape = runner._host_plan(sizes)
        except Exception as err:  # noqa: BLE001 - the generic program runs the call instead
            if runner is self or self._specialiser is None:
                raise
            self._specialiser.refuse(sizes, err)
            shape = self._host_plan(sizes)
        if key is not None:
            if len(self._shapes) >= MAX_SHAPES:
                self._shapes.clear()
            self._shapes[key] = shape
        return shape

    def _bound(self, arrays: tuple) -> dict[str, int]:
        """The size variables bound from the arguments, every argument and size condition checked."""
        types = list(self.plan.param_types)
        shown = tuple(_stand_in(a, bool(self._gathers)) for a in arrays)
        sizes, values = arguments(types, shown, self.node)  # exactly as lift.interpret checks them
        for name in self.plan.size_vars:
            if name not in sizes:
                raise LiftTypeError(f"size {name} is not the length of any argument", node=self.node)
        self._check(sizes)
        check_indices(self._gathers, values, sizes)  # before any launch, as lift.interpret raises
        for k, value in enumerate(values):
            names = self._inputs.get(k, [])
            if len(names) != len(leaves(value)):
                raise LiftValueError(f"the plan has {len(names)} input buffer(s) for argument {k}, "
                                     f"which has {len(leaves(value))} component(s)", node=self.node)
        return sizes

    def _host_plan(self, sizes: dict[str, int]) -> _Shape:
        """Everything a call with `sizes` needs that its arguments' values do not change."""
        dev = self.device
        outputs: list[Any]
        inputs, temps, locals_, outputs = [], [], [], []
        total = 0
        for b in self.plan.buffers:
            nbytes = evaluate(b.count, sizes) * b.scalar.dtype.itemsize
            if b.space == "local":
                locals_.append((b.name, runtime.local_memory(nbytes)))
            elif b.role in ("temp", COUNTER_ROLE):
                temps.append((b.name, nbytes))
                total += nbytes
            elif b.role == "output":
                total += nbytes
            elif self._dc is not None and not self._dc.zero_copy:
                total += nbytes  # inputs are copied into buffers of their own
        layout = _layout(self.plan.result_type, sizes, iter(range(len(self.plan.outputs))), outputs, self._specs,
                         self.plan.outputs)
        if len(outputs) != len(self.plan.outputs):
            raise LiftValueError(f"the plan has {len(self.plan.outputs)} outputs, {self.plan.result_type} has "
                                 f"{len(outputs)} components", node=self.node)
        for names in self._inputs.values():
            for name in names:
                spec = self._specs[name]
                inputs.append((name, spec.scalar.dtype, evaluate(spec.count, sizes) * spec.scalar.dtype.itemsize))
        inputs.sort(key=lambda i: _input_order(self._inputs, i[0]))
        if dev.global_mem_bytes and total > dev.global_mem_bytes:
            raise DeviceError(f"the call needs {total} bytes of device memory for its results and temporaries, "
                              f"more than {dev.name} has ({dev.global_mem_bytes} bytes)")
        launches = []
        for launch in self.plan.launches:
            gsize, lsize = self._ndrange(launch, sizes)
            if 0 in gsize:
                continue  # no work (e.g. no whole chunk of a short array; OpenCL 1.2 refuses a 0 range)
            args = tuple(a.name if a.kind == "buffer" else _int_arg(a.name, sizes, a.ctype) for a in launch.args)
            launches.append((launch.kernel, gsize, lsize, args))
        small = all(i[2] <= SMALL_BYTES for i in inputs) and all(o[3] <= SMALL_BYTES for o in outputs)
        copied = sum(o[3] for o in outputs) <= COPIED_BYTES
        return _Shape(self, sizes, tuple(inputs), tuple(temps), tuple(locals_), tuple(outputs), tuple(launches),
                      layout, total, small, copied)

    def _check(self, sizes: dict[str, int]) -> None:
        """The program's size conditions hold (the generated code assumes them, e.g. aligned vectors)."""
        check_conditions(self.node, sizes, self._conditions)  # type: ignore[arg-type]
        for limit in self.plan.index_limits:
            v = try_evaluate(limit, sizes)
            if v is not None and v > INT32_MAX and self._widened():
                return self._check(sizes)
            if v is not None and v > INT32_MAX:
                shown = ", ".join(f"{k}={v}" for k, v in sorted(sizes.items()) if not k.startswith("_"))
                raise LiftValueError(
                    f"an index of this program reaches {limit} = {v} for {shown}, past the 32-bit indices "
                    "it was compiled with", node=self.node,
                    hint="give the program constant sizes (Array(Float, 2**33)) to compile it with 64-bit indices")
        self._check_alloc(sizes)

    def _widened(self) -> bool:
        """Load the program regenerated with 64-bit indices (once, under the lock); False when
        it has none. A call of another thread then running on the 32-bit code finishes on it."""
        with self._lock:
            if self._wide is None:
                return not self.plan.index_limits
            wide, self._wide = self._wide, None
            self._load(wide())  # no limits left
            return True

    def _check_alloc(self, sizes: dict[str, int]) -> None:
        """Every global buffer fits one device allocation (checked before any argument is copied, so
        a huge zero-stride argument is this error, not numpy's MemoryError)."""
        limit = self.device.max_alloc_bytes
        for b in self.plan.buffers:
            nbytes = evaluate(b.count, sizes) * b.scalar.dtype.itemsize
            if b.space == "global" and limit and nbytes > limit:
                raise DeviceError(f"buffer {b.name} ({b.role}) needs {nbytes} bytes, more than one allocation "
                                  f"on {self.device.name} ({limit} bytes)")

    # ------------------------------------------------------------------ the call

    def _bind_inputs(self, lane: _Lane, shape: _Shape, leaves: list[Any]
                     ) -> tuple[dict[str, Any], list, list, bool, list[int]]:
        """(buffers by name, host arrays to keep alive until the kernels finish, events to wait
        for, whether an argument used in place starts where the program's vectors may not, the
        indices of the arguments copied or converted) of the call's inputs, temporaries and local memories."""
        dc = lane.dc
        zero = dc.zero_copy
        bufs: dict[str, Any] = {}
        held: list[Any] = []
        waits: list[Any] = []
        staged = [k for k, x in enumerate(leaves) if type(x) is not np.ndarray or not (
            x.flags.carray or x.flags.c_contiguous and (x.flags.aligned or not zero))
            or zero and not self._relaxable and runtime.address(x) % dc.align]
        if staged:
            leaves = self._staged(dc, shape, leaves, staged)
        misaligned = False
        need = self._align
        for (name, _, nbytes), x in zip(shape.inputs, leaves):
            if isinstance(x, DeviceArray):
                bufs[name] = x.buffer
                if x.event is not None:
                    waits.append(x.event)
                held.append(x)
            elif zero:
                address = runtime.address(x)
                bufs[name] = self._in_place(lane, name, x, address, nbytes)
                if need > x.itemsize and address % need:
                    misaligned = True
                held.append(x)
            else:
                bufs[name] = buf = lane.pool.get(name, nbytes)
                runtime.upload(dc, buf, x.reshape(-1))
                held.append(x)
        for name, nbytes in shape.temps:
            bufs[name] = lane.pool.get(name, nbytes)
        for name, mem in shape.locals_:
            bufs[name] = mem
        return bufs, held, waits, misaligned, staged

    def _in_place(self, lane: _Lane, name: str, x: np.ndarray, address: int, nbytes: int) -> Any:
        """A buffer that is the argument `x` (at `address`) for the input `name`: for a small
        array, the one made for the same memory by a recent call, if any (PoCL's first launch on a
        new buffer costs as much as a small kernel); a copy for a scalar. A kept small buffer holds
        its array alive, so memory at that address and of that length is that array's (or a view
        of it) while the buffer is kept: at most `SMALL_KEPT` of `SMALL_BYTES` per thread and
        program. A large array is not held: its buffer (on the memory, not on the array) is kept
        per input and used again for any argument at that address and of that length: the caller
        holds that memory alive for the call, and the device reads it through the pointer (zero
        copy), so a new array object on the same memory (a view, `np.from_dlpack` of a tensor,
        an array freed and made again at the same address) reads what it holds (making, first
        using and releasing a buffer cost a call 20-25 us on PoCL; dot of 2^17 floats on new views
        of the same arrays: 97 -> 65 us a call, Xeon PoCL 3.0, interleaved)."""
        if nbytes > SMALL_BYTES:
            last = lane.large.get(name)
            if last is not None and last[0] == address and last[1] == nbytes:
                return last[2]
            buf = runtime.host_buffer_at(lane.dc, address, nbytes)
            lane.large[name] = (address, nbytes, buf)
            return buf
        key: tuple = (address, nbytes)
        if x.ndim == 0:  # a number, often made anew for each call: a copy of it, kept by value
            key = (x.dtype.char, x.tobytes())
            buf = lane.small.get(key)
            if buf is None:
                if len(lane.small) >= SMALL_KEPT:
                    del lane.small[next(iter(lane.small))]
                buf = lane.small[key] = runtime.small_buffer(lane.dc, x)
            return buf
        buf = lane.small.get(key)
        if buf is None:
            if len(lane.small) >= SMALL_KEPT:
                del lane.small[next(iter(lane.small))]
            buf = lane.small[key] = runtime.host_buffer(lane.dc, x, write=False)
        return buf

    def _staged(self, dc: runtime.DeviceContext, shape: _Shape, leaves: list[Any], staged: list[int]) -> list[Any]:
        """`leaves` with those at `staged` made usable: device arrays of another device read back,
        numbers as arrays, and arrays that are not C-contiguous (or, on a zero-copy device, not
        aligned) copied once into aligned memory, after checking that the copies fit the device."""
        out = list(leaves)
        extra = 0
        for k in staged:
            x = out[k]
            name, dtype, nbytes = shape.inputs[k]
            if isinstance(x, DeviceArray):
                if x.context.context == dc.context:
                    continue
                x = x.numpy()
            elif type(x) is not np.ndarray:
                x = np.asarray(x, dtype=dtype)
            out[k] = x
            if dc.zero_copy or not x.flags.c_contiguous:
                extra += nbytes
        dev = dc.device
        if dev.global_mem_bytes and shape.fixed_bytes + extra > dev.global_mem_bytes:
            raise DeviceError(f"the call needs {shape.fixed_bytes + extra} bytes of memory ({extra} to copy "
                              f"arguments that are not contiguous or not aligned), more than {dev.name} has "
                              f"({dev.global_mem_bytes} bytes)",
                              hint="pass contiguous arrays (np.ascontiguousarray) the device can read in place")
        for k in staged:
            x = out[k]
            if isinstance(x, DeviceArray):
                continue
            if x.ndim == 0 or (not dc.zero_copy and x.flags.c_contiguous):
                out[k] = np.ascontiguousarray(x)
                continue
            out[k] = runtime.aligned_copy(x)
        return out

    def _run(self, shape: _Shape, leaves: list[Any], targets: list[np.ndarray] | None,
             keep: bool, sync: bool, record: tuple[_Lane, tuple] | None = None) -> tuple[Any, list[Any]]:
        """Launch the plan `shape` on `leaves`; returns (the results, the events). With `record`
        (the calling lane and the call's arguments), a call that can run again as it is (numpy
        arrays used in place, numbers, results returned as numpy arrays) is kept as the lane's
        `replay`."""
        lane = self._lane()
        dc = lane.dc
        zero = dc.zero_copy
        bufs, held, waits, misaligned, staged = self._bind_inputs(lane, shape, leaves)
        hosts: list[np.ndarray | None] = []
        direct = [zero and runtime.aligned(t, self._align) and not any(
            isinstance(x, np.ndarray) and np.may_share_memory(t, x) for x in leaves) for t in targets or ()]
        copied = zero and not keep and targets is None and shape.copied
        for k, (name, dtype, shp, nbytes) in enumerate(shape.outputs):
            if copied:  # the thread's kept array, copied out once the kernels are done
                kept = lane.results.get(name)
                if kept is None or kept[0].shape != shp or kept[0].dtype != dtype:
                    fresh = runtime.HOST.empty(shp, dtype, nbytes)
                    kept = lane.results[name] = (fresh, runtime.result_buffer(dc, fresh))
                hosts.append(kept[0])
                bufs[name] = kept[1]
                continue
            if direct and direct[k]:
                host = cast(list[np.ndarray], targets)[k]  # the caller's array, written in place
            elif zero or not keep:
                host = runtime.HOST.empty(shp, dtype, nbytes)
            else:
                host = None
            if zero:
                bufs[name] = runtime.result_buffer(dc, cast(np.ndarray, host))
            elif keep:
                bufs[name] = runtime.device_buffer(dc, nbytes)
            else:
                bufs[name] = lane.pool.get(name, nbytes)
            hosts.append(host)
        trace: list[tuple] | None = None
        if record is not None and zero and not keep and targets is None and not waits \
                and all(type(x) is np.ndarray and x.ndim and x is a or type(a) in _NUMBERS
                        for x, a in zip(leaves, record[1])):
            trace = []
        events = self._launched(lane, shape, bufs, waits, misaligned, trace)
        replay = None
        if trace is not None and record is not None and all(type(record[1][k]) in _NUMBERS for k in staged):
            replay = _replay(self, lane, shape, record[1], bufs, trace, copied)
        if keep:
            if sync:
                self._wait(dc, shape, events)
            last = None if sync or not events else events[-1]
            kept = tuple(held) if last is not None else ()
            results = [DeviceArray(dc, bufs[name], shp, dtype, host=h, event=last, held=kept)
                       for (name, dtype, shp, _), h in zip(shape.outputs, hosts)]
            return _assembled(shape.layout, results, keep=True), events
        if zero:
            self._wait(dc, shape, events)
            if replay is not None and record is not None:  # kept once its kernels ran
                record[0].replay = replay
            if copied:
                hosts = [h.copy() for h in cast(list[np.ndarray], hosts)]
        else:
            for (name, _, _, _), host in zip(shape.outputs, cast(list[np.ndarray], hosts)):
                runtime.download(dc, host.reshape(-1), bufs[name])
        if targets is None:
            return _assembled(shape.layout, hosts, keep=False), events
        for target, host, inplace in zip(targets, cast(list[np.ndarray], hosts), direct):
            if not inplace:
                np.copyto(target, host)
        return _assembled(shape.layout, targets, keep=True), events

    @staticmethod
    def _wait(dc: runtime.DeviceContext, shape: _Shape, events: list[Any]) -> None:
        """Wait for the call's kernels: polling first when this shape's last wait was short
        (`runtime.wait`), and remembering how long this one took."""
        spin = runtime.SPIN_S if shape.waited[0] <= runtime.SPIN_S else 0.0
        shape.waited[0] = runtime.wait(dc, events[-1] if events else None, spin, shape.waited[0])

    def _launched(self, lane: _Lane, shape: _Shape, bufs: dict[str, Any], waits: list[Any],
                  misaligned: bool = False, trace: list[tuple] | None = None) -> list[Any]:
        """Enqueue the plan's launches with `bufs` (the any-alignment variant's kernels when a
        buffer is `misaligned` for the program's vectors); returns their events. `trace` gets
        each launch's (kernel object, global size, local size, argument values)."""
        events = []
        kernels = self._relaxed_kernels(lane) if misaligned else lane.kernels
        wait_for = waits or None
        for kernel, gsize, lsize, args in shape.launches:
            values = [bufs[a] if type(a) is str else a for a in args]
            k = kernels[kernel]
            if trace is not None:
                trace.append((k, gsize, lsize, values))
            if shape.small:  # set only the arguments that changed since this thread's last launch of it
                events.append(runtime.launch(lane.dc, k, gsize, lsize, values, lane.args, wait_for))
            else:  # sets every argument: what `lane.args` remembered for this kernel is stale
                lane.args.pop(id(k), None)
                events.append(runtime.enqueue(lane.dc, k, gsize, lsize, values, wait_for))
            wait_for = None
        return events

    def _timed(self, shape: _Shape, leaves: list[Any], repeat: int) -> list[float]:
        """Kernel seconds of `repeat` runs after a warm-up, reading and writing where a call does, each
        run alone on the device (the last finished before the next is enqueued)."""
        lane = self._lane()
        bufs, held, waits, misaligned, _ = self._bind_inputs(lane, shape, leaves)
        for name, dtype, shp, nbytes in shape.outputs:  # where a call writes its results
            if lane.dc.zero_copy:
                host = runtime.HOST.empty(shp, dtype, nbytes)
                held.append(host)
                bufs[name] = runtime.result_buffer(lane.dc, host)
            else:
                bufs[name] = lane.pool.get(name, nbytes)
        self._launched(lane, shape, bufs, waits, misaligned)
        runtime.finish(lane.dc)
        runs = []
        for _ in range(repeat):  # one run at a time, as calls run: PoCL stamps a kernel queued behind
            runs.append(self._launched(lane, shape, bufs, [], misaligned))  # another with that one's
            runtime.finish(lane.dc)  # time too (1.5-2x GEMV's kernel time, the last of 3 queued exact)
        del held
        return [runtime.seconds(events) for events in runs]

    def _ndrange(self, launch: Launch, sizes: dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        gsize = tuple(evaluate(g, sizes) for g in launch.global_size)
        if launch.local_size is None:
            dev = self.device
            if dev.kind == "cpu" and 0 not in gsize:
                return gsize, spread(gsize, dev.compute_units, dev.max_work_group_size)
            return gsize, None
        lsize = tuple(evaluate(s, sizes) for s in launch.local_size)
        dev = self.device
        bad = [d for d, (g, s) in enumerate(zip(gsize, lsize)) if s < 1 or g % s]
        if bad or len(gsize) != len(lsize):
            raise DeviceError(f"kernel {launch.kernel}: local size {lsize} does not divide global size {gsize}")
        if int(np.prod(lsize)) > dev.max_work_group_size or any(
                s > m for s, m in zip(lsize, dev.max_work_item_sizes)):
            raise DeviceError(f"kernel {launch.kernel}: work-group {lsize} exceeds {dev.name}'s limits "
                              f"(at most {dev.max_work_group_size} work-items, {dev.max_work_item_sizes} "
                              "per dimension)")
        return gsize, lsize


def spread(gsize: tuple[int, ...], units: int, most: int) -> tuple[int, ...] | None:
    """The local size of a launch over `gsize` whose program leaves it free, on a CPU of `units`
    compute units taking work-groups of up to `most` work-items: None (the driver's choice) when
    the range is larger than one work-group, else one that makes at least `units` work-groups
    (the slowest dimension split first). A driver gives such a range one group when its
    work-items are few (PoCL 3.0: fewer than 4 x the preferred multiple per compute unit), so one
    core ran it all, though our work-items each loop over whole rows or columns: col_sums
    8192x768's 48 work-items took 1.34 ms in one group, 0.68 ms in 8."""
    total = 1
    for g in gsize:
        total *= g
    if total > most or total < 2 or units < 2:
        return None
    local = list(gsize)
    groups = 1
    for d in reversed(range(len(local))):
        if groups >= units:
            break
        need = -(-units // groups)  # the split of this dimension that reaches `units` groups
        split = next((k for k in range(need, local[d] + 1) if local[d] % k == 0), local[d])
        local[d] //= split
        groups *= split
    return tuple(local)


@dataclass(frozen=True, eq=False, slots=True)
class _Shape:
    """The host side of the calls with one shape of arguments, worked out once: the program that
    runs them (this or a specialised one), the sizes, per input leaf (buffer, dtype, bytes), the
    temporaries (buffer, bytes), the local memories, per output (buffer, dtype, numpy shape, bytes),
    the launches (kernel, global size, local size, arguments: buffer names or size values), how
    the outputs make the result, the bytes the results and temporaries take, and how long the
    last call waited for its kernels (`Program._wait`)."""

    program: Program
    sizes: dict[str, int]
    inputs: tuple[tuple[str, np.dtype, int], ...]
    temps: tuple[tuple[str, int], ...]
    locals_: tuple[tuple[str, Any], ...]
    outputs: tuple[tuple[str, np.dtype, tuple[int, ...], int], ...]
    launches: tuple[tuple[str, tuple[int, ...], tuple[int, ...] | None, tuple[Any, ...]], ...]
    layout: Any
    fixed_bytes: int
    small: bool  # every argument and result at most SMALL_BYTES: kernel arguments set only when changed
    copied: bool  # the results take at most COPIED_BYTES: written to the thread's kept arrays, returned as copies
    waited: list[float] = field(default_factory=lambda: [0.0])  # seconds the last call waited for its kernels


@dataclass(frozen=True, eq=False, slots=True)
class _Replay:
    """A thread's last call of a program on numpy arrays, ready to run again (`Program._replayed`):
    per argument, (a weak reference to it, its shape, strides, dtype, address), or for a number
    (None, its type, its value, its sign, 0: -0.0 equals 0.0, but a kernel tells them apart);
    the program and lane that ran it (a specialised program's, where one did) and that lane's
    buffer pool then; the shape's host plan; the launches (kernel object, global size, local
    size, argument values, with None for a new result array's buffer); per output written to
    the lane's kept (host array, buffer), its name and that pair; for the launches that write new
    result arrays, by id of their values, the (argument index, output name) of each (empty when
    every result is kept); whether the result is one scalar."""

    args: tuple[tuple[Any, Any, Any, Any, int], ...]
    program: Program
    lane: _Lane
    pool: runtime.BufferPool
    shape: _Shape
    launches: tuple[tuple[Any, tuple[int, ...], tuple[int, ...] | None, list[Any]], ...]
    kept: tuple[tuple[str, tuple], ...]
    fresh: dict[int, tuple[tuple[int, str], ...]]
    scalar: bool


def _replay(program: Program, lane: _Lane, shape: _Shape, arrays: tuple, bufs: dict[str, Any],
            trace: list[tuple], copied: bool) -> _Replay | None:
    """The `_Replay` of a call `program` just launched on `lane` with `arrays` (numpy arrays it
    read in place, and numbers; `trace`: its launches); None where an array takes no weak
    reference."""
    try:
        args = tuple((None, type(x), x, math.copysign(1.0, x), 0) if type(x) in _NUMBERS else
                     (weakref.ref(x), x.shape, x.strides, x.dtype, runtime.address(x)) for x in arrays)
    except TypeError:
        return None
    kept = tuple((name, lane.results[name]) for name, *_ in shape.outputs) if copied else ()
    new = {id(bufs[name]): name for name, *_ in shape.outputs} if not copied else {}
    fresh = {}
    launches = []
    for k, gsize, lsize, values in trace:
        slots = tuple((i, new[id(v)]) for i, v in enumerate(values) if id(v) in new)
        if slots:  # this call's result buffers left out: each replay sets new ones (nor is this result held)
            values = [None if id(v) in new else v for v in values]
            fresh[id(values)] = slots
        launches.append((k, gsize, lsize, values))
    scalar = shape.layout[0] == "leaf" and bool(shape.layout[2]) and copied
    return _Replay(args, program, lane, lane.pool, shape, tuple(launches), kept, fresh, scalar)


_MISS = object()  # `Program._replayed`: the call is not the thread's last one
_NUMBERS = frozenset((int, float, np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64, np.int8,
                      np.uint8, np.int16, np.uint16, np.float16))  # arguments a replay compares by type and value

MAX_SHAPES = 64  # host plans remembered per program (all forgotten when a 65th shape comes)
SMALL_BYTES = 256 << 10  # arguments up to this size keep their in-place buffers across calls ...
SMALL_KEPT = 16  # ... this many per thread and program
COPIED_BYTES = 8192  # results up to this size: kernels write kept arrays, a call returns copies (`Program._run`):
# a new array from the host pool, its buffer and its return to the pool cost a call ~4 us, a small copy under 1 us
# (axpy calls, Xeon PoCL 3.0, medians of 15 interleaved rounds, copies against the pool: 8 KiB results 47.6/50.2
# against 54.2/54.2 us; 16 KiB 53.2/53.7 against 54.8/54.4; 64 KiB 60.8/61.3 against 53.0/54.9)


class _Mismatch(Exception):
    """The arguments do not have the parameters' tuple structure."""


def _tree(t: Type) -> Any:
    """The tuple structure of a parameter of type `t`: None for one array or scalar, a tuple of
    structures for a tuple or an array of tuples (passed as a tuple of arrays)."""
    if isinstance(t, TupleType):
        return tuple(_tree(e) for e in t.elems)
    b = base_type(t)
    if isinstance(t, ArrayType) and isinstance(b, TupleType):
        return tuple(_tree(_rewrap(t, c)) for c in b.elems)
    return None


def _flatten(a: Any, tree: Any, out: list[Any]) -> None:
    if tree is None:
        out.append(a)
        return
    if not isinstance(a, tuple) or len(a) != len(tree):
        raise _Mismatch
    for x, t in zip(a, tree):
        _flatten(x, t, out)


def _stand_in(a: Any, values: bool) -> Any:
    """An argument as the full check reads it: a device array as an array of its shape and dtype
    (its values read back only with `values`: index arrays are checked)."""
    if isinstance(a, tuple):
        return tuple(_stand_in(x, values) for x in a)
    if isinstance(a, DeviceArray):
        return a.numpy() if values else np.broadcast_to(np.zeros((), a.dtype), a.shape)
    if _is_cl_array(a):
        return a.get() if values else np.broadcast_to(np.zeros((), a.dtype), a.shape)
    if hasattr(a, "__dlpack__") and not isinstance(a, np.ndarray):
        try:
            return np.from_dlpack(a)
        except (TypeError, BufferError, RuntimeError, ValueError):
            return a
    return a


def _is_cl_array(x: Any) -> bool:
    return type(x).__module__.startswith("pyopencl") and hasattr(x, "base_data")


def _input_order(inputs: dict[int, list[str]], name: str) -> tuple[int, int]:
    for k, names in inputs.items():
        if name in names:
            return k, names.index(name)
    raise LiftValueError(f"input buffer {name} names no parameter")


def _layout(t: Type, sizes: dict[str, int], index: Any, outputs: list, specs: dict, names: tuple[str, ...]) -> Any:
    """How the flat outputs (in leaf order) make a result of type `t`: ("tuple", parts) or
    ("leaf", output index, scalar?); appends (buffer, dtype, shape, bytes) per output to `outputs`."""
    if isinstance(t, TupleType):
        return ("tuple", tuple(_layout(e, sizes, index, outputs, specs, names) for e in t.elems))
    b = base_type(t)
    if isinstance(b, TupleType):
        return ("tuple", tuple(_layout(_rewrap(t, c), sizes, index, outputs, specs, names) for c in b.elems))
    k = next(index, None)
    if k is None:
        raise LiftValueError(f"the result type {t} has more components than the plan has outputs")
    spec = specs[names[k]]
    shape = leaf_shape(t, sizes)
    count = evaluate(spec.count, sizes)
    if int(np.prod(shape)) != count:
        raise LiftValueError(f"an output buffer has {count} elements, the result type {t} needs "
                             f"{int(np.prod(shape))}")
    outputs.append((spec.name, spec.scalar.dtype, shape, count * spec.scalar.dtype.itemsize))
    return ("leaf", k, isinstance(t, ScalarType))


def _assembled(layout: Any, hosts: list[Any], *, keep: bool) -> Any:
    """The result from the outputs: a scalar output read as a numpy scalar unless `keep`."""
    if layout[0] == "tuple":
        return tuple(_assembled(part, hosts, keep=keep) for part in layout[1])
    _, k, scalar = layout
    host = hosts[k]
    return host[()] if scalar and not keep else host


def _out_targets(out: Any, shape: _Shape, node: Node | None) -> list[np.ndarray] | None:
    """Per output, the caller's `out=` array, checked; None without `out=`. (The kernels write
    it in place where it is C-contiguous, aligned and overlaps no argument; else the result is
    copied into it.)"""
    if out is None:
        return None
    arrays: list[Any] = []
    try:
        _flatten_layout(out, shape.layout, arrays)
    except _Mismatch:
        raise LiftTypeError("out= must have the result's structure (a tuple of arrays for a tuple result)",
                            node=node) from None
    targets = []
    for target, (_, dtype, shp, _) in zip(arrays, shape.outputs):
        if not isinstance(target, np.ndarray):
            raise LiftTypeError(f"out= takes numpy arrays, got {type(target).__name__}", node=node)
        if target.shape != shp or target.dtype != dtype:
            raise LiftTypeError(f"out= has shape {target.shape} and dtype {target.dtype}, the result has shape "
                                f"{shp} and dtype {dtype}", node=node, expected=(shp, dtype),
                                got=(target.shape, target.dtype))
        if not target.flags.writeable:
            raise LiftValueError("out= is read-only", node=node)
        targets.append(target)
    return targets


def _flatten_layout(out: Any, layout: Any, arrays: list[Any]) -> None:
    if layout[0] == "leaf":
        arrays.append(out)
        return
    if not isinstance(out, tuple) or len(out) != len(layout[1]):
        raise _Mismatch
    for x, part in zip(out, layout[1]):
        _flatten_layout(x, part, arrays)


# ------------------------------------------------------------ devices and limits


@dataclass(frozen=True, slots=True)
class Offline:
    """A program compiled for a device profile that is not attached here, and why it is not."""

    device: Device
    reason: str

    def error(self) -> DeviceError:
        """The error of running it: the device is not attached."""
        return DeviceError(f"{self.device.name} is not attached: this program was compiled offline for its "
                           f"profile and cannot run here ({self.reason})",
                           hint="its .source, .kernels, .ndrange, .memory_bytes, .barriers and .choices are "
                                "those for that device; to run, compile without device= (the attached device)")


def _attach(device: Any) -> tuple[runtime.DeviceContext | None, Offline | None]:
    """The attached device to build for; an offline profile without its device gives `Offline`."""
    if isinstance(device, Device) and not device.live:
        try:
            return runtime.open_device(device), None
        except DeviceError as e:
            return None, Offline(device, e.message)
    return runtime.open_device(device), None


def check_limits(plan: KernelSource, device: Device, sizes: dict[str, int] | None = None, *,
                 allocations: bool = True) -> None:
    """`DeviceError` unless the plan's work-groups, local memory and (with `allocations`) global
    buffers fit `device`.

    Without `sizes` a symbolic quantity is checked by its upper bound when it has one (the
    rest is checked when the program runs); with `sizes` everything is evaluated."""
    problems = []
    for ln in plan.launches:
        dims = [_bound(s, sizes) for s in ln.local_size or ()]
        for d, (s, top) in enumerate(zip(dims, device.max_work_item_sizes)):
            if s is not None and s > top:
                problems.append(f"kernel {ln.kernel}: a work-group has {s} work-items in dimension {d}, "
                                f"more than {top}")
        if dims and None not in dims and int(np.prod(cast(list[int], dims))) > device.max_work_group_size:
            problems.append(f"kernel {ln.kernel}: a work-group of {tuple(dims)} has more than "
                            f"{device.max_work_group_size} work-items")
    local = _bound(_space_bytes(plan, "local"), sizes)
    if local is not None and local > device.local_mem_bytes:
        problems.append(f"the kernels use {local} bytes of local memory, more than {device.local_mem_bytes}")
    for b in plan.buffers:
        n = _bound(b.count * b.scalar.dtype.itemsize, sizes) if allocations and b.space == "global" else None
        if n is not None and n > device.max_alloc_bytes:
            problems.append(f"buffer {b.name} needs {n} bytes, more than the {device.max_alloc_bytes} "
                            "one allocation may have")
    if problems:
        raise DeviceError(f"the program does not fit {device.name}: " + "; ".join(problems),
                          hint="choose smaller tile or work-group sizes (choices=, local_size=)")


def _space_bytes(plan: KernelSource, space: str) -> Arith:
    if plan.memory_bytes:
        return plan.memory_bytes.get(space, as_arith(0))
    return sum((b.count * b.scalar.dtype.itemsize for b in plan.buffers if b.space == space), as_arith(0))


def _bound(x: Arith, sizes: dict[str, int] | None) -> int | None:
    """`x` evaluated for `sizes`, else its constant upper bound, else None."""
    if sizes is not None:
        try:
            return evaluate(x, sizes)
        except KeyError:
            pass
    top = upper(as_arith(x))
    return top.value if isinstance(top, Cst) else None


# ----------------------------------------------------------------------- helpers


def _inputs_by_param(plan: KernelSource) -> dict[int, list[str]]:
    """Input buffer names per parameter index, in plan order (one per tuple component)."""
    out: dict[int, list[str]] = {}
    for b in plan.buffers:
        if b.role == "input":
            if b.param is None:
                raise LiftValueError(f"input buffer {b.name} names no parameter")
            out.setdefault(b.param, []).append(b.name)
    return out


def _rewrap(t: Type, inner: Type) -> Type:
    return ArrayType(_rewrap(t.elem, inner), t.size) if isinstance(t, ArrayType) else inner


def _assemble(t: Type, hosts: Any, sizes: dict[str, int]) -> Any:
    """Reshape the flat outputs (in leaf order) to the structure of `t`."""
    if isinstance(t, TupleType):
        return tuple(_assemble(e, hosts, sizes) for e in t.elems)
    b = base_type(t)
    if isinstance(b, TupleType):
        return tuple(_assemble(_rewrap(t, c), hosts, sizes) for c in b.elems)
    host = next(hosts)
    want = leaf_shape(t, sizes)
    if int(np.prod(want)) != host.size:
        raise LiftValueError(f"an output buffer has {host.size} elements, the result type {t} needs "
                             f"{int(np.prod(want))}")
    if isinstance(t, ScalarType):
        return host[0]
    return host.reshape(want)


def _int_arg(name: str, sizes: dict[str, int], ctype: str = "int") -> np.integer:
    v = sizes[name]
    if ctype == "long":
        return np.int64(v)
    if not 0 <= v <= INT32_MAX:
        raise LiftValueError(f"size {name} = {v} does not fit the kernel's int argument")
    return np.int32(v)


__all__ = ["Program", "NDRange", "Offline", "check_limits"]
