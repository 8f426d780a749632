"""The GPU vendor seam: what cudaforge needs to know of a vendor's compiler, architectures, profiler and devices.

NVIDIA's implementation is ``cudaforge/vendor/nvidia.py`` (nvcc, ``sm_XX`` architectures, Nsight Compute,
NVML, ``/dev/nvidia*``). The build path (``eval/build/toolchain.py``, ``settings.py``), the profiler and the
sandbox's device list ask :func:`current` and never name a vendor's tool. An AMD implementation (hipcc, ``gfxXXXX``
architectures, rocprof, amd-smi, ``/dev/kfd`` and ``/dev/dri``) would be a second module; its contract is sketched
in docs/architecture.md, "The vendor seam". No GPU of another vendor has been run here.
"""

from __future__ import annotations

import os

from cudaforge.vendor.base import GpuVendor


def current() -> GpuVendor:
    """The vendor of this machine's GPUs: NVIDIA, the one implemented (``CUDAFORGE_GPU_VENDOR`` names another)."""
    name = os.environ.get("CUDAFORGE_GPU_VENDOR", "nvidia").strip().lower() or "nvidia"
    if name != "nvidia":
        raise ValueError(
            f"CUDAFORGE_GPU_VENDOR={name!r}: only nvidia is implemented (docs/architecture.md, "
            "'The vendor seam', sketches what another vendor's module must provide)"
        )
    from cudaforge.vendor.nvidia import NVIDIA

    return NVIDIA


__all__ = ["GpuVendor", "current"]
