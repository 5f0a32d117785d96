"""`DeviceArray`: a program's result kept on its device, to feed the next program without a
round trip through host memory.

    y = k1(x, keep=True)          # a lift.DeviceArray: the kernels may still be running
    z = k2(y)                     # reads y where it is; no copy, no wait between the programs
    np.asarray(y), y.numpy()      # wait for y's kernels, then read it (read-only on a CPU runtime)
    torch.from_dlpack(y)          # DLPack, without a copy on a device that shares host memory

On a device that computes in host memory (a CPU runtime) a device array is a host array the
kernels wrote in place, so reading it copies nothing; on a GPU it is a buffer in the device's
memory and reading it copies. A device array is never changed by a later call: the programs
only read their arguments, and every call writes new arrays. `lift.from_dlpack(x)` makes one
from a DLPack-capable array (PyTorch, JAX) without a copy where the device shares host memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lift import runtime
from lift.errors import DeviceError, LiftTypeError

_DLPACK_CPU = 1  # DLDeviceType kDLCPU
_DLPACK_OPENCL = 4  # kDLOpenCL


class DeviceArray:
    """An array on an OpenCL device: a result kept there (`Program(*arrays, keep=True)`), or an
    array placed there (`lift.to_device`, `lift.from_dlpack`). Immutable: reading waits for the
    kernels that write it."""

    __slots__ = ("_dc", "buffer", "shape", "dtype", "_host", "_event", "_held", "__weakref__")

    def __init__(self, dc: runtime.DeviceContext, buffer: Any, shape: tuple[int, ...], dtype: np.dtype, *,
                 host: np.ndarray | None = None, event: Any = None, held: tuple = ()) -> None:
        self._dc = dc
        self.buffer = buffer  # the pyopencl Buffer the kernels read and write
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self._host = host  # the host array that is the buffer (a zero-copy device), else None
        self._event = event  # the last event writing it (None: written)
        self._held = held  # host arrays its pending kernels read (kept alive until they finish)

    # ------------------------------------------------------------------ description

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """The bytes it holds."""
        return self.size * self.dtype.itemsize

    @property
    def device(self) -> Any:
        """The `lift.devices.Device` it is on."""
        return self._dc.device

    @property
    def context(self) -> runtime.DeviceContext:
        """The device context (and queue) whose kernels write it."""
        return self._dc

    @property
    def event(self) -> Any:
        """The pending event of the kernels writing it (None once they are known to be done)."""
        return self._event

    @property
    def ready(self) -> bool:
        """Whether the kernels writing it have finished (does not wait)."""
        ev = self._event
        if ev is None:
            return True
        cl = runtime._cl()
        return ev.command_execution_status == cl.command_execution_status.COMPLETE

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        state = "ready" if self.ready else "pending"
        return f"<lift.DeviceArray {self.shape} {self.dtype} on {self._dc.device.name}, {state}>"

    # ----------------------------------------------------------------------- reading

    def wait(self) -> DeviceArray:
        """Wait for the kernels writing it; returns itself."""
        ev = self._event
        if ev is not None:
            ev.wait()
            self._event, self._held = None, ()
        return self

    def numpy(self) -> np.ndarray:
        """Its values as a numpy array, after waiting. On a zero-copy device this is the array
        itself, read-only (a device array never changes); elsewhere a new copy."""
        self.wait()
        if self._host is not None:
            view = self._host.view()
            view.flags.writeable = False
            return view
        host = runtime.HOST.empty(self.shape, self.dtype)
        runtime.download(self._dc, host.reshape(-1), self.buffer)
        return host

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.numpy()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            return out.astype(dtype)
        if copy:
            return np.array(out, copy=True)
        return out

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: bool | None = None) -> Any:
        """The DLPack capsule of its values (after waiting): the memory itself on a zero-copy
        device, a host copy elsewhere."""
        self.wait()
        host = self._host if self._host is not None else self.numpy()
        if max_version is None:
            return host.__dlpack__()
        return host.__dlpack__(max_version=max_version, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_DLPACK_CPU, 0)

    # ------------------------------------------------------------------------ using

    def buffer_for(self, dc: runtime.DeviceContext) -> Any:
        """Its buffer, for a launch on `dc` (same context), else None (another device: read back)."""
        return self.buffer if dc.context is self._dc.context else None


def to_device(a: Any, device: Any = None) -> DeviceArray:
    """`a` (a numpy array or anything `np.asarray` takes) placed on `device` (the default device
    when None): on a zero-copy device its memory is used as it is when aligned, else copied once."""
    dc = runtime.open_device(device)
    host = np.asarray(a)
    if host.dtype == object:
        raise LiftTypeError("to_device takes a numeric array", got=host.dtype)
    if dc.zero_copy:
        if not runtime.aligned(host, dc.align):
            host = runtime.aligned_copy(host)
        return DeviceArray(dc, runtime.host_buffer(dc, host, write=False), host.shape, host.dtype, host=host)
    buf = runtime.device_buffer(dc, host.nbytes, "a device array")
    flat = np.ascontiguousarray(host).reshape(-1)
    ev = runtime.upload(dc, buf, flat)
    return DeviceArray(dc, buf, host.shape, host.dtype, event=ev, held=(flat,))


def from_dlpack(x: Any, device: Any = None) -> DeviceArray:
    """A DLPack-capable array (a PyTorch CPU tensor, a JAX array, a numpy array) as a
    `DeviceArray`, without a copy on a device that shares host memory when its data is aligned
    (a device array must not change: do not write to `x` while it is used)."""
    try:
        host = np.from_dlpack(x)
    except (TypeError, BufferError, RuntimeError) as e:
        raise DeviceError(f"cannot read a {type(x).__name__} through DLPack: {e}",
                          hint="move it to the CPU first (tensor.cpu())") from e
    return to_device(host, device)


__all__ = ["DeviceArray", "to_device", "from_dlpack"]
