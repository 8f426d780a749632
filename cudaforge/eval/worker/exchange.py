"""How the trusted verifier and the sandboxed candidate worker talk: messages, and tensors in an arena.

* ``Channel``: length-prefixed JSON frames over a stream socket (file descriptors ride along with a
  frame's header). The receiving side bounds everything: frame size, nesting, time. Whatever the
  other side sends, ``recv`` returns a dict or raises :class:`ChannelError` (``timeout``, ``closed``,
  ``protocol``); it never raises anything else.
* ``Arena``: one block of memory both processes map, created by the trusted side: a ``memfd`` on the
  host, or on a GPU a driver allocation exported as a file descriptor (CUDA virtual memory management,
  ``CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR``). It holds only what is exchanged (inputs in, outputs
  out), never anything else of the verifier's; the verifier treats its contents as untrusted and
  copies a candidate's outputs out of it (bounds-checked) before reading them.
* ``encode``/``decode``: a forward's arguments and results (tensors, scalars, nested lists and
  tuples) as JSON with tensor descriptors pointing into the arena. ``decode`` bounds what it is given (nesting,
  parts) and, with a :class:`Budget`, what it materialises: the verifier reads a candidate's outputs with a budget
  derived from the reference's outputs for the same call, checked for each tensor before anything is copied.

Needs torch (both sides have it); nothing else heavy.
"""

from __future__ import annotations

import ctypes
import fcntl
import math
import mmap
import os
from collections.abc import Callable
from typing import Any

import torch

from cudaforge.eval.worker.channel import MAX_FRAME as MAX_FRAME  # part of this module's API, as the two below
from cudaforge.eval.worker.channel import Channel as Channel
from cudaforge.eval.worker.channel import ChannelError as ChannelError

ALIGN = 256
"""Tensors start on this byte boundary in the arena."""
MAX_DIMS = 16
MAX_NESTING = 32
MAX_NODES = 1 << 16
"""The most parts (tensors, scalars, lists, tuples, dicts) one encoded value may have, whoever decodes it."""
MAX_OUTPUT_TENSORS = 4096
"""The most tensors a :class:`Budget` lets one reply hand back, whatever the reference returned (KernelBench's
references return one tensor or a handful)."""
_MAX_EXTENT = 1 << 62
"""Larger sizes, strides or offsets than this are refused before any arithmetic on them reaches torch."""

DTYPES = {
    str(d).replace("torch.", ""): d
    for d in (
        torch.float32,
        torch.float64,
        torch.float16,
        torch.bfloat16,
        torch.int8,
        torch.uint8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
        torch.complex64,
        torch.complex128,
        *(
            getattr(torch, n)
            for n in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64")
            if hasattr(torch, n)
        ),
    )
}
"""The tensor dtypes that may cross, by name."""


# --------------------------------------------------------------------------------------- arenas


class ArenaError(RuntimeError):
    """An arena could not be made or mapped, or a descriptor points outside it."""


class Arena:
    """A byte range both processes map; tensors are views into it."""

    kind = "host"

    def __init__(self, base: torch.Tensor, fd: int, keep: Any = None) -> None:
        self.base, self.fd, self._keep = base, fd, keep
        self.size = base.numel()
        self._next = 0

    # -- allocation (one request at a time: reset, then place tensors) --

    def reset(self) -> None:
        """Forget the previous placements (the next tensors start at offset 0)."""
        self._next = 0

    def place(self, nbytes: int) -> int:
        """Reserve ``nbytes`` (aligned); the offset, or ArenaError when it does not fit."""
        offset = -(-self._next // ALIGN) * ALIGN
        if offset + nbytes > self.size:
            raise ArenaError(f"the arena holds {self.size} bytes; {offset + nbytes} are needed")
        self._next = offset + max(nbytes, 1)
        return offset

    # -- views --

    def view(self, desc: dict[str, Any]) -> torch.Tensor:
        """The tensor a descriptor names, as a view of the arena; ArenaError when it is malformed or out of bounds."""
        dtype, shape, stride, offset = layout(desc)
        item = torch.empty((), dtype=dtype).element_size()
        if offset % item:
            raise ArenaError(f"a tensor at byte {offset}, not aligned to its {item}-byte elements")
        numel = math.prod(shape)
        span = 0 if numel == 0 else 1 + sum((n - 1) * s for n, s in zip(shape, stride))
        if offset + span * item > self.size:
            raise ArenaError(f"a tensor reaching byte {offset + span * item} of a {self.size}-byte arena")
        flat = self.base[offset : offset + span * item].view(dtype) if span else self.base[:0].view(dtype)
        try:
            return flat.as_strided(shape, stride)
        except RuntimeError as exc:  # sizes torch cannot hold (their product past 64 bits)
            raise ArenaError(f"a tensor descriptor torch cannot view ({exc})"[:300]) from None

    def put(self, tensor: torch.Tensor) -> dict[str, Any]:
        """Copy ``tensor`` into the arena (same shape, dtype and strides when they are dense); its descriptor."""
        t = tensor.detach()
        if not (t.layout == torch.strided and is_compact(t)):
            t = t.contiguous()
        numel = t.numel()
        span = 0 if numel == 0 else 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
        offset = self.place(span * t.element_size())
        desc = {
            "dtype": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "stride": list(t.stride()),
            "offset": offset,
        }
        if numel:
            self.view(desc).copy_(t)
        return desc

    def close(self) -> None:
        """Release this process's mapping."""
        try:
            os.close(self.fd)
        except OSError:
            pass


def layout(desc: Any) -> tuple[torch.dtype, list[int], list[int], int]:
    """A tensor descriptor's dtype, shape, stride and byte offset, checked for form (ArenaError when malformed):
    known dtype, at most ``MAX_DIMS`` dimensions, sizes, strides and offset neither negative nor huge."""
    try:
        dtype = DTYPES[desc["dtype"]]
        shape, stride = desc["shape"], desc["stride"]
        if (
            not (isinstance(shape, list) and isinstance(stride, list))
            or len(shape) != len(stride)
            or len(shape) > MAX_DIMS
        ):
            raise ArenaError("a tensor descriptor whose shape and stride do not match")
        shape, stride, offset = [int(n) for n in shape], [int(n) for n in stride], int(desc["offset"])
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ArenaError(f"a malformed tensor descriptor ({type(exc).__name__}: {exc})"[:300]) from None
    if not all(0 <= n < _MAX_EXTENT for n in (*shape, *stride, offset)):
        raise ArenaError("a tensor descriptor with negative or huge sizes, strides or offset")
    return dtype, shape, stride, offset


def is_compact(t: torch.Tensor) -> bool:
    """Strides that address exactly ``numel`` elements, each once (a permutation of a contiguous block, such
    as a transpose): ``put`` keeps such a layout; anything else crosses as a contiguous copy."""
    if any(s < 0 for s in t.stride()):
        return False
    dims = sorted((s, n) for n, s in zip(t.shape, t.stride()) if n > 1)
    expected = 1
    for stride, size in dims:
        if stride != expected:
            return False
        expected = stride * size
    return True


def host_arena(size: int, fd: int | None = None) -> Arena:
    """A host arena of ``size`` bytes: a new memfd, sealed at that size before anyone else gets it (it can neither
    shrink nor grow, and the seals cannot be removed: a worker that truncated an unsealed one made the verifier's
    next read of it a SIGBUS), or the one inherited as ``fd`` (mapped read-write all the same)."""
    if fd is None:
        fd = os.memfd_create("cudaforge-arena", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    mapping = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    base = torch.frombuffer(mapping, dtype=torch.uint8, count=size)
    return Arena(base, fd, keep=mapping)


class _CUmemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _CUmemAllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _CUmemAllocationProp(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _CUmemLocation),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _CUmemAllocFlags),
    ]


class _CUmemAccessDesc(ctypes.Structure):
    _fields_ = [("location", _CUmemLocation), ("flags", ctypes.c_int)]


_PINNED, _POSIX_FD, _LOCATION_DEVICE, _READWRITE = 1, 1, 1, 3


class Driver:
    """The few CUDA driver calls the device arena and the L2 reset need (``libcuda`` through ctypes)."""

    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise ArenaError(f"the CUDA driver library is not loadable: {exc}") from None

    def __call__(self, name: str, *args: Any) -> None:
        fn = getattr(self.lib, name)
        fn.restype = ctypes.c_int
        code = fn(*args)
        if code != 0:
            text = ctypes.c_char_p()
            get = self.lib.cuGetErrorName
            get.restype = ctypes.c_int
            get(code, ctypes.byref(text))
            raise ArenaError(f"{name} failed: {(text.value or b'?').decode()} ({code})")

    def current_context(self) -> None:
        """Make sure this thread has torch's (primary) context current."""
        torch.zeros(1, device="cuda")
        ctx = ctypes.c_void_p()
        self("cuCtxGetCurrent", ctypes.byref(ctx))
        if not ctx.value:
            raise ArenaError("no CUDA context is current in this thread")

    def reset_persisting_l2(self) -> None:
        """Return every persisting L2 line to normal (an access-policy window left by anyone stops helping)."""
        self("cuCtxResetPersistingL2Cache")


class _CudaArrayInterface:
    def __init__(self, ptr: int, size: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (size,),
            "typestr": "|u1",
            "data": (ptr, False),
            "version": 3,
            "strides": None,
            "stream": None,
        }


def _map(driver: Driver, handle: ctypes.c_ulonglong, size: int, ordinal: int) -> int:
    ptr = ctypes.c_ulonglong()
    driver(
        "cuMemAddressReserve",
        ctypes.byref(ptr),
        ctypes.c_size_t(size),
        ctypes.c_size_t(0),
        ctypes.c_ulonglong(0),
        ctypes.c_ulonglong(0),
    )
    driver("cuMemMap", ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, ctypes.c_ulonglong(0))
    access = _CUmemAccessDesc(_CUmemLocation(_LOCATION_DEVICE, ordinal), _READWRITE)
    driver("cuMemSetAccess", ptr, ctypes.c_size_t(size), ctypes.byref(access), ctypes.c_size_t(1))
    return ptr.value


class DeviceArena(Arena):
    """An arena in GPU memory shared through a POSIX file descriptor (CUDA virtual memory management)."""

    kind = "device"

    @classmethod
    def create(cls, size: int) -> DeviceArena:
        """Allocate ``size`` bytes (rounded up) on the current GPU, exported as a file descriptor."""
        driver = Driver()
        driver.current_context()
        ordinal = torch.cuda.current_device()
        prop = _CUmemAllocationProp()
        prop.type, prop.requestedHandleTypes = _PINNED, _POSIX_FD
        prop.location = _CUmemLocation(_LOCATION_DEVICE, ordinal)
        granularity = ctypes.c_size_t()
        driver("cuMemGetAllocationGranularity", ctypes.byref(granularity), ctypes.byref(prop), ctypes.c_int(0))
        size = -(-max(size, 1) // granularity.value) * granularity.value
        handle = ctypes.c_ulonglong()
        driver("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_ulonglong(0))
        fd = ctypes.c_int(-1)
        driver("cuMemExportToShareableHandle", ctypes.byref(fd), handle, ctypes.c_int(_POSIX_FD), ctypes.c_ulonglong(0))
        ptr = _map(driver, handle, size, ordinal)
        return cls._wrap(ptr, size, fd.value, (driver, handle, ptr, size))

    @classmethod
    def attach(cls, fd: int, size: int) -> DeviceArena:
        """Map an arena another process exported as ``fd`` (``size`` bytes)."""
        driver = Driver()
        driver.current_context()
        handle = ctypes.c_ulonglong()
        driver("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd), ctypes.c_int(_POSIX_FD))
        ptr = _map(driver, handle, size, torch.cuda.current_device())
        return cls._wrap(ptr, size, fd, (driver, handle, ptr, size))

    @classmethod
    def _wrap(cls, ptr: int, size: int, fd: int, keep: Any) -> DeviceArena:
        interface = _CudaArrayInterface(ptr, size)
        base = torch.as_tensor(interface, device="cuda")
        if base.data_ptr() != ptr or base.numel() != size:
            raise ArenaError("torch did not wrap the arena's memory in place")
        arena = cls(base, fd, keep=(keep, interface))
        return arena

    def close(self) -> None:
        """Unmap and release this process's handle."""
        (driver, handle, ptr, size), _ = self._keep
        try:
            torch.cuda.synchronize()
            driver("cuMemUnmap", ctypes.c_ulonglong(ptr), ctypes.c_size_t(size))
            driver("cuMemAddressFree", ctypes.c_ulonglong(ptr), ctypes.c_size_t(size))
            driver("cuMemRelease", handle)
        except ArenaError:
            pass
        super().close()


# ------------------------------------------------------------------------------------- values


def encode(value: Any, put: Callable[[torch.Tensor], dict[str, Any]], depth: int = 0) -> Any:
    """``value`` (tensors, scalars, None, strings, nested lists/tuples/dicts) as JSON; tensors go through ``put``.
    Raises TypeError for anything else."""
    if depth > MAX_NESTING:
        raise TypeError("values nested deeper than 32 levels")
    if isinstance(value, torch.Tensor):
        return {"t": put(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"v": value}
    if isinstance(value, tuple):
        return {"tu": [encode(v, put, depth + 1) for v in value]}
    if isinstance(value, list):
        return {"l": [encode(v, put, depth + 1) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"d": [[k, encode(v, put, depth + 1)] for k, v in value.items()]}
    raise TypeError(f"a value of type {type(value).__module__}.{type(value).__qualname__}")


class OutputsTooLarge(ArenaError):
    """A value holds more than its :class:`Budget` allows; nothing of the tensor that overran it was copied."""


class Budget:
    """What one decoded reply may materialise: ``nbytes`` (tensors charged as :func:`tensor_bytes` counts them, by
    the elements their copies hold, and strings by their length) and ``tensors`` descriptors.

    Whatever strides a descriptor has (a zero stride repeats one element of the arena over a whole dimension), its
    copy holds ``numel`` elements, and that is what is charged, before the copy is made: a 16-byte view that claims
    12 GiB is refused as 12 GiB."""

    def __init__(self, nbytes: int, tensors: int = MAX_OUTPUT_TENSORS) -> None:
        self.nbytes, self.tensors = nbytes, tensors
        self.spent_bytes = self.spent_tensors = 0

    def _charge(self, nbytes: int, what: str) -> None:
        self.spent_bytes += nbytes
        if self.spent_bytes > self.nbytes:
            raise OutputsTooLarge(
                f"outputs larger than the reference's: {what} brings the reply to "
                f"{self.spent_bytes:,} bytes, where at most {self.nbytes:,} may come back for this "
                "call"
            )

    def tensor(self, desc: Any) -> None:
        """Charge one tensor descriptor (ArenaError when malformed, OutputsTooLarge past the budget)."""
        dtype, shape, stride, _ = layout(desc)
        self.spent_tensors += 1
        if self.spent_tensors > self.tensors:
            raise OutputsTooLarge(
                f"outputs larger than the reference's: more than {self.tensors:,} tensors in one reply"
            )
        item = torch.empty((), dtype=dtype).element_size()
        more = "..." if len(shape) > 4 else ""
        self._charge(
            _arena_bytes(math.prod(shape) * item),
            f"a {str(dtype).replace('torch.', '')} tensor of shape {shape[:4]}{more} (strides {stride[:4]}{more})",
        )

    def text(self, value: str) -> None:
        """Charge one string of the value."""
        self._charge(len(value), f"a string of {len(value):,} characters")


def decode(obj: Any, get: Callable[[dict[str, Any]], torch.Tensor], budget: Budget | None = None) -> Any:
    """The inverse of :func:`encode`; tensors come from ``get(descriptor)``. Raises ArenaError when malformed,
    nested deeper than ``MAX_NESTING`` or made of more than ``MAX_NODES`` parts, and (with ``budget``)
    OutputsTooLarge before ``get`` is called for a tensor that would overrun the budget."""
    parts = 0

    def walk(obj: Any, depth: int) -> Any:
        nonlocal parts
        parts += 1
        if parts > MAX_NODES:
            raise ArenaError(f"a value of more than {MAX_NODES:,} parts")
        if depth > MAX_NESTING or not isinstance(obj, dict) or len(obj) != 1:
            raise ArenaError("a malformed value")
        ((tag, inner),) = obj.items()
        if tag == "t" and isinstance(inner, dict):
            if budget is not None:
                budget.tensor(inner)
            return get(inner)
        if tag == "v" and (inner is None or isinstance(inner, (bool, int, float, str))):
            if budget is not None and isinstance(inner, str):
                budget.text(inner)
            return inner
        if tag in ("tu", "l") and isinstance(inner, list):
            items = [walk(v, depth + 1) for v in inner]
            return tuple(items) if tag == "tu" else items
        if tag == "d" and isinstance(inner, list):
            out = {}
            for pair in inner:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                    raise ArenaError("a malformed dict value")
                if budget is not None:
                    budget.text(pair[0])
                out[pair[0]] = walk(pair[1], depth + 1)
            return out
        raise ArenaError(f"a value tagged {str(tag)[:40]!r}")

    return walk(obj, 0)


def _arena_bytes(nbytes: int) -> int:
    """What a tensor of ``nbytes`` takes in the arena, alignment included (at least ``2 * ALIGN``)."""
    return -(-max(nbytes, 1) // ALIGN) * ALIGN + ALIGN


def tensor_bytes(value: Any) -> int:
    """Bytes of every tensor in a nested value, each rounded up to the arena's alignment."""
    if isinstance(value, torch.Tensor):
        return _arena_bytes(value.numel() * value.element_size())
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    return 0
