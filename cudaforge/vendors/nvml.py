"""NVIDIA's GPU telemetry through NVML (``pynvml``, shipped by nvidia-ml-py): driver versions, a device's fixed
facts (max clocks, power limit, UUID, PCI bus id, memory bus width) and its state (clocks, temperature, power,
clock-event reasons). ``telemetry`` is the vendor seam's entry (``GpuVendor.telemetry``); the fingerprint and the
spec sheet ask it and never import pynvml.

torch numbers devices within ``CUDA_VISIBLE_DEVICES`` while NVML numbers all of them, so a torch device is matched
to its NVML handle by UUID, then PCI bus id, then ``CUDA_VISIBLE_DEVICES``, and only last by index (with a note).
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def _load_nvml(notes: list[str]) -> Any | None:
    """The ``pynvml`` module, or None with a note."""
    try:
        return importlib.import_module("pynvml")
    except ImportError as exc:
        notes.append(f"NVML unavailable: pynvml not importable ({exc})")
        return None


@contextmanager
def _nvml_session(notes: list[str]) -> Iterator[Any | None]:
    """Initialise NVML for the duration of the block; yield the module, or None with a note."""
    nvml = _load_nvml(notes)
    if nvml is None:
        yield None
        return
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError, OSError (no libnvidia-ml) ...
        notes.append(f"NVML unavailable: {exc}")
        yield None
        return
    try:
        yield nvml
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down is best effort
            pass


def _nvml_read(notes: list[str], what: str, read: Callable[[], Any]) -> Any:
    """Call one NVML getter; on any error, note it and return None."""
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - each reading may be unsupported on its own
        notes.append(f"NVML {what}: {exc}")
        return None


def _text(value: Any) -> Any:
    """NVML strings come back as bytes from older bindings."""
    return value.decode() if isinstance(value, bytes) else value


def _visible_device_entry(index: int) -> str | None:
    """The ``CUDA_VISIBLE_DEVICES`` entry that torch device ``index`` stands for, if set."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return None
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    return entries[index] if 0 <= index < len(entries) else None


def _nvml_handle(nvml: Any, gpu: dict[str, Any] | None, device_index: int | None, notes: list[str]) -> Any | None:
    """The NVML handle of the torch device: by UUID, PCI bus id, CUDA_VISIBLE_DEVICES, then index (``device_index``
    None: by UUID or PCI bus id only)."""
    attempts: list[tuple[str, Callable[[], Any]]] = []
    if gpu and gpu.get("uuid"):
        attempts.append(("uuid", lambda: nvml.nvmlDeviceGetHandleByUUID(gpu["uuid"])))
    if gpu and gpu.get("pci_bus_id"):
        attempts.append(("pci bus id", lambda: nvml.nvmlDeviceGetHandleByPciBusId(gpu["pci_bus_id"])))
    entry = _visible_device_entry(device_index) if device_index is not None else None
    if entry is not None and entry.isdigit():
        attempts.append(("CUDA_VISIBLE_DEVICES", lambda: nvml.nvmlDeviceGetHandleByIndex(int(entry))))
    elif entry is not None and entry.startswith(("GPU-", "MIG-")):
        attempts.append(("CUDA_VISIBLE_DEVICES uuid", lambda: nvml.nvmlDeviceGetHandleByUUID(entry)))
    for _, attempt in attempts:
        try:
            return attempt()
        except Exception:  # noqa: BLE001 - try the next way
            continue
    if device_index is None:
        notes.append(
            f"NVML has no device {(gpu or {}).get('uuid') or (gpu or {}).get('pci_bus_id')}"
            + (f" ({', '.join(h for h, _ in attempts)} failed)" if attempts else ": no UUID or PCI bus id")
        )
        return None
    if attempts:
        notes.append(f"NVML device matched by index {device_index} only ({', '.join(h for h, _ in attempts)} failed)")
    try:
        return nvml.nvmlDeviceGetHandleByIndex(device_index)
    except Exception as exc:  # noqa: BLE001
        notes.append(f"NVML has no device {device_index}: {exc}")
        return None


def _clock_event_reasons(nvml: Any, handle: Any) -> list[str]:
    """Names of the active clock-event (throttle) reasons, e.g. ``sw_power_cap``; ``[]`` when none."""
    getter = (
        getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    mask = getter(handle)
    names = []
    for attr in dir(nvml):
        match = re.fullmatch(r"nvmlClocks(?:Event|Throttle)Reason(\w+)", attr)
        if match is None or match.group(1) in ("None", "All", "Unknown"):
            continue
        bit = getattr(nvml, attr)
        if isinstance(bit, int) and bit and mask & bit:
            names.append(re.sub(r"(?<!^)(?=[A-Z])", "_", match.group(1)).lower())
    return sorted(set(names))


def _read_state(nvml: Any, handle: Any, notes: list[str]) -> dict[str, Any]:
    """Clocks (MHz), temperature (C), power (W) and clock-event reasons of one NVML device."""
    power_mw = _nvml_read(notes, "power draw", lambda: nvml.nvmlDeviceGetPowerUsage(handle))
    return {
        "sm_clock_mhz": _nvml_read(notes, "SM clock", lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
        "memory_clock_mhz": _nvml_read(
            notes, "memory clock", lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)
        ),
        "temperature_c": _nvml_read(
            notes, "temperature", lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
        ),
        "power_w": power_mw / 1000.0 if power_mw is not None else None,
        "clock_event_reasons": _nvml_read(notes, "clock event reasons", lambda: _clock_event_reasons(nvml, handle)),
    }


def _read_static(nvml: Any, handle: Any, notes: list[str]) -> dict[str, Any]:
    """Max clocks, power limit, UUID, PCI bus id and NVML index of one NVML device."""
    limit_mw = _nvml_read(notes, "power limit", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
    pci = _nvml_read(notes, "PCI info", lambda: nvml.nvmlDeviceGetPciInfo(handle))
    return {
        "max_sm_clock_mhz": _nvml_read(
            notes, "max SM clock", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)
        ),
        "max_memory_clock_mhz": _nvml_read(
            notes, "max memory clock", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)
        ),
        "power_limit_w": limit_mw / 1000.0 if limit_mw is not None else None,
        "uuid": _text(_nvml_read(notes, "UUID", lambda: nvml.nvmlDeviceGetUUID(handle))),
        "pci_bus_id": _text(getattr(pci, "busId", None)) if pci is not None else None,
        "nvml_index": _nvml_read(notes, "index", lambda: nvml.nvmlDeviceGetIndex(handle)),
    }


def _driver_versions(nvml: Any, notes: list[str]) -> dict[str, Any]:
    """Driver version (``580.159.03``) and the CUDA version it supports (``13.0``)."""
    cuda = _nvml_read(notes, "CUDA driver version", nvml.nvmlSystemGetCudaDriverVersion)
    return {
        "driver_version": _text(_nvml_read(notes, "driver version", nvml.nvmlSystemGetDriverVersion)),
        "cuda_driver_version": f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else None,
    }


TELEMETRY_GROUPS = ("driver", "static", "memory_bus", "state")


def telemetry(
    gpu: dict[str, Any] | None, device_index: int | None, notes: list[str], what: tuple[str, ...] = ("static", "state")
) -> dict[str, Any]:
    """Readings of one GPU in one NVML session; never raises (what cannot be read is left out, and ``notes`` says
    why). ``what``: ``driver`` (``driver_version``, ``cuda_driver_version``: asks no device), ``static``
    (``max_sm_clock_mhz``, ``max_memory_clock_mhz``, ``power_limit_w``, ``uuid``, ``pci_bus_id``, ``nvml_index``),
    ``memory_bus`` (``memory_bus_width_bits``), ``state`` (``sm_clock_mhz``, ``memory_clock_mhz``,
    ``temperature_c``, ``power_w``, ``clock_event_reasons``). The device: ``gpu``'s ``uuid`` or ``pci_bus_id``,
    else torch's ``device_index`` (None: by UUID or PCI bus id only)."""
    unknown = [w for w in what if w not in TELEMETRY_GROUPS]
    if unknown:
        raise ValueError(f"unknown telemetry group(s) {unknown}: choose from {', '.join(TELEMETRY_GROUPS)}")
    out: dict[str, Any] = {}
    with _nvml_session(notes) as nvml:
        if nvml is None:
            return out
        if "driver" in what:
            out.update(_driver_versions(nvml, notes))
        if not set(what) - {"driver"}:
            return out
        handle = _nvml_handle(nvml, gpu, device_index, notes)
        if handle is None:
            return out
        if "static" in what:
            out.update(_read_static(nvml, handle, notes))
        if "memory_bus" in what:
            out["memory_bus_width_bits"] = _nvml_read(
                notes, "memory bus width", lambda: nvml.nvmlDeviceGetMemoryBusWidth(handle)
            )
        if "state" in what:
            out.update(_read_state(nvml, handle, notes))
    return out
