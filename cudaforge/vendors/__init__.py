"""The GPU vendor seam: what cudaforge needs to know of a vendor's compiler, architectures, profiler and devices.

NVIDIA's implementation is ``cudaforge/vendors/nvidia.py`` (nvcc, ``sm_XX`` architectures, Nsight Compute,
NVML, ``/dev/nvidia*``). The build path (``eval/extensions/toolchain.py``, ``settings.py``), the profiler and the
sandbox's device list ask :func:`current` and never name a vendor's tool. An AMD implementation (hipcc, ``gfxXXXX``
architectures, rocprof, amd-smi, ``/dev/kfd`` and ``/dev/dri``) would be a second module, here or in a package of its
own that names its ``GpuVendor`` in the entry-point group ``cudaforge.vendors`` (:mod:`cudaforge.plugins`); its
contract is sketched in docs/architecture.md, "The vendor seam". No GPU of another vendor has been run here.
"""

from __future__ import annotations

import os

from cudaforge import plugins
from cudaforge.registry import Registry
from cudaforge.vendors.base import GpuVendor

REGISTRY: Registry[GpuVendor] = Registry(
    "GPU vendor", plugins.VENDORS, GpuVendor, built_in={"nvidia": "cudaforge.vendors.nvidia:NVIDIA"}
)
"""The vendors: NVIDIA, built in, then those installed packages add (:class:`~cudaforge.registry.Registry`)."""


def current() -> GpuVendor:
    """The vendor of this machine's GPUs: NVIDIA, the one built in, unless ``CUDAFORGE_GPU_VENDOR`` names one an
    installed package adds (entry-point group ``cudaforge.vendors``)."""
    name = os.environ.get("CUDAFORGE_GPU_VENDOR", "nvidia").strip().lower() or "nvidia"
    if not REGISTRY.is_built_in(name) and name not in REGISTRY:  # NVIDIA's asks nothing of the installed packages
        raise ValueError(
            f"CUDAFORGE_GPU_VENDOR={name!r}: known vendors are {', '.join(REGISTRY.names())} "
            "(docs/architecture.md, 'The vendor seam', sketches what another vendor's module must provide)"
        )
    return REGISTRY.get(name)


def pin_env(gpu: str | int | None) -> dict[str, str]:
    """The environment that pins a child process to one physical GPU (``None``: to none), in the vendor's visibility
    variable (NVIDIA: ``CUDA_VISIBLE_DEVICES``)."""
    return {current().device_env: "" if gpu is None else str(gpu)}


def pinned() -> str | None:
    """The GPUs this process was pinned to, as its parent wrote them in the vendor's visibility variable (None when
    unset: every GPU is visible)."""
    return os.environ.get(current().device_env)


__all__ = ["REGISTRY", "GpuVendor", "current", "pin_env", "pinned"]
