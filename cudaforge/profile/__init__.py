"""Hardware feedback for the Judge: Nsight Compute profiles, GPU spec sheets and rooflines.

``Profiler(cfg, cache_dir, lock_dir).profile(task, source, gpu) -> ProfileResult`` runs one
forward of a correct candidate under ncu in an isolated worker and reports the candidate's own
kernels; ``gpu_lock`` is the per-GPU lock the evaluator's timing shares; ``gpu_spec_sheet`` and
``PEAK_TABLE`` describe the device; ``roofline`` gives a task's floor time. docs/profiling.md
explains the protocol. Importing this package does not import torch.
"""

from cudaforge.hardware.gpu_lock import GpuLockTimeout, gpu_lock
from cudaforge.hardware.roofline import floor_ms, make_roofline
from cudaforge.hardware.specs import PEAK_TABLE, GpuPeaks, UnknownGPUWarning, gpu_spec_sheet, peak_rates, table_key
from cudaforge.languages import is_own_kernel, kernel_base_name
from cudaforge.languages import kernel_names as candidate_kernel_names
from cudaforge.profile.cache import ProfileCache, cache_key
from cudaforge.profile.metrics import CUDAFORGE24, MetricSetName, metric_list, selection_args
from cudaforge.profile.parse import NcuParseError, parse_ncu_csv, parse_ncu_report
from cudaforge.profile.profiler import Profiler
from cudaforge.profile.records import KernelProfile, MetricValue, ProfileResult, ProfileStatus, Roofline, RuleMessage
from cudaforge.profile.settings import ProfileSettings
from cudaforge.tasks.cost import roofline, task_cost

__all__ = [
    "CUDAFORGE24",
    "PEAK_TABLE",
    "GpuLockTimeout",
    "GpuPeaks",
    "KernelProfile",
    "MetricSetName",
    "MetricValue",
    "NcuParseError",
    "ProfileCache",
    "ProfileResult",
    "ProfileSettings",
    "ProfileStatus",
    "Profiler",
    "Roofline",
    "RuleMessage",
    "UnknownGPUWarning",
    "cache_key",
    "candidate_kernel_names",
    "floor_ms",
    "gpu_lock",
    "gpu_spec_sheet",
    "is_own_kernel",
    "kernel_base_name",
    "make_roofline",
    "metric_list",
    "parse_ncu_csv",
    "parse_ncu_report",
    "peak_rates",
    "roofline",
    "selection_args",
    "table_key",
    "task_cost",
]
