"""Metric sets as data, and the ncu arguments that collect them.

``cudaforge24`` is exactly the 24 metrics of the CudaForge paper (arXiv 2511.01884). ``basic``,
``detailed`` and ``full`` are Nsight Compute's own section sets (``--set``), whose rules produce the
guided-analysis messages. ``custom`` is any list of metric names. Every run also collects
:data:`ALWAYS_COLLECTED` (the kernel duration), which the totals and the comparison with the
evaluator's timing need.
"""

from __future__ import annotations

import enum
import re

CUDAFORGE24: tuple[str, ...] = (
    "sm__cycles_active.avg",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__registers_per_thread",
    "sm__inst_executed.sum",
    "sm__inst_executed_pipe_fp32.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes.sum.per_second",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__t_sector_hit_rate.pct",
    "lts__throughput.avg.pct_of_peak_sustained_active",
    "smsp__warp_issue_stalled_memory_dependency_per_warp_active.pct",
    "smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_barrier_per_warp_active.pct",
    "smsp__warp_issue_stalled_branch_resolving_per_warp_active.pct",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
)
"""The CudaForge paper's 24 Nsight Compute metrics, in the paper's order."""

NEWER_EQUIVALENTS: dict[str, str] = {
    "sm__inst_executed_pipe_fp32.avg.pct_of_peak_sustained_active": "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "smsp__warp_issue_stalled_memory_dependency_per_warp_active.pct": "smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct",
}
"""Two of the paper's metrics that ncu 2025.3 reports as ``n/a`` on an H200 (sm_90; recorded in
tests/fixtures/ncu/), each with the nearest metric that chip has: FP32 work goes through the FMA pipes,
and a memory-dependency stall is counted as long scoreboard (already in the set) or MIO throttle.
``cudaforge24`` stays exactly the paper's list; the config option ``profile=cudaforge24_hopper`` adds these
two (as ``profile.metrics``), so the Judge reads a value for each on an H100 or H200."""

DURATION_METRIC = "gpu__time_duration.sum"
"""Kernel duration; its unit is a time unit (``nsecond`` with ``--print-units base``)."""

ALWAYS_COLLECTED: tuple[str, ...] = (DURATION_METRIC,)
"""Collected whatever the set: the per-kernel duration."""


class MetricSetName(str, enum.Enum):
    """Named metric sets (the profile group's ``metric_set``: ``cudaforge.config`` registers this enum)."""

    cudaforge24 = "cudaforge24"
    basic = "basic"
    detailed = "detailed"
    full = "full"
    custom = "custom"


NCU_SECTION_SETS = frozenset({MetricSetName.basic, MetricSetName.detailed, MetricSetName.full})
"""The sets that ncu itself defines (``--set NAME``); they run rules."""


def metric_list(metric_set: str, metrics: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The metric names passed with ``--metrics``: the set's own list (if any), then ``metrics``,
    then :data:`ALWAYS_COLLECTED`, without repeats.

    For ``custom`` the list is ``metrics`` alone (it must not be empty); for ncu's section sets it
    is the extras only, the sections being named with ``--set``.
    """
    name = MetricSetName(metric_set)
    if name is MetricSetName.custom and not metrics:
        raise ValueError("metric_set=custom needs a list of metric names (profile.metrics)")
    base = list(CUDAFORGE24) if name is MetricSetName.cudaforge24 else []
    seen: dict[str, None] = {}
    for metric in [*base, *metrics, *ALWAYS_COLLECTED]:
        seen.setdefault(metric.strip(), None)
    return [m for m in seen if m]


def selection_args(metric_set: str, metrics: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The ncu arguments that select what to collect: ``[--set NAME] --metrics a,b,...``."""
    name = MetricSetName(metric_set)
    args = ["--set", name.value] if name in NCU_SECTION_SETS else []
    return [*args, "--metrics", ",".join(metric_list(metric_set, metrics))]


def is_additive(name: str, unit: str) -> bool | None:
    """How a metric totals over the kernels of one forward.

    True: a count that adds up (bytes, instructions, cycles, durations: ``*.sum`` and the like).
    False: a rate or percentage, averaged weighted by kernel duration. None: a per-launch
    property that has no total (``launch__*``, ``device__*``).
    """
    if name.startswith(("launch__", "device__")):
        return None
    tokens = set(re.split(r"[._]+", name))
    if tokens & {"pct", "ratio", "rate"} or "per_second" in name or unit.strip() in ("%", "pct") or "/" in unit:
        return False
    return True
