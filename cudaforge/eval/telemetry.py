"""The GPU's state around each batch of timed calls (NVML): clocks, temperature, power, throttle reasons.

A batch is *clean* when neither the sample before it nor the one after shows a slowdown (thermal, hardware or power
brake) or an SM clock far below the GPU's maximum while busy. The verifier measures an unclean batch again (at most
``eval.telemetry_remeasure`` times per evaluation) and stores every sample with the result; a result none of whose
batches was clean is flagged in reports. Everything here is pure except ``sample``.
"""

from __future__ import annotations

from typing import Any

SLOWDOWNS = frozenset({"hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"})
"""NVML clock-event reasons that mean the GPU ran slower than it could (power capping is the steady state of a
power-bound kernel, and an idle GPU lowers its clocks: neither makes a batch unclean)."""

CLOCK_FLOOR = 0.7
"""A busy GPU's SM clock below this fraction of its maximum is off its usual value."""

KEYS = ("sm_clock_mhz", "temperature_c", "power_w", "clock_event_reasons")


def sample(device_index: int = 0) -> dict[str, Any]:
    """One NVML reading of the GPU (``KEYS``; None where unreadable). Never raises."""
    from cudaforge.eval.fingerprint import gpu_state

    state = gpu_state(device_index)
    return {k: state.get(k) for k in KEYS}


def unclean(reading: dict[str, Any], max_sm_clock_mhz: float | None) -> str:
    """Why ``reading`` makes its batch unclean ("" when it does not)."""
    reasons = reading.get("clock_event_reasons") or []
    if not isinstance(reasons, list):
        return ""
    slow = sorted(SLOWDOWNS.intersection(reasons))
    if slow:
        return "throttled: " + ", ".join(slow)
    clock = reading.get("sm_clock_mhz")
    if (
        isinstance(clock, (int, float))
        and isinstance(max_sm_clock_mhz, (int, float))
        and max_sm_clock_mhz > 0
        and clock < CLOCK_FLOOR * max_sm_clock_mhz
        and "gpu_idle" not in reasons
        and "sw_power_cap" not in reasons
    ):
        return f"SM clock {clock:g} MHz, below {CLOCK_FLOOR:.0%} of its maximum {max_sm_clock_mhz:g} MHz"
    return ""


def batch_record(
    trials: int, before: dict[str, Any], after: dict[str, Any], max_sm_clock_mhz: float | None, remeasure: bool
) -> dict[str, Any]:
    """What is stored for one batch: its size, both readings, why it was unclean ("" when clean), whether it was
    measured again."""
    why = unclean(before, max_sm_clock_mhz) or unclean(after, max_sm_clock_mhz)
    return {"trials": trials, "before": before, "after": after, "unclean": why, "remeasured": bool(why and remeasure)}


def summary(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """The telemetry of one evaluation: its batches, how many were clean, and ``never_clean`` (no kept batch clean)."""
    kept = [b for b in batches if not b.get("remeasured")]
    clean = sum(1 for b in kept if not b.get("unclean"))
    return {
        "batches": batches,
        "clean_batches": clean,
        "kept_batches": len(kept),
        "remeasured": sum(1 for b in batches if b.get("remeasured")),
        "never_clean": bool(kept) and clean == 0,
    }
