"""The profiler's records: what profiling one candidate produced (``ProfileResult``, with its kernels, metrics,
rules and roofline). Plain dataclasses of JSON values like the other layer-crossing records of
``cudaforge/types.py``, kept beside them so that the layers below the profiler (the hardware's roofline, a task's
cost) can use them; ``cudaforge.profile.records`` re-exports them."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from cudaforge.types import Record


class ProfileStatus(str, enum.Enum):
    """Outcome of profiling one candidate."""

    OK = "ok"
    """ncu ran and its metrics are in ``kernels``."""
    FALLBACK = "fallback"
    """ncu could not run (missing, counters not permitted, timed out): kernel times come from
    torch.profiler, with the roofline; ``message`` says why."""
    UNAVAILABLE = "unavailable"
    """No GPU to run on: only the roofline's FLOPs and bytes (and no kernels)."""
    TIMEOUT = "timeout"
    """Neither ncu nor the fallback finished in time, or the GPU lock was never free."""
    ERROR = "error"
    """The candidate could not be profiled: its import or forward raised or crashed."""


@dataclass
class MetricValue(Record):
    """One metric of one kernel, as ncu reported it."""

    value: float | str | None
    """A number, ncu's text where it is not one, or None for ``n/a``."""
    unit: str = ""
    """ncu's unit (``byte``, ``nsecond``, ``%``, ``cycle``, ``inst`` ...), kept as reported."""
    section: str = ""
    """The ncu section the metric came from (``Command line profiler metrics`` for a metric list)."""


@dataclass
class RuleMessage(Record):
    """One result of ncu's guided analysis (rules run by the section sets)."""

    rule: str
    """Rule identifier, e.g. ``SOLBottleneck``."""
    type: str
    """``OPT`` (optimisation), ``WRN``, ``INF`` or ``ERR``."""
    message: str
    section: str = ""
    kernel: str = ""
    """The kernel it is about (its base name)."""
    speedup_type: str = ""
    """``estimated``/``local``/``global`` where ncu estimates a speedup."""
    speedup_pct: float | None = None


@dataclass
class KernelProfile(Record):
    """One kernel launch inside the profiled forward."""

    id: int
    """Launch index within the forward (ncu's ID)."""
    name: str
    """The name as reported (demangled, with parameters)."""
    base_name: str
    """The bare function name (no ``void``, namespaces, template arguments or parameters)."""
    own: bool
    """True when the candidate's source defines this kernel (``__global__`` or ``@triton.jit``)."""
    grid: str = ""
    """Launch grid, e.g. ``(1024, 1, 1)``."""
    block: str = ""
    """Launch block, e.g. ``(256, 1, 1)``."""
    duration_ms: float | None = None
    """Kernel duration (ncu's ``gpu__time_duration.sum``, or torch.profiler's in a fallback)."""
    metrics: dict[str, MetricValue] = field(default_factory=dict)
    rules: list[RuleMessage] = field(default_factory=list)


@dataclass
class Roofline(Record):
    """The task's speed-of-light floor on one GPU, and how close a measured time comes to it.

    ``flops`` come from torch's FlopCounterMode (matmuls, convolutions, attention; elementwise
    ops count zero), ``min_bytes`` are the bytes the reference cannot avoid moving: its inputs,
    outputs, parameters and buffers, each once.
    """

    flops: float | None = None
    min_bytes: int | None = None
    dtype: str = ""
    """The dtype whose peak rate bounds the compute time (``float32``, ``bfloat16`` ...)."""
    peak_flops_per_s: float | None = None
    """The peak used for ``dtype`` (datasheet dense rate, or derived)."""
    peak_bytes_per_s: float | None = None
    compute_floor_ms: float | None = None
    memory_floor_ms: float | None = None
    floor_ms: float | None = None
    """max(compute floor, memory floor): no kernel on this GPU can be faster."""
    bound: str = ""
    """``memory`` or ``compute``: which floor is higher."""
    arithmetic_intensity: float | None = None
    """flops / min_bytes."""
    measured_ms: float | None = None
    measured_from: str = ""
    """Where ``measured_ms`` came from: ``evaluator``, ``ncu`` or ``torch.profiler``."""
    sol_fraction: float | None = None
    """floor_ms / measured_ms: 1.0 is the speed of light."""
    notes: list[str] = field(default_factory=list)


@dataclass
class ProfileResult(Record):
    """Everything one profiling run found. JSON-serialisable."""

    task_id: str
    candidate_hash: str
    status: ProfileStatus
    message: str = ""
    """Why the status is not ``ok`` (ncu missing, ERR_NVGPUCTRPERM, timeout ...), or notes for the Judge."""
    metric_set: str = ""
    metrics: list[str] = field(default_factory=list)
    """The metric names asked for (the set's list, or the user's), besides a section set."""
    kernels: list[KernelProfile] = field(default_factory=list)
    """The reported kernels, in launch order: the candidate's own (and library kernels when asked)."""
    totals: dict[str, MetricValue] = field(default_factory=dict)
    """Over the own kernels of one forward: sums of counters, duration-weighted means of rates and
    percentages; ``gpu__time_duration.sum`` is the summed duration."""
    own_kernel_ms: float | None = None
    """Summed duration of the candidate's own kernels."""
    library_kernel_ms: float | None = None
    """Summed duration of the other kernels the forward launched (torch, cuBLAS ...), listed or not."""
    library_kernel_names: list[str] = field(default_factory=list)
    """Base names of those other kernels, in launch order, without repeats."""
    rules: list[RuleMessage] = field(default_factory=list)
    """ncu's rule messages for the reported kernels (section sets only)."""
    roofline: Roofline | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    """The GPU's spec sheet (``cudaforge.hardware.specs.gpu_spec_sheet``)."""
    tools: dict[str, Any] = field(default_factory=dict)
    """ncu, torch, triton and driver versions."""
    cache_key: str = ""
    cached: bool = False
    phase_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    artifacts: dict[str, str] = field(default_factory=dict)
    """Paths of kept raw outputs (``ncu_csv``, ``ncu_log``, ``ncu_rep``)."""

    @property
    def ok(self) -> bool:
        """True when ncu metrics were collected."""
        return self.status is ProfileStatus.OK

    def judge_metrics(self) -> dict[str, Any]:
        """The flat table the Judge reads: ``name -> {"value", "unit"}`` (or text).

        One kernel: its metrics under their ncu names. Several: ``[kernel#id] name`` per kernel,
        then ``[total] name`` over the forward. Then launch shapes, kernels the candidate did not
        write, rule messages, and the roofline (floor, bound, fraction of speed of light).
        """
        table: dict[str, Any] = {}
        several = len(self.kernels) > 1
        for k in self.kernels:
            prefix = f"[{k.base_name}#{k.id}] " if several else ""
            table[f"{prefix}launch"] = f"grid {k.grid or '?'} block {k.block or '?'}" + (
                "" if k.own else " (library kernel)"
            )
            if not k.metrics and k.duration_ms is not None:
                table[f"{prefix}duration (torch.profiler)"] = {"value": k.duration_ms * 1e3, "unit": "us"}
            for name, metric in k.metrics.items():
                table[f"{prefix}{name}"] = {"value": metric.value, "unit": metric.unit}
        if several:
            for name, metric in self.totals.items():
                table[f"[total] {name}"] = {"value": metric.value, "unit": metric.unit}
        if self.library_kernel_names:
            table["other kernels in the forward"] = ", ".join(self.library_kernel_names)
            if self.library_kernel_ms is not None:
                table["other kernels' time"] = {"value": self.library_kernel_ms * 1e3, "unit": "us"}
        for rule in self.rules:
            table[f"rule {rule.rule} ({rule.type}, {rule.kernel})"] = rule.message
        r = self.roofline
        if r is not None and r.floor_ms is not None:
            table["roofline floor"] = {"value": r.floor_ms * 1e3, "unit": f"us ({r.bound}-bound)"}
            if r.sol_fraction is not None:
                table["fraction of speed of light"] = {"value": round(r.sol_fraction * 100, 2), "unit": "%"}
        return table

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data, with the Judge's table under ``judge_metrics`` (not read back)."""
        return {**super().to_dict(), "judge_metrics": self.judge_metrics()}

    def summary(self, max_metrics: int = 40) -> str:
        """A compact text for the Judge: status, each kernel with its metrics, totals, rules, roofline."""
        lines = [f"profile {self.status.value} ({self.metric_set}) for {self.task_id} / {self.candidate_hash}"]
        if self.message:
            lines.append(self.message)
        if self.spec.get("name"):
            lines.append(f"GPU: {self.spec['name']}")
        for k in self.kernels:
            duration = f"{k.duration_ms * 1e3:.2f} us" if k.duration_ms is not None else "n/a"
            owner = "" if k.own else " [library]"
            lines.append(f"kernel #{k.id} {k.base_name}{owner}: grid {k.grid} block {k.block}, {duration}")
            for name, metric in list(k.metrics.items())[:max_metrics]:
                lines.append(f"  {name} = {_fmt(metric.value)} {metric.unit}".rstrip())
        if len(self.kernels) > 1 and self.totals:
            lines.append("totals over one forward (own kernels):")
            for name, metric in list(self.totals.items())[:max_metrics]:
                lines.append(f"  {name} = {_fmt(metric.value)} {metric.unit}".rstrip())
        if self.library_kernel_names:
            lib_ms = f"{self.library_kernel_ms * 1e3:.2f} us" if self.library_kernel_ms is not None else "n/a"
            lines.append(f"other kernels in the forward: {', '.join(self.library_kernel_names)} ({lib_ms})")
        for rule in self.rules:
            speedup = f" (est. speedup {rule.speedup_pct:g}%)" if rule.speedup_pct else ""
            lines.append(f"[{rule.type}] {rule.kernel} {rule.rule}: {rule.message}{speedup}")
        r = self.roofline
        if r is not None and (r.flops is not None or r.min_bytes is not None):
            line = f"roofline: {_fmt(r.flops)} FLOP, {_fmt(r.min_bytes)} B minimum traffic"
            if r.floor_ms is not None:
                line += f", {r.bound}-bound, floor {r.floor_ms * 1e3:.2f} us"
            if r.sol_fraction is not None and r.measured_ms is not None:
                line += f", measured {r.measured_ms * 1e3:.2f} us ({r.measured_from}): {r.sol_fraction:.1%} of speed of light"
            lines.append(line)
        return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)
