"""`Program`: a `KernelSource` built for a live device, called like a function on numpy arrays.

Stage `KernelSource -> Program`. A call binds the size variables from the argument shapes,
checks every argument's dtype and shape (errors name the argument) and the program's size
conditions (the code relies on them: `as_vector(8)` of `[Float]N` reads aligned float8s),
uploads the inputs into device buffers that are reused across calls, runs the launches in
order and returns the outputs reshaped to the result type: a numpy array (vectors as a trailing axis), a numpy
scalar for a scalar result, and a tuple for a tuple result or an array of tuples.
A program compiled by `lift.compile(expr)` from a program with symbolic sizes may carry a
specialiser (`lift.specialise`): after the checks, a call runs the program specialised to its
sizes when there is one for them, and this (generic) program otherwise or when that one fails.

A `Program` may be called from several threads at once: each thread runs its calls on its own
queue, kernel objects and device buffers (`_Lane`), and the first call with new sizes
specialises the program once under a lock (`lift.specialise`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lift import runtime
from lift.arith import Arith, Cst, as_arith, evaluate, try_evaluate, upper
from lift.devices import Device
from lift.errors import DeviceError, LiftTypeError, LiftValueError
from lift.gather import check_indices, index_inputs
from lift.interpret import arguments, check_conditions, leaf_shape, leaves
from lift.ir.nodes import Lambda, Node
from lift.plan import BarrierInfo, KernelSource, Launch
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
    held: dict[str, np.ndarray] = field(default_factory=dict)
    last: Any = None


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
        check_limits(plan, self._target, allocations=False)  # allocations: when a call binds the sizes
        if self._dc is None:  # compiled for a profile whose device is not attached: describe only
            self.build_info = None
            return
        options, cache_dir = self._build
        self.build_info = runtime.build(self._dc, plan.source, options=options, cache_dir=cache_dir)
        self._lane()  # the building thread's kernels, now: a kernel missing from the build is an error here

    def _lane(self) -> _Lane:
        """The calling thread's queue, kernels and buffers (made at its first call)."""
        lane = getattr(self._local, "lane", None)
        built = self.build_info
        if lane is None or lane.built is not built:
            assert self._dc is not None and built is not None, "an offline program has no lanes (its calls raise first)"
            dc = runtime.for_thread(self._dc)
            lane = _Lane(dc, built, runtime.kernels(built, self.plan.kernels), runtime.BufferPool(dc))
            self._local.lane = lane
        return lane

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
        sizes = self.sizes(*arrays)
        return {space: evaluate(n, sizes) for space, n in self.memory_bytes.items()}

    def check_limits(self, *arrays: Any) -> None:
        """`DeviceError` unless the work-groups, local memory and buffers for `arrays` fit the device."""
        check_limits(self.plan, self.device, self.sizes(*arrays))

    @property
    def device_buffers(self) -> dict[str, Any]:
        """The global device buffers the calling thread's calls hold for reuse, by buffer name."""
        return self._lane().pool.buffers() if self._dc is not None else {}

    def sizes(self, *arrays: Any) -> dict[str, int]:
        """The size variables bound from the shapes of `arrays`."""
        return self._bind(arrays)[0]

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
            bound, _ = self._bind(arrays)
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
        return self._specialiser.get(sizes).program if self._specialiser is not None else None

    def __repr__(self) -> str:
        where = "on" if self.attached else "compiled offline for"
        return f"<lift.Program {', '.join(self.kernels)} {where} {self.device.name}>"

    # --------------------------------------------------------------------- running

    def __call__(self, *arrays: Any) -> Any:
        """Run on numpy arguments and return numpy results."""
        self._require_device()
        sizes, leaves = self._bind(arrays)  # the arguments checked as ever, before any specialisation
        done, out = self._delegated(sizes, lambda special: special(*arrays))
        if done:
            return out
        args = self._upload(sizes, leaves)
        self._launch(sizes, args)
        return self._download(sizes)

    def time(self, *arrays: Any, repeat: int = 5) -> list[float]:
        """Seconds per run (summed kernel event times, transfers excluded), after one warm-up."""
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            raise LiftValueError(f"repeat must be an int of at least 1, got {repeat!r}")
        self._require_device()
        sizes, leaves = self._bind(arrays)
        done, out = self._delegated(sizes, lambda special: special.time(*arrays, repeat=repeat))
        if done:
            return out
        args = self._upload(sizes, leaves)
        self._launch(sizes, args)
        runs = [self._launch(sizes, args) for _ in range(repeat)]
        runtime.finish(self._lane().dc)
        return [runtime.seconds(events) for events in runs]

    def _delegated(self, sizes: dict[str, int], run: Callable[[Program], Any]) -> tuple[bool, Any]:
        """(True, `run(p)`) with `p` the program specialised to `sizes`, or (False, None) when this
        program runs the call: none for `sizes`, or it failed (`lift.specialise`: then refused)."""
        if self._specialiser is None:
            return False, None
        special = self._routed(sizes)
        self._runs(special or self)
        if special is None:
            return False, None
        try:
            return True, run(special)
        except Exception as err:  # noqa: BLE001 - the generic program runs the call instead
            self._specialiser.refuse(sizes, err)
            self._runs(self)
            return False, None

    def _runs(self, target: Program) -> None:
        """`target` runs this call: the program that ran the calling thread's last one (this or a
        specialised one) drops that thread's device buffers, so that, as without specialisation, one
        shape's are held per thread."""
        lane = self._lane()
        last, lane.last = lane.last, target
        if isinstance(last, Program) and last is not target and last._dc is not None:
            held = last._lane()
            held.pool = runtime.BufferPool(held.dc)

    def _require_device(self) -> None:
        if self.offline is not None:
            raise self.offline.error()

    def _bind(self, arrays: tuple) -> tuple[dict[str, int], dict[str, np.ndarray]]:
        types = list(self.plan.param_types)
        sizes, values = arguments(types, arrays, self.node)  # exactly as lift.interpret checks them
        for name in self.plan.size_vars:
            if name not in sizes:
                raise LiftTypeError(f"size {name} is not the length of any argument", node=self.node)
        self._check(sizes)
        check_indices(self._gathers, values, sizes)  # before any launch, as lift.interpret raises
        flat: dict[str, np.ndarray] = {}
        for k, value in enumerate(values):
            parts = [np.ascontiguousarray(v).reshape(-1) for v in leaves(value)]
            names = self._inputs.get(k, [])
            if len(names) != len(parts):
                raise LiftValueError(f"the plan has {len(names)} input buffer(s) for argument {k}, "
                                     f"which has {len(parts)} component(s)", node=self.node)
            flat.update(zip(names, parts))
        return sizes, flat

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

    def _upload(self, sizes: dict[str, int], leaves: dict[str, np.ndarray]) -> dict[str, Any]:
        lane = self._lane()
        args: dict[str, Any] = {}
        for b in self.plan.buffers:
            nbytes = evaluate(b.count, sizes) * b.scalar.dtype.itemsize
            if b.space == "local":
                args[b.name] = runtime.local_memory(nbytes)
                continue
            args[b.name] = lane.pool.get(b.name, nbytes)
            if b.role == "input":
                host = leaves[b.name]
                if host.nbytes != nbytes:
                    raise LiftTypeError(f"buffer {b.name} holds {nbytes} bytes, its argument has "
                                        f"{host.nbytes}", node=self.node, expected=nbytes, got=host.nbytes)
                runtime.upload(lane.dc, args[b.name], host)
        lane.held = leaves  # keep the host arrays alive until the copies complete
        return args

    def _launch(self, sizes: dict[str, int], args: dict[str, Any]) -> list[Any]:
        lane = self._lane()
        events = []
        for launch in self.plan.launches:
            gsize, lsize = self._ndrange(launch, sizes)
            if 0 in gsize:
                continue  # no work (e.g. no whole chunk of a short array; OpenCL 1.2 refuses a 0 range)
            values = [args[a.name] if a.kind == "buffer" else _int_arg(a.name, sizes, a.ctype) for a in launch.args]
            events.append(runtime.enqueue(lane.dc, lane.kernels[launch.kernel], gsize, lsize, values))
        return events

    def _ndrange(self, launch: Launch, sizes: dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        gsize = tuple(evaluate(g, sizes) for g in launch.global_size)
        if launch.local_size is None:
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

    def _download(self, sizes: dict[str, int]) -> Any:
        lane = self._lane()
        hosts = []
        for name in self.plan.outputs:
            spec = self._specs[name]
            host = np.empty(evaluate(spec.count, sizes), dtype=spec.scalar.dtype)
            runtime.download(lane.dc, host, lane.pool.get(name, host.nbytes))
            hosts.append(host)
        lane.held = {}
        it = iter(hosts)
        out = _assemble(self.plan.result_type, it, sizes)
        if next(it, None) is not None:
            raise LiftValueError(f"the plan has {len(hosts)} outputs, more than {self.plan.result_type} "
                                 "has components", node=self.node)
        return out


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
        if dims and None not in dims and int(np.prod(dims)) > device.max_work_group_size:
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
