"""The GPU's spec sheet for the Judge, and the peak rates the roofline divides by.

:func:`gpu_spec_sheet` reads the device itself (torch's device properties, NVML's clocks, bus
width and power limit) and adds peak rates from :data:`PEAK_TABLE`. A GPU that is not in the
table gets the rates that can be derived from its clocks, SM count and bus width, and a warning
(:class:`UnknownGPUWarning`); nothing here raises for an unknown or missing GPU.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import asdict, dataclass
from typing import Any

from cudaforge.vendors import current


class UnknownGPUWarning(UserWarning):
    """The GPU is not in PEAK_TABLE: its peak rates are derived (or missing)."""


@dataclass(frozen=True)
class GpuPeaks:
    """Peak rates of one GPU: memory bandwidth in GB/s (1e9 B/s), compute in TFLOP/s (TOP/s for int8).

    ``None`` where the GPU has no such unit (no TF32 or BF16 before Ampere).
    """

    memory_gbs: float
    fp32_tflops: float
    tf32_tflops: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    int8_tops: float | None
    label: str = ""
    """The product the numbers are for."""


# Datasheet peaks, DENSE (the sheets' "with sparsity" figures halved), boost clocks. Tensor rates
# for fp16/bf16 are with fp32 accumulation (what torch uses); GeForce cards run that at half their
# fp16-accumulate rate. FP32 is the CUDA-core (non-tensor) rate.
PEAK_TABLE: dict[str, GpuPeaks] = {
    "b200": GpuPeaks(8000, 80.0, 1100.0, 2250.0, 2250.0, 4500.0, "B200 (HGX)"),
    "h200": GpuPeaks(4800, 67.0, 494.5, 989.5, 989.5, 1979.0, "H200 SXM 141GB"),
    "h200-nvl": GpuPeaks(4800, 60.0, 417.5, 835.5, 835.5, 1670.5, "H200 NVL"),
    "h100-sxm": GpuPeaks(3350, 66.9, 494.7, 989.4, 989.4, 1978.9, "H100 SXM5 80GB"),
    "h100-pcie": GpuPeaks(2000, 51.2, 378.0, 756.0, 756.0, 1513.0, "H100 PCIe 80GB"),
    "h100-nvl": GpuPeaks(3900, 60.0, 417.5, 835.5, 835.5, 1670.5, "H100 NVL 94GB"),
    "a100-40gb": GpuPeaks(1555, 19.5, 156.0, 312.0, 312.0, 624.0, "A100 40GB (SXM4/PCIe)"),
    "a100-80gb": GpuPeaks(2039, 19.5, 156.0, 312.0, 312.0, 624.0, "A100 SXM4 80GB"),
    "a100-80gb-pcie": GpuPeaks(1935, 19.5, 156.0, 312.0, 312.0, 624.0, "A100 PCIe 80GB"),
    "l40s": GpuPeaks(864, 91.6, 183.0, 362.05, 362.05, 733.0, "L40S"),
    "l40": GpuPeaks(864, 90.5, 90.5, 181.0, 181.0, 362.0, "L40"),
    "l4": GpuPeaks(300, 30.3, 60.0, 121.0, 121.0, 242.5, "L4"),
    "a10g": GpuPeaks(600, 31.2, 62.5, 125.0, 125.0, 250.0, "A10G (A10 datasheet; AWS publishes none)"),
    "a10": GpuPeaks(600, 31.2, 62.5, 125.0, 125.0, 250.0, "A10"),
    "t4": GpuPeaks(320, 8.1, None, 65.0, None, 130.0, "T4"),
    "rtx-4090": GpuPeaks(1008, 82.6, 82.6, 165.2, 165.2, 660.6, "GeForce RTX 4090"),
    "rtx-3090": GpuPeaks(936, 35.6, 35.6, 71.0, 71.0, 284.0, "GeForce RTX 3090"),
    "rtx-6000-ada": GpuPeaks(960, 91.1, 182.1, 364.2, 364.2, 728.5, "RTX 6000 Ada Generation"),
    "quadro-rtx-6000": GpuPeaks(672, 16.3, None, 130.5, None, 261.0, "Quadro RTX 6000"),
    "v100-sxm2": GpuPeaks(900, 15.7, None, 125.0, None, None, "V100 SXM2"),
}
"""Peak rates keyed by normalised GPU names (see :func:`table_key`)."""

_PATTERNS: list[tuple[str, str]] = [  # first match wins: specific variants before families
    ("b200", r"\bb200\b"),
    ("h200-nvl", r"\bh200\b.*\bnvl\b"),
    ("h200", r"\bh200\b"),
    ("h100-nvl", r"\bh100\b.*\bnvl\b"),
    ("h100-pcie", r"\bh100\b.*\bpcie\b"),
    ("h100-sxm", r"\bh100\b"),
    ("a100-80gb-pcie", r"\ba100\b(?=.*\b80gb\b)(?=.*\bpcie\b)"),
    ("a100-80gb", r"\ba100\b.*\b80gb\b"),
    ("a100-40gb", r"\ba100\b"),
    ("l40s", r"\bl40s\b"),
    ("l40", r"\bl40\b"),
    ("l4", r"\bl4\b"),
    ("a10g", r"\ba10g\b"),
    ("a10", r"\ba10\b"),
    ("t4", r"\bt4\b"),
    ("rtx-4090", r"\brtx 4090\b(?! d)"),
    ("rtx-3090", r"\brtx 3090\b(?! ti)"),
    ("rtx-6000-ada", r"\brtx 6000 ada\b"),
    ("quadro-rtx-6000", r"\bquadro rtx 6000\b"),
    ("v100-sxm2", r"\bv100\b"),
]

_FP32_LANES_PER_SM = {(7, 0): 64, (7, 5): 64, (8, 0): 64}
"""FP32 lanes per SM where it is not 128 (Volta, Turing, GA100); Ampere GA10x and later have 128."""


def normalise_gpu_name(name: str) -> str:
    """Lower case, ``-``/``_`` as spaces, single spaces; ``NVIDIA``/``GeForce``/``Tesla`` kept
    out (``Quadro`` stays: it tells the Quadro RTX 6000 from the RTX 6000 Ada)."""
    text = re.sub(r"[-_/,()]+", " ", name.lower())
    text = re.sub(r"\b(nvidia|geforce|tesla)\b", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def table_key(name: str) -> str | None:
    """The :data:`PEAK_TABLE` key for a device name (``NVIDIA H100 80GB HBM3`` -> ``h100-sxm``), or None."""
    text = normalise_gpu_name(name)
    for key, pattern in _PATTERNS:
        if re.search(pattern, text):
            return key
    return None


def derived_peaks(
    sm_count: int | None,
    compute_capability: str | None,
    max_sm_clock_mhz: float | None,
    max_memory_clock_mhz: float | None,
    memory_bus_width_bits: int | None,
) -> dict[str, float | None]:
    """What can be computed without a datasheet: FP32 = SMs x FP32 lanes x 2 x boost clock; memory
    bandwidth = memory clock x bus width x 2 (double data rate) / 8 (NVML reports HBM and GDDR
    clocks so that this holds). Tensor rates are not derivable and stay None."""
    fp32 = None
    if sm_count and compute_capability and max_sm_clock_mhz:
        major, minor = (int(x) for x in compute_capability.split(".")[:2])
        lanes = _FP32_LANES_PER_SM.get((major, minor), 128)
        fp32 = sm_count * lanes * 2 * max_sm_clock_mhz * 1e6 / 1e12
    memory = None
    if max_memory_clock_mhz and memory_bus_width_bits:
        memory = max_memory_clock_mhz * 1e6 * memory_bus_width_bits * 2 / 8 / 1e9
    return {
        "memory_gbs": memory,
        "fp32_tflops": fp32,
        "tf32_tflops": None,
        "fp16_tflops": None,
        "bf16_tflops": None,
        "int8_tops": None,
    }


def peak_rates(name: str, **device: Any) -> dict[str, Any]:
    """Peak rates for a device name: the table's (``source: table``), else derived from ``device``
    (keyword arguments of :func:`derived_peaks`) with an :class:`UnknownGPUWarning`
    (``source: derived``). Always returns a dict with every rate key (None where unknown)."""
    key = table_key(name) if name else None
    if key is not None:
        peaks = asdict(PEAK_TABLE[key])
        label = peaks.pop("label")
        return {**peaks, "table_key": key, "label": label, "source": "table", "warnings": []}
    args = {
        k: device.get(k)
        for k in ("sm_count", "compute_capability", "max_sm_clock_mhz", "max_memory_clock_mhz", "memory_bus_width_bits")
    }
    message = (
        f"GPU {name or '(unnamed)'!r} is not in cudaforge's peak table: memory bandwidth and FP32 rate are "
        "derived from clocks, SM count and bus width where known; tensor-core rates are unknown"
    )
    warnings.warn(message, UnknownGPUWarning, stacklevel=2)
    return {**derived_peaks(**args), "table_key": None, "label": name, "source": "derived", "warnings": [message]}


def peak_for_dtype(peaks: dict[str, Any], dtype: str, allow_tf32: bool = False) -> tuple[float | None, str]:
    """(FLOP/s, which rate) bounding compute in ``dtype``: fp32 uses the CUDA-core rate (TF32 if
    allowed), fp16/bf16/int8 the tensor rates; anything else falls back to fp32."""
    tflops_key = {
        "float32": "tf32_tflops" if allow_tf32 else "fp32_tflops",
        "float16": "fp16_tflops",
        "bfloat16": "bf16_tflops",
        "int8": "int8_tops",
    }.get(dtype, "fp32_tflops")
    value = peaks.get(tflops_key)
    if value is None and tflops_key != "fp32_tflops":
        tflops_key, value = "fp32_tflops", peaks.get("fp32_tflops")
    return (value * 1e12 if value else None), tflops_key


# --------------------------------------------------------------------------- the device


def _nvml_static(uuid: str | None, notes: list[str]) -> dict[str, Any]:
    """Max SM and memory clocks (MHz), memory bus width (bits), power limit (W) and driver version of the device
    with this UUID, from the vendor's telemetry (NVML); None (with a note) for whatever cannot be read."""
    keys = ("max_sm_clock_mhz", "max_memory_clock_mhz", "memory_bus_width_bits", "power_limit_w", "driver_version")
    if not uuid:
        notes.append("no device UUID: NVML readings skipped")
        return dict.fromkeys(keys)
    readings = current().telemetry({"uuid": uuid}, None, notes, ("driver", "static", "memory_bus"))
    return {key: readings.get(key) for key in keys}


def _uuid(props: Any) -> str | None:
    raw = str(getattr(props, "uuid", "") or "").strip()
    if not raw:
        return None
    return raw if raw.startswith(("GPU-", "MIG-")) else f"GPU-{raw}"


def gpu_spec_sheet(device_index: int | None = None) -> dict[str, Any]:
    """The Judge's spec sheet of a torch-visible GPU, as a JSON-serialisable dict.

    Keys: name, compute_capability, sm_count, memory_bytes, l2_cache_bytes,
    shared_memory_per_block_bytes, shared_memory_per_block_optin_bytes,
    shared_memory_per_sm_bytes, registers_per_sm, max_threads_per_sm, warp_size, uuid,
    max_sm_clock_mhz, max_memory_clock_mhz, memory_bus_width_bits, power_limit_w,
    driver_version, peaks (:func:`peak_rates`: bandwidth in GB/s, rates in TFLOP/s), warnings,
    notes. An unknown GPU warns (:class:`UnknownGPUWarning`) and gets derived peaks. Without a
    GPU: ``name`` None and a note. Needs torch (call it in a worker process).
    """
    import torch

    notes: list[str] = []
    sheet: dict[str, Any] = {"name": None, "peaks": {}, "warnings": [], "notes": notes}
    if not torch.cuda.is_available():
        notes.append("no GPU visible to torch")
        return sheet
    index = torch.cuda.current_device() if device_index is None else device_index
    props = torch.cuda.get_device_properties(index)
    sheet.update(
        name=props.name,
        compute_capability=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        memory_bytes=int(props.total_memory),
        l2_cache_bytes=int(getattr(props, "L2_cache_size", 0)) or None,
        shared_memory_per_block_bytes=getattr(props, "shared_memory_per_block", None),
        shared_memory_per_block_optin_bytes=getattr(props, "shared_memory_per_block_optin", None),
        shared_memory_per_sm_bytes=getattr(props, "shared_memory_per_multiprocessor", None),
        registers_per_sm=getattr(props, "regs_per_multiprocessor", None),
        max_threads_per_sm=getattr(props, "max_threads_per_multi_processor", None),
        warp_size=getattr(props, "warp_size", None),
        uuid=_uuid(props),
    )
    sheet.update(_nvml_static(sheet["uuid"], notes))
    if sheet["memory_bus_width_bits"] is None:
        sheet["memory_bus_width_bits"] = getattr(props, "memory_bus_width", None)
    peaks = peak_rates(props.name, **{k: v for k, v in sheet.items() if k != "name"})
    sheet["warnings"] = peaks.pop("warnings")
    sheet["peaks"] = peaks
    return sheet


ARCHITECTURES: dict[str, str] = {
    "7.0": "Volta",
    "7.2": "Volta",
    "7.5": "Turing",
    "8.0": "Ampere",
    "8.6": "Ampere",
    "8.7": "Ampere",
    "8.9": "Ada Lovelace",
    "9.0": "Hopper",
    "10.0": "Blackwell",
    "10.3": "Blackwell",
    "12.0": "Blackwell",
    "12.1": "Blackwell",
}
"""NVIDIA's architecture names by compute capability."""

COMPUTE_CAPABILITIES: dict[str, str] = {
    "b200": "10.0",
    "h200": "9.0",
    "h200-nvl": "9.0",
    "h100-sxm": "9.0",
    "h100-pcie": "9.0",
    "h100-nvl": "9.0",
    "a100-40gb": "8.0",
    "a100-80gb": "8.0",
    "a100-80gb-pcie": "8.0",
    "l40s": "8.9",
    "l40": "8.9",
    "l4": "8.9",
    "a10g": "8.6",
    "a10": "8.6",
    "t4": "7.5",
    "rtx-4090": "8.9",
    "rtx-3090": "8.6",
    "rtx-6000-ada": "8.9",
    "quadro-rtx-6000": "7.5",
    "v100-sxm2": "7.0",
}
"""The compute capability of each GPU of ``cudaforge.hardware.specs.PEAK_TABLE``, by its key."""


def named_gpu_sheet(name: str) -> dict[str, Any]:
    """The spec sheet the prompts show for ``agents.gpu_spec=NAME``: a GPU of the datasheet table
    (``cudaforge.hardware.specs.PEAK_TABLE``), named by its key (``quadro-rtx-6000``) or as a device
    reports it (``Quadro RTX 6000``).

    Only what the table holds: the product name, compute capability and architecture, and the
    datasheet peaks (memory bandwidth, FP32 and tensor rates). Figures that only the device itself
    reports (SM count, registers, shared memory, clocks) are absent. An unknown name is a
    ``ValueError`` listing the known ones.
    """
    key = name if name in PEAK_TABLE else table_key(name)
    if key is None:
        known = ", ".join(f"{k} ({PEAK_TABLE[k].label})" for k in PEAK_TABLE)
        raise ValueError(
            f"agents.gpu_spec={name!r}: no such GPU in the datasheet table; use 'local' or one of: {known}"
        )
    peaks = asdict(PEAK_TABLE[key])
    label = peaks.pop("label")
    capability = COMPUTE_CAPABILITIES.get(key)
    return {
        "name": label,
        "compute_capability": capability,
        "architecture": ARCHITECTURES.get(capability or "", ""),
        "peaks": {**peaks, "table_key": key, "label": label, "source": "table"},
    }
