"""The pyopencl runtime: contexts, the on-disk build cache, device buffers and launches.

Stage `KernelSource -> Program` (see `lift.program`) runs on what this module provides:
one context and one profiling queue per device, programs built through a cache of device
binaries, buffers reused across calls, and enqueued launches. The build cache lives under
`$XDG_CACHE_HOME/liftcl` (or `~/.cache/liftcl`) unless a `cache_dir` is given. An entry is
`MAGIC`, a header line with the payload's sha256, its length and the entry's own cache key,
and the binary; it is written to a temporary file and renamed, so concurrent processes never
see half an entry. An entry whose checksum fails, whose key is not the one asked for (a valid
binary of another program stored under this name), or whose binary the driver rejects, is
rebuilt from source and replaced. The folders it creates are private (0700), entries are 0600,
and an entry owned by another user is never loaded.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from lift import devices
from lift.devices import Device, caches
from lift.errors import DeviceError
from lift.files import owned, private_folder
from lift.version import __version__

MAGIC = b"LIFTCL-BINARY 2\n"
CacheDir = str | os.PathLike | None | bool  # None: default folder; False: no cache


@functools.cache
def _cl() -> Any:
    """pyopencl, imported once the caches are prepared (a call's path asks for it several times)."""
    caches.prepare()  # unwritable PoCL / pyopencl caches: a fallback and one warning
    import pyopencl

    return pyopencl


# ------------------------------------------------------------------------ contexts


@dataclass(frozen=True, eq=False)
class DeviceContext:
    """A live device with its context and the in-order profiling queue of the thread `owner`
    (`for_thread` gives another thread the same context with a queue of its own).

    `zero_copy`: the device computes in host memory (a CPU runtime): a buffer made on a host
    array (`USE_HOST_PTR`) aligned to `align` bytes is that array, so calls pass their arguments
    in place and kernels write results where the caller gets them; found by `_shares_host` when
    the context opens, never assumed. Otherwise (a GPU's own memory) calls copy."""

    device: Device
    cl_device: Any
    context: Any
    queue: Any
    owner: int = field(default_factory=threading.get_ident)
    zero_copy: bool = False
    align: int = 128


_CONTEXTS: dict[int, DeviceContext] = {}  # one per device, shared by every Program
_OPENING = threading.Lock()  # two threads' first calls open one context
_THREAD = threading.local()  # per thread: {id(shared context): that context with this thread's queue}


def open_device(device: Any = None) -> DeviceContext:
    """The context and profiling queue of `device` (see `lift.devices.find`), made once."""
    cl = _cl()
    d = devices.find(device)
    dc = _CONTEXTS.get(d.int_ptr)
    if dc is not None:
        return dc
    with _OPENING:
        dc = _CONTEXTS.get(d.int_ptr)
        if dc is not None:
            return dc
        try:
            ctx = cl.Context([d])
            queue = cl.CommandQueue(ctx, d, properties=cl.command_queue_properties.PROFILING_ENABLE)
        except cl.Error as e:
            raise DeviceError(f"cannot open OpenCL device {d.name!r}: {e}") from e
        profile = devices.describe(d)
        align = max(int(d.mem_base_addr_align) // 8, 64)
        dc = _CONTEXTS.setdefault(d.int_ptr, DeviceContext(profile, d, ctx, queue, zero_copy=_shares_host(
            profile, ctx, queue, align), align=align))
    return dc


_READ_IN_PLACE: Any = None  # the mem_flags of `host_buffer`, set when the first context opens
_WRITE_IN_PLACE: Any = None


def _shares_host(profile: Device, ctx: Any, queue: Any, align: int) -> bool:
    """Whether buffers made on host arrays are those arrays on this device: it says it shares host
    memory, and mapping such a buffer after a write gives back the host array itself (PoCL, Intel's
    CPU runtime; a discrete GPU keeps its own copy and maps through it)."""
    global _READ_IN_PLACE, _WRITE_IN_PLACE
    cl = _cl()
    _READ_IN_PLACE = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
    _WRITE_IN_PLACE = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
    if not profile.host_memory or os.environ.get("LIFTCL_ZERO_COPY", "1") == "0":
        return False
    host = aligned_empty(64, np.dtype(np.float32), align)
    host[:] = 0
    try:
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, hostbuf=host)
        cl.enqueue_fill_buffer(queue, buf, np.float32(1.5), 0, host.nbytes).wait()
        mapped, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ, 0, host.shape, host.dtype,
                                          is_blocking=True)
        same = mapped.__array_interface__["data"][0] == host.__array_interface__["data"][0]
        mapped.base.release(queue)
        queue.finish()
    except (cl.Error, ValueError, RuntimeError, TypeError):
        return False
    return bool(same and (host == 1.5).all())


def for_thread(dc: DeviceContext) -> DeviceContext:
    """`dc` with the calling thread's own in-order queue (made at its first use in the thread):
    the thread that opened the context keeps `dc.queue`. OpenCL queues are thread-safe, but one
    queue shared by threads makes every download wait for the other threads' work too."""
    if threading.get_ident() == dc.owner:
        return dc
    mine = getattr(_THREAD, "contexts", None)
    if mine is None:
        mine = _THREAD.contexts = {}
    out = mine.get(id(dc))
    if out is None or out.context is not dc.context:
        cl = _cl()
        try:
            queue = cl.CommandQueue(dc.context, dc.cl_device, properties=cl.command_queue_properties.PROFILING_ENABLE)
        except cl.Error as e:
            raise DeviceError(f"cannot open a queue on OpenCL device {dc.device.name!r}: {e}") from e
        out = mine[id(dc)] = replace(dc, queue=queue, owner=threading.get_ident())
    return out


# ------------------------------------------------------------------- build + cache


@dataclass(frozen=True, eq=False)
class Built:
    """A built cl.Program; `status` is "hit", "miss", "rebuilt" (bad entry) or "uncached"."""

    program: Any
    key: str
    path: Path | None
    status: str
    seconds: float


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/liftcl`, else `~/.cache/liftcl`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "liftcl"


def cache_key(source: str, device: Device, options: tuple[str, ...] = ()) -> str:
    """sha256 of the source, build options, device and driver, pyopencl and liftcl versions."""
    parts = [source, " ".join(options), device.key, _cl().VERSION_TEXT, __version__]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def build(dc: DeviceContext, source: str, *, options: tuple[str, ...] = (),
          cache_dir: CacheDir = None) -> Built:
    """Build `source` for the device, loading or storing its binary in the cache."""
    start = time.perf_counter()
    key = cache_key(source, dc.device, options)
    if cache_dir is False:
        prg = _build_source(dc, source, options)
        return Built(prg, key, None, "uncached", time.perf_counter() - start)
    folder = default_cache_dir() if cache_dir is None or isinstance(cache_dir, bool) else Path(cache_dir)
    path = folder / key[:2] / f"{key}.bin"
    binary = read_entry(path, key)
    status = "miss" if binary is None and not path.exists() else "rebuilt"
    if binary is not None:
        prg = _build_binary(dc, binary)
        if prg is not None:
            return Built(prg, key, path, "hit", time.perf_counter() - start)
    prg = _build_source(dc, source, options)
    write_entry(path, prg.get_info(_cl().program_info.BINARIES)[0], key)
    return Built(prg, key, path, status, time.perf_counter() - start)


def read_entry(path: Path, key: str | None = None) -> bytes | None:
    """The binary stored at `path`, or None if it is missing, truncated, corrupt, or (with
    `key`) stored for another key, or not owned by this user."""
    try:
        with path.open("rb") as f:
            if not owned(os.fstat(f.fileno())):
                return None
            data = f.read()
    except OSError:
        return None
    if not data.startswith(MAGIC):
        return None
    header, sep, payload = data[len(MAGIC):].partition(b"\n")
    fields = header.split()
    if not sep or len(fields) != 3 or not fields[1].isdigit():
        return None
    if key is not None and fields[2].decode("ascii", "replace") != key:
        return None
    digest, length = fields[0].decode("ascii", "replace"), int(fields[1])
    if length != len(payload) or length == 0 or hashlib.sha256(payload).hexdigest() != digest:
        return None
    return payload


def write_entry(path: Path, binary: bytes, key: str = "-") -> bool:
    """Store `binary` with its cache `key` at `path` atomically (temporary file, fsync, rename);
    False on I/O errors."""
    if not key or any(c.isspace() for c in key):
        raise ValueError(f"a cache key is one word, not {key!r}")
    header = MAGIC + f"{hashlib.sha256(binary).hexdigest()} {len(binary)} {key}\n".encode()
    try:
        private_folder(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".bin")
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header + binary)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def _build_binary(dc: DeviceContext, binary: bytes) -> Any | None:
    cl = _cl()
    try:
        return cl.Program(dc.context, [dc.cl_device], [binary]).build(cache_dir=False)
    except (cl.Error, ValueError, RuntimeError):
        return None  # an unusable binary (other driver, other process layout): rebuild


def _build_source(dc: DeviceContext, source: str, options: tuple[str, ...]) -> Any:
    cl = _cl()
    try:
        return cl.Program(dc.context, source).build(options=list(options), devices=[dc.cl_device],
                                                     cache_dir=False)
    except cl.Error as e:
        raise build_error(dc.device, source, str(e)) from None


def build_error(device: Device, source: str, log: str) -> DeviceError:
    """A DeviceError with the build log and the source lines the log points at."""
    lines = source.splitlines()
    # PoCL's clang `/tmp/x.cl:3:5:`, NVIDIA's `<kernel>:3:5:`, Intel's CPU runtime `1:3:5:` (source 1)
    cited = sorted({int(m.group(1)) for m in re.finditer(r"(?:\.cl|<[\w ]+>|^\d+):(\d+):\d+:", log, re.M)})
    shown = [f"  {n:4d} | {lines[n - 1]}" for n in cited if 0 < n <= len(lines)]
    first = next((ln.strip() for ln in log.splitlines() if "error:" in ln), "see the build log")
    text = f"OpenCL build failed on {device.name}: {first.split('error:', 1)[-1].strip()}"
    body = "\n".join(["  build log:", *("    " + ln for ln in log.strip().splitlines())])
    if shown:
        body += "\n  offending source lines:\n" + "\n".join(shown)
    err = DeviceError(text + "\n" + body, hint=devices.build_hint(log, device.platform_version))
    err.build_log = log
    return err


_SCALAR_DTYPES = {"int": np.int32, "long": np.int64}


def kernels(built: Built, names: tuple[str, ...], scalars: Mapping[str, tuple[str | None, ...]] | None = None
            ) -> dict[str, Any]:
    """The cl.Kernel objects of `built`, by name; `scalars`: per kernel, each argument's C type
    where it is a scalar ("int", "long"), else None. Declared, pyopencl packs a scalar argument
    in well under a microsecond; undeclared, it finds out how by trying the argument kinds in
    turn, which took 9 us for one `int` (pyopencl 2026.1), a third of a launch."""
    cl = _cl()
    try:
        out = {name: cl.Kernel(built.program, name) for name in names}
    except cl.Error as e:
        raise DeviceError(f"the built program lacks a kernel of {names}: {e}") from e
    for name, kinds in (scalars or {}).items():
        if name in out:
            out[name].set_scalar_arg_dtypes([None if c is None else _SCALAR_DTYPES[c] for c in kinds])
    return out


# ------------------------------------------------------------------------- buffers


class BufferPool:
    """Device buffers by name, reused across calls while their byte size is unchanged; those
    named in `zeroed` (the counters of `lift.codegen.tails`) start as zeros."""

    def __init__(self, dc: DeviceContext, zeroed: frozenset[str] = frozenset()) -> None:
        self._dc = dc
        self._buffers: dict[str, tuple[int, Any]] = {}
        self.zeroed = zeroed

    def get(self, name: str, nbytes: int) -> Any:
        """The buffer `name` of `nbytes` bytes; reallocated only when the size changes."""
        nbytes = max(int(nbytes), 1)
        held = self._buffers.get(name)
        if held is not None and held[0] == nbytes:
            return held[1]
        if nbytes > self._dc.device.max_alloc_bytes:
            raise DeviceError(f"buffer {name} needs {nbytes} bytes; {self._dc.device.name} allocates at most "
                              f"{self._dc.device.max_alloc_bytes} in one buffer")
        cl = _cl()
        try:
            if name in self.zeroed:
                buf = cl.Buffer(self._dc.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                hostbuf=np.zeros(nbytes, np.uint8))
            else:
                buf = cl.Buffer(self._dc.context, cl.mem_flags.READ_WRITE, nbytes)
        except cl.Error as e:
            raise DeviceError(f"cannot allocate {nbytes} bytes for buffer {name}: {e}") from e
        self._buffers[name] = (nbytes, buf)
        return buf

    def buffers(self) -> dict[str, Any]:
        """The buffers held, by name."""
        return {name: buf for name, (_, buf) in self._buffers.items()}


def device_buffer(dc: DeviceContext, nbytes: int, what: str = "a result") -> Any:
    """A new device buffer of `nbytes` bytes (a result kept on the device: never pooled)."""
    cl = _cl()
    try:
        return cl.Buffer(dc.context, cl.mem_flags.READ_WRITE, max(int(nbytes), 1))
    except cl.Error as e:
        raise DeviceError(f"cannot allocate {nbytes} bytes for {what}: {e}") from e


def host_buffer(dc: DeviceContext, host: np.ndarray, *, write: bool) -> Any:
    """A buffer that is `host` itself (a zero-copy device; `host` C-contiguous): the kernel
    reads the caller's array, or writes the array the caller gets."""
    cl = _cl()
    flags = _WRITE_IN_PLACE if write else _READ_IN_PLACE
    if flags is None:
        flags = (cl.mem_flags.READ_WRITE if write else cl.mem_flags.READ_ONLY) | cl.mem_flags.USE_HOST_PTR
    try:
        return cl.Buffer(dc.context, flags, hostbuf=host)
    except cl.Error as e:
        raise DeviceError(f"cannot use a host array of {host.nbytes} bytes in place: {e}") from e


def host_buffer_at(dc: DeviceContext, address: int, nbytes: int) -> Any:
    """`host_buffer` (read-only) on the `nbytes` of host memory at `address`, not holding the
    memory's owner alive: the caller uses it only while the owner lives."""
    memory: Any = (ctypes.c_char * nbytes).from_address(address)
    return host_buffer(dc, np.frombuffer(memory, np.uint8), write=False)


def small_buffer(dc: DeviceContext, host: np.ndarray) -> Any:
    """A read-only buffer holding a copy of the small array `host` (made at once)."""
    cl = _cl()
    return cl.Buffer(dc.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)


def _data_offset() -> int | None:
    """Where an ndarray object holds its data pointer (the `data` field of numpy's
    PyArrayObject_fields, after the object header): the byte offset at which probe arrays of
    several kinds (views at an offset, transposed, read-only, other dtypes) all hold the address
    their `__array_interface__` gives; None where no offset agrees (`address` then reads that)."""
    base = np.arange(64, dtype=np.float64)
    probes = [np.zeros(5, np.float32), base[3:], base.reshape(8, 8).T, np.arange(7, dtype=np.int8)[1::2],
              np.frombuffer(bytes(range(16)), np.uint8)[4:]]
    want = [p.__array_interface__["data"][0] for p in probes]
    for offset in range(8, 72, 8):
        if all(ctypes.c_void_p.from_address(id(p) + offset).value == w for p, w in zip(probes, want)):
            return offset
    return None


_DATA_OFFSET = _data_offset()
_POINTER_AT = ctypes.c_void_p.from_address


def address(a: np.ndarray) -> int:
    """The address of `a`'s first element (`a` a numpy array, of any subclass): read from the
    array object where `_data_offset` found its data pointer, in about 0.4 us; reading
    `__array_interface__` builds a dict and takes 3 us (12 us at a call's pace, when the kernels
    between calls have evicted the interpreter's caches)."""
    if _DATA_OFFSET is None:
        return a.__array_interface__["data"][0]
    return _POINTER_AT(id(a) + _DATA_OFFSET).value or 0


def aligned(a: np.ndarray, align: int) -> bool:
    """Whether `a` is C-contiguous and starts at a multiple of `align` bytes."""
    return a.flags.c_contiguous and address(a) % align == 0


def aligned_empty(shape: Any, dtype: np.dtype, align: int = 128) -> np.ndarray:
    """A new C-contiguous array whose data starts at a multiple of `align` bytes."""
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(n + align, np.uint8)
    start = -raw.__array_interface__["data"][0] % align
    return raw[start:start + n].view(dtype).reshape(shape)


class _Block:
    """Host memory of `HostMemory`: the aligned bytes, their address, and the buffers made on
    them per context (kept with the memory: PoCL takes tens of microseconds to make and first use
    a buffer on host memory a kernel writes, as long as a small call's kernel)."""

    __slots__ = ("slab", "address", "buffers")

    def __init__(self, slab: np.ndarray) -> None:
        self.slab = slab
        self.address = slab.__array_interface__["data"][0]
        self.buffers: dict[int, Any] = {}


def _lease_gone(lease: Any) -> None:
    try:
        lease.home.give_back(lease.block)
    except Exception:  # noqa: BLE001 - interpreter shutdown: the memory is freed anyway
        pass


_LEASE_TYPES: dict[int, type] = {}  # by byte size, the last 256 sizes asked for


def _lease(block: _Block, home: HostMemory) -> Any:
    """The owner of a host array lent by `HostMemory`: a ctypes array on the block's bytes (numpy
    makes an array on it in about 1 us, a fifth of reading an `__array_interface__`). Numpy arrays
    made from it (and their views) keep it alive; when the last is gone, its memory goes back to
    the pool."""
    size = block.slab.nbytes
    kind: Any = _LEASE_TYPES.get(size)
    if kind is None:
        if len(_LEASE_TYPES) >= 256:
            _LEASE_TYPES.pop(next(iter(_LEASE_TYPES)), None)
        kind = _LEASE_TYPES[size] = type("_Lease", (ctypes.c_char * size,),
                                         {"__del__": _lease_gone, "lift_lease": True})
    lease = kind.from_address(block.address)
    lease.block, lease.home = block, home
    return lease


class HostMemory:
    """Aligned host memory for results and staging copies, handed out as new numpy arrays and
    reused only after every array (and view) made from it is gone: a result is never changed by a
    later call, and a call's result does not pay the page faults of fresh memory each time
    (64 MiB of new pages cost more than a 2^24-element map's kernel). At most `keep_bytes` of
    unused memory is held, `per_size` blocks of one size."""

    def __init__(self, align: int = 128, keep_bytes: int = 1 << 30, per_size: int = 16) -> None:
        self.align, self.keep_bytes, self.per_size = align, keep_bytes, per_size
        self._free: dict[int, list[_Block]] = {}
        self._held = 0
        self._lock = threading.RLock()  # a lease collected by the garbage collector inside a locked step gives back

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int | None = None) -> np.ndarray:
        """A new writable C-contiguous array of `shape` and `dtype` (`nbytes`: its bytes, when
        known), aligned to `self.align`."""
        if nbytes is None:
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        nbytes = max(nbytes, 1)
        size = -(-nbytes // self.align) * self.align
        with self._lock:
            free = self._free.get(size)
            block = free.pop() if free else None
            if block is not None:
                self._held -= size
        if block is None:
            block = _Block(aligned_empty((size,), np.dtype(np.uint8), self.align))
        return np.ndarray(shape, dtype, _lease(block, self))

    def give_back(self, block: _Block) -> None:
        """Take back the memory of a lease whose arrays are all gone."""
        size = block.slab.nbytes
        with self._lock:
            free = self._free.setdefault(size, [])
            if len(free) < self.per_size and self._held + size <= self.keep_bytes:
                free.append(block)
                self._held += size

    @property
    def held_bytes(self) -> int:
        """Bytes of unused memory held for reuse."""
        return self._held


def aligned_copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `a` in `HOST`'s aligned memory (an argument a device reads in place)."""
    copy = HOST.empty(a.shape, a.dtype)
    np.copyto(copy, a)
    return copy


def result_buffer(dc: DeviceContext, host: np.ndarray) -> Any:
    """A buffer that is `host` for the kernels to write (a zero-copy device): the one kept with
    the memory when `host` is a whole array of `HOST`'s, else a new one."""
    lease: Any = host.base  # an array made by `HOST.empty` (a view's base is an array)
    if getattr(lease, "lift_lease", False):
        block = lease.block
        key = dc.context.int_ptr
        buf = block.buffers.get(key)
        if buf is None:
            buf = block.buffers[key] = host_buffer(dc, block.slab, write=True)
        return buf
    return host_buffer(dc, host, write=True)


def _pool_bytes() -> int:
    """`LIFTCL_HOST_POOL_BYTES` (unused host memory kept for reuse; 0: none), else 1 GiB."""
    text = os.environ.get("LIFTCL_HOST_POOL_BYTES", "")
    try:
        return max(int(text), 0) if text.strip() else 1 << 30
    except ValueError:
        return 1 << 30


HOST = HostMemory(keep_bytes=_pool_bytes())  # every program's results and staging copies


def local_memory(nbytes: int) -> Any:
    """A local-memory kernel argument of `nbytes` bytes."""
    return _cl().LocalMemory(max(int(nbytes), 1))


def upload(dc: DeviceContext, buf: Any, host: np.ndarray) -> Any:
    """Copy `host` into `buf` (non-blocking; the caller keeps `host` alive until a wait)."""
    return _cl().enqueue_copy(dc.queue, buf, host, is_blocking=False)


def download(dc: DeviceContext, host: np.ndarray, buf: Any) -> None:
    """Copy `buf` into `host`, waiting for everything enqueued before."""
    _cl().enqueue_copy(dc.queue, host, buf, is_blocking=True)


def enqueue(dc: DeviceContext, kernel: Any, global_size: tuple[int, ...],
            local_size: tuple[int, ...] | None, args: list[Any], wait_for: list[Any] | None = None) -> Any:
    """Launch `kernel` over the ND-range (after the events `wait_for`), setting every argument;
    returns its event."""
    return _enqueued(dc, kernel, global_size, local_size, args, {}, wait_for)


def launch(dc: DeviceContext, kernel: Any, global_size: tuple[int, ...], local_size: tuple[int, ...] | None,
           args: list[Any], last: dict[int, list[Any]], wait_for: list[Any] | None = None) -> Any:
    """`enqueue`, setting the arguments only when one differs (by identity) from those `last`
    holds for `kernel` (the calling thread's: a kernel object keeps its arguments between
    launches, and `last` keeps them alive); returns the event."""
    return _enqueued(dc, kernel, global_size, local_size, args, last, wait_for)


def _enqueued(dc: DeviceContext, kernel: Any, global_size: tuple[int, ...], local_size: tuple[int, ...] | None,
              args: list[Any], last: dict[int, list[Any]], wait_for: list[Any] | None) -> Any:
    cl = _cl()
    held = last.get(id(kernel))
    try:
        if held is None or len(held) != len(args) or any(a is not b for a, b in zip(args, held)):
            kernel.set_args(*args)  # all of them: a microsecond once the scalars are declared (`kernels`)
        last[id(kernel)] = args
        return cl.enqueue_nd_range_kernel(dc.queue, kernel, global_size, local_size, wait_for=wait_for)
    except cl.Error as e:
        last.pop(id(kernel), None)
        raise DeviceError(f"launching kernel {kernel.function_name} over global {global_size}, "
                          f"local {local_size} failed: {e}") from e


def relaunch(dc: DeviceContext, launches: Any, last: dict[int, list[Any]]) -> list[Any]:
    """Enqueue `launches` ((kernel, global size, local size, argument values) each) again,
    setting a kernel's arguments only where `last` (per kernel object, the list of values last
    set) does not hold this very list; returns the events. `Program`'s replayed calls: a few
    microseconds less than `launch` per kernel, which compares each argument."""
    cl = _cl()
    enqueue = cl.enqueue_nd_range_kernel
    events = []
    for kernel, global_size, local_size, args in launches:
        try:
            if last.get(id(kernel)) is not args:
                kernel.set_args(*args)
                last[id(kernel)] = args
            events.append(enqueue(dc.queue, kernel, global_size, local_size))
        except cl.Error as e:
            last.pop(id(kernel), None)
            raise DeviceError(f"launching kernel {kernel.function_name} over global {global_size}, "
                              f"local {local_size} failed: {e}") from e
    return events


def finish(dc: DeviceContext) -> None:
    """Wait for everything enqueued on the device."""
    dc.queue.finish()


def _spin_seconds() -> float:
    """`LIFTCL_SPIN_US` in seconds (see `wait`; 0: never poll), else 200 us: a value that is not a
    finite number is ignored, a negative one is 0."""
    text = os.environ.get("LIFTCL_SPIN_US", "")
    try:
        value = float(text) if text.strip() else 200.0
    except ValueError:
        value = 200.0
    return max(value, 0.0) * 1e-6 if math.isfinite(value) else 200e-6


SPIN_S = _spin_seconds()
SPIN_ONLY_S = 50e-6  # a wait expected to take at most this long polls without yielding (`wait`)


def wait(dc: DeviceContext, last: Any | None, spin_s: float, expected: float = 0.0) -> float:
    """Wait for everything enqueued on the device, `last` being the event of the last command
    (None: `finish`); returns the seconds it took. With `spin_s` > 0 the calling thread first
    polls `last` for up to that long, and only then sleeps in `finish`. A thread asleep in
    `finish` wakes some tens of microseconds after a short kernel ends (a CPU runtime signals it
    from its worker thread; on a VM a sleeping virtual CPU wakes slowly), so polling cut calls
    with short kernels by a third (PoCL 3.0 on a 2-vCPU Xeon: dot of 2^10 58 -> 36 us, arg-min
    of 2^16 80 -> 41 us). But a polling thread takes a core from the runtime's workers: where
    the last wait (`expected`) took more than `SPIN_ONLY_S`, each poll yields the processor
    (`os.sched_yield`), else a kernel of 100 us on a 2-CPU machine ran up to 1.6x longer
    (arg-min of 2^20, 256 work-items: calls 229/164 us polling, 152/148 us yielding, 183/137 us
    asleep, in two interleaved runs); shorter waits poll without yielding (dot of 2^17: 60/73
    us against 66/72 yielding and 75/88 asleep). `Program` polls for the shapes whose last
    call's wait took at most `SPIN_S` (`LIFTCL_SPIN_US` microseconds, default 200; 0 never
    polls): polling through a long kernel would slow it too."""
    clock = time.perf_counter
    start = clock()
    if last is not None and spin_s > 0:
        status, info = last.get_info, _cl().event_info.COMMAND_EXECUTION_STATUS
        give = os.sched_yield if expected > SPIN_ONLY_S else None
        while True:
            done = status(info)
            if done == 0:  # CL_COMPLETE
                return clock() - start
            if done < 0 or clock() - start > spin_s:
                break  # failed (finish reports it) or long: sleep until the queue is done
            if give is not None:
                give()
    dc.queue.finish()
    return clock() - start


def seconds(events: list[Any]) -> float:
    """The summed device execution time of finished `events` (start to end), in seconds."""
    return sum(ev.profile.end - ev.profile.start for ev in events) * 1e-9
