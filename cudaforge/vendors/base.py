"""The interface a GPU vendor implements (``cudaforge.vendors``): one dataclass of functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuVendor:
    """One vendor's facts, as functions (each never raises; ``None`` means "not here")."""

    name: str
    """``nvidia`` (``CUDAFORGE_GPU_VENDOR`` picks one when several are registered)."""
    default_arch: str
    """The architecture built when none is configured and no GPU is visible (NVIDIA: ``9.0``, the H100/H200)."""
    detect_arch: Callable[[], str | None]
    """The architecture of the GPU this process would use, asked without creating a device context."""
    arch_flags: Callable[[str], list[str]]
    """Compiler flags that build exactly that one architecture."""
    names_arch: Callable[[list[str]], bool]
    """Whether compiler flags already name an architecture (a candidate's own ``-arch=sm_90a``)."""
    toolkit_home: Callable[[], str | None]
    """The toolkit's root (``CUDA_HOME``)."""
    compiler: Callable[[str | None], str | None]
    """The device compiler's path (nvcc), looked for in the given toolkit root first."""
    compiler_version: Callable[[str], str]
    """One line naming the compiler's version, for cache keys and records."""
    toolkit_roots: Callable[[], list[str]]
    """Directories of the toolkit and driver that a sandboxed compiler or candidate must be able to read."""
    device_nodes: Callable[[], list[str]]
    """Device files a sandboxed candidate may open (with their ioctls)."""
    profiler: Callable[[str], str | None]
    """The kernel profiler's path (Nsight Compute's ``ncu``), from a configured name or path."""
    profiler_version: Callable[[str], str | None]
    """That profiler's version."""
    model_name: Callable[[str | int], str]
    """The model name of a physical GPU (index or UUID), for cache keys (``gpu-<id>`` when unknown)."""
    visible_devices: Callable[[], list[str]]
    """Physical ids of the GPUs this process may use, asked without torch (``CUDA_VISIBLE_DEVICES``, else NVML)."""
    telemetry: Callable[[dict[str, Any] | None, int | None, list[str], tuple[str, ...]], dict[str, Any]]
    """``telemetry(gpu, device_index, notes, what)``: readings of one GPU from the vendor's management library
    (NVIDIA: NVML), by group: ``driver``, ``static``, ``memory_bus``, ``state`` (``cudaforge/vendors/nvml.py`` lists
    each group's keys; the fingerprint and the spec sheet keep those names). What cannot be read is left out, with a
    note; it never raises."""
    device_flags: Callable[[], dict[str, Any]] = lambda: {"plain": set(), "patterns": [], "split": set()}
    """The device compiler's own flags a candidate may pass (``cudaforge.eval.extensions.flags`` adds the host compiler's):
    ``plain`` flags allowed as written, ``patterns`` (regular expressions a flag must match in full) and ``split``
    (options whose value may come as the next item). None of them may name a file or change the toolchain."""
    jit_target: Callable[[str], list[Any] | None] = lambda arch: None
    """Triton's compile target for an architecture, ``[backend, capability, warp size]`` (NVIDIA: ``"9.0a"`` ->
    ``["cuda", 90, 32]``; AMD would say ``["hip", "gfx942", 64]``), so kernels JIT-compiled from Python can be built
    ahead on a machine without that GPU; ``None`` when the architecture is not one of this vendor's."""
    device_env: str = "CUDA_VISIBLE_DEVICES"
    """The environment variable that pins a process to physical GPUs (a comma-separated list; empty: none). Only
    ``cudaforge.vendors.pin_env`` and ``pinned`` read or write it: no module elsewhere spells it."""
    device_lost: Callable[[str], str | None] = lambda gpu: None
    """Why a physical GPU (index or UUID) no longer answers its management library (fallen off the bus, the driver
    gone), or None when it answers or nothing can tell: after a crash, the evaluator asks it before blaming the
    kernel."""
