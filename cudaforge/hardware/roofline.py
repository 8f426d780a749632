"""The roofline on a GPU: a task's floor time from its cost (FLOPs and the fewest bytes it must move,
``cudaforge.tasks.cost``) and the GPU's peak rates.

floor = max(FLOPs / peak FLOP/s for the task's dtype, bytes / peak bandwidth); a candidate's
fraction of speed of light is floor / its measured time. The integrity guards use the same
floor (:func:`floor_ms`): a time below it is impossible. No task code here: the cost is the caller's.
"""

from __future__ import annotations

from typing import Any

from cudaforge.hardware.specs import peak_for_dtype
from cudaforge.profile_types import Roofline


def floor_ms(
    flops: float | None, min_bytes: float | None, peak_flops_per_s: float | None, peak_bytes_per_s: float | None
) -> tuple[float | None, float | None, float | None]:
    """(floor, compute floor, memory floor) in ms; a floor is None where its inputs are unknown."""
    compute = flops / peak_flops_per_s * 1e3 if flops is not None and peak_flops_per_s else None
    memory = min_bytes / peak_bytes_per_s * 1e3 if min_bytes is not None and peak_bytes_per_s else None
    known = [x for x in (compute, memory) if x is not None]
    return (max(known) if known else None), compute, memory


def make_roofline(
    cost: dict[str, Any],
    peaks: dict[str, Any] | None,
    measured_ms: float | None = None,
    measured_from: str = "",
    allow_tf32: bool = False,
) -> Roofline:
    """The Roofline record from a task cost and a GPU's peak rates (``peak_rates`` output, or None
    without a GPU), with the fraction of speed of light when a time was measured."""
    notes = list(cost.get("notes", []))
    result = Roofline(
        flops=cost.get("flops"), min_bytes=cost.get("min_bytes"), dtype=cost.get("dtype", ""), notes=notes
    )
    if result.flops is not None and result.min_bytes:
        result.arithmetic_intensity = result.flops / result.min_bytes
    if result.flops == 0.0:
        notes.append("FlopCounterMode counts matmuls, convolutions and attention only: 0 FLOPs means memory-bound")
    if not peaks:
        notes.append("no GPU peak rates: no floor time")
        return result
    peak_flops, rate = peak_for_dtype(peaks, result.dtype or "float32", allow_tf32)
    bandwidth = peaks.get("memory_gbs")
    result.peak_flops_per_s = peak_flops
    result.peak_bytes_per_s = bandwidth * 1e9 if bandwidth else None
    if rate == "fp32_tflops" and result.dtype not in ("float32", ""):
        notes.append(f"no {result.dtype} peak rate for this GPU: the fp32 rate bounds compute")
    result.floor_ms, result.compute_floor_ms, result.memory_floor_ms = floor_ms(
        result.flops, result.min_bytes, result.peak_flops_per_s, result.peak_bytes_per_s
    )
    if result.compute_floor_ms is not None and result.memory_floor_ms is not None:
        result.bound = "compute" if result.compute_floor_ms > result.memory_floor_ms else "memory"
    elif result.memory_floor_ms is not None:
        result.bound = "memory"
    return with_measurement(result, measured_ms, measured_from)


def with_measurement(result: Roofline, measured_ms: float | None, measured_from: str) -> Roofline:
    """Set the measured time and the fraction of speed of light (floor / measured) on ``result``."""
    result.measured_ms, result.measured_from = measured_ms, measured_from if measured_ms else ""
    result.sol_fraction = result.floor_ms / measured_ms if result.floor_ms and measured_ms else None
    return result
