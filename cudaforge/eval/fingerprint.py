"""What a measurement was taken on: software versions, the GPU, and its clocks and power.

``environment_fingerprint`` is recorded with every evaluation so that numbers can be
compared (or refused comparison) later; ``gpu_state`` is the volatile part, for snapshots
before and after timing. Both return plain JSON-serialisable dicts whose keys are always
present: anything that could not be read is None, and the ``notes`` list says why. Neither
raises for a missing GPU, driver, NVML or tool.

GPU identity comes from torch (device properties); clocks, temperature, power and driver
versions come from the vendor's telemetry (``cudaforge.vendors``: NVIDIA's is NVML,
``cudaforge/vendors/nvml.py``), which matches the torch device to its own handle.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import platform
import re
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from cudaforge.vendors import current, pinned

NVCC_TIMEOUT_S = 10.0
"""How long ``nvcc --version`` may take before it is given up on."""

GPU_STATIC_KEYS = (
    "index",
    "name",
    "compute_capability",
    "sm_count",
    "memory_bytes",
    "l2_cache_bytes",
    "uuid",
    "pci_bus_id",
    "nvml_index",
    "max_sm_clock_mhz",
    "max_memory_clock_mhz",
    "power_limit_w",
)
"""Keys of ``environment_fingerprint()['gpu']`` besides those of ``gpu_state``."""

GPU_STATE_KEYS = (
    "sm_clock_mhz",
    "memory_clock_mhz",
    "temperature_c",
    "power_w",
    "clock_event_reasons",
)
"""Keys of ``gpu_state`` besides ``time`` and ``notes``."""


# --------------------------------------------------------------------------- software


DISTRIBUTIONS = {
    "numpy": ("numpy",),
    "triton": ("triton", "pytorch-triton"),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy"),
}
"""Distributions that may provide each optional module, tried in order before a full scan."""


@functools.cache
def _all_distributions() -> Mapping[str, list[str]]:
    """Top-level module -> distributions, from a scan of every installed package (slow; cached)."""
    return importlib.metadata.packages_distributions()


def _distribution_version(module: str) -> str | None:
    """Installed version of the distribution that provides top-level ``module``, without importing it."""
    names = DISTRIBUTIONS.get(module, (module,))
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except (ImportError, ValueError):
        return None
    for name in (*names, *_all_distributions().get(module, [])):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _optional_version(module: str, notes: list[str]) -> str | None:
    """Version of an optional package: its ``__version__`` if already imported, else its metadata."""
    imported = sys.modules.get(module)
    version = getattr(imported, "__version__", None) if imported is not None else None
    version = version or _distribution_version(module)
    if version is None:
        notes.append(f"{module} not installed")
    return str(version) if version is not None else None


def _find_nvcc() -> str | None:
    """Path of the vendor's compiler (nvcc: ``cudaforge.vendors``)."""
    return current().compiler(None)


_NVCC_SEEN: dict[str, tuple[str | None, str | None]] = {}
"""nvcc path -> (version, note): one process asks each compiler once (a subprocess costs ~0.1 s)."""


def nvcc_version(notes: list[str], timeout_s: float = NVCC_TIMEOUT_S) -> str | None:
    """The CUDA compiler's version (e.g. ``13.0.88``) from ``nvcc --version``, or None with a note.

    The answer is remembered per nvcc path for the life of the process."""
    nvcc = _find_nvcc()
    if nvcc is None:
        notes.append("nvcc not found (PATH, CUDA_HOME, /usr/local/cuda)")
        return None
    if nvcc not in _NVCC_SEEN:
        found: list[str] = []
        _NVCC_SEEN[nvcc] = (_ask_nvcc(nvcc, found, timeout_s), found[0] if found else None)
    version, note = _NVCC_SEEN[nvcc]
    if note:
        notes.append(note)
    return version


def warm_caches() -> None:
    """Pay, ahead of a measurement, for the slow and constant parts of a fingerprint: the nvcc
    subprocess, the scan of installed distributions, cuDNN's library load."""
    notes: list[str] = []
    nvcc_version(notes)
    _torch_versions(notes)
    for module in DISTRIBUTIONS:
        _optional_version(module, notes)


def _ask_nvcc(nvcc: str, notes: list[str], timeout_s: float) -> str | None:
    try:
        result = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        notes.append(f"nvcc --version failed: {exc}")
        return None
    match = re.search(r"\bV(\d+(?:\.\d+)+)", result.stdout) or re.search(r"release (\d+\.\d+)", result.stdout)
    if result.returncode != 0 or match is None:
        notes.append(f"nvcc --version gave no version (exit {result.returncode})")
        return None
    return match.group(1)


def _torch_versions(notes: list[str]) -> dict[str, Any]:
    """torch, its CUDA and cuDNN versions, and whether it sees a GPU."""
    info: dict[str, Any] = {"torch": None, "torch_cuda": None, "cudnn": None, "cuda_available": False}
    try:
        import torch
    except ImportError as exc:
        notes.append(f"torch not importable: {exc}")
        return info
    info["torch"] = torch.__version__
    info["torch_cuda"] = torch.version.cuda
    if torch.version.cuda is None:
        notes.append("torch is built without CUDA")
    try:
        info["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None  # type: ignore[no-untyped-call]  # torch's cudnn probes are unannotated
    except Exception as exc:  # noqa: BLE001 - cuDNN probing must never break a fingerprint
        notes.append(f"cuDNN version unavailable: {exc}")
    info["cuda_available"] = bool(torch.cuda.is_available())
    return info


# --------------------------------------------------------------------------- GPU (torch)


def _torch_gpu(device_index: int | None, notes: list[str]) -> dict[str, Any] | None:
    """Static properties of a torch-visible GPU, or None (with a note) when there is none."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        notes.append("no GPU visible to torch")
        return None
    index = torch.cuda.current_device() if device_index is None else device_index
    if not 0 <= index < torch.cuda.device_count():
        notes.append(f"device index {index} out of range ({torch.cuda.device_count()} visible)")
        return None
    props = torch.cuda.get_device_properties(index)
    return {
        "index": index,
        "name": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "memory_bytes": int(props.total_memory),
        "l2_cache_bytes": int(getattr(props, "L2_cache_size", 0)) or None,
        "uuid": _torch_uuid(props),
        "pci_bus_id": _torch_pci_bus_id(props),
    }


def _torch_uuid(props: Any) -> str | None:
    """The device UUID in NVML's spelling (``GPU-xxxxxxxx-...``), from torch's properties."""
    raw = getattr(props, "uuid", None)
    if raw is None:
        return None
    text = str(raw).strip()
    if not text:
        return None
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


def _torch_pci_bus_id(props: Any) -> str | None:
    """The PCI bus id (``00000000:19:00.0``) from torch's properties, where this torch reports it."""
    parts = [getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if any(not isinstance(part, int) for part in parts):
        return None
    domain, bus, dev = parts
    return f"{domain:08x}:{bus:02x}:{dev:02x}.0"


# --------------------------------------------------------------------------- public


def _resolve_index(device_index: int | None) -> int:
    """torch's current device when ``device_index`` is None (0 without torch CUDA)."""
    if device_index is not None:
        return device_index
    try:
        import torch

        return torch.cuda.current_device() if torch.cuda.is_available() else 0
    except ImportError:
        return 0


def gpu_state(device_index: int | None = None) -> dict[str, Any]:
    """Volatile GPU state for before/after snapshots: clocks (MHz), temperature (C), power (W).

    ``device_index`` is torch's (within ``CUDA_VISIBLE_DEVICES``; None: current device).
    Keys: ``time`` (Unix seconds), the ``GPU_STATE_KEYS`` (None where unreadable) and
    ``notes``. Never raises for a missing GPU or NVML.
    """
    notes: list[str] = []
    state: dict[str, Any] = {"time": time.time(), **dict.fromkeys(GPU_STATE_KEYS), "notes": notes}
    index = _resolve_index(device_index)
    gpu = _torch_gpu(index, notes)
    if gpu is None:
        return state
    state.update(current().telemetry(gpu, index, notes, ("state",)))
    return state


def environment_fingerprint(device_index: int | None = None) -> dict[str, Any]:
    """Software and hardware a measurement was taken on, as a JSON-serialisable dict.

    Top-level keys: python, python_implementation, platform, hostname, cuda_visible_devices,
    torch, torch_cuda, cudnn, cuda_available, numpy, triton, cupy, nvcc, driver_version,
    cuda_driver_version, gpu, notes. ``gpu`` always holds ``GPU_STATIC_KEYS`` and
    ``GPU_STATE_KEYS`` (all None without a GPU). ``device_index`` is torch's (None: the
    current device). Anything unreadable is None and ``notes`` says why; it never raises
    for a missing GPU, driver, NVML or tool.
    """
    notes: list[str] = []
    fingerprint: dict[str, Any] = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "cuda_visible_devices": pinned(),
        **_torch_versions(notes),
        "numpy": _optional_version("numpy", notes),
        "triton": _optional_version("triton", notes),
        "cupy": _optional_version("cupy", notes),
        "nvcc": nvcc_version(notes),
        "driver_version": None,
        "cuda_driver_version": None,
    }
    gpu: dict[str, Any] = dict.fromkeys(GPU_STATIC_KEYS + GPU_STATE_KEYS)
    index = _resolve_index(device_index)
    torch_gpu = _torch_gpu(index, notes)
    readings = current().telemetry(torch_gpu, index, notes, ("driver", "static", "state") if torch_gpu else ("driver",))
    fingerprint.update({k: readings.get(k) for k in ("driver_version", "cuda_driver_version")})
    if torch_gpu is not None:
        gpu.update(torch_gpu)
        static = {k: readings[k] for k in GPU_STATIC_KEYS if k in readings}
        gpu.update(_merge_static(torch_gpu, static))
        gpu.update({k: readings[k] for k in GPU_STATE_KEYS if k in readings})
    fingerprint["gpu"] = gpu
    fingerprint["notes"] = notes
    return fingerprint


def _merge_static(torch_gpu: dict[str, Any], nvml_static: dict[str, Any]) -> dict[str, Any]:
    """NVML's static readings, keeping torch's UUID and PCI bus id where NVML has none."""
    return {key: (value if value is not None else torch_gpu.get(key)) for key, value in nvml_static.items()}
