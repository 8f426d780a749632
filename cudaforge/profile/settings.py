"""The profile group's settings, defined once: ``cudaforge/config.py`` registers :class:`ProfileConfig` with Hydra,
and the profiler's :class:`~cudaforge.profile.profiler.ProfileSettings` extends it with what the run supplies.
Imports nothing heavy."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudaforge.proc.sandbox import SandboxMode
from cudaforge.profile.metrics import MetricSetName as MetricSet


@dataclass
class ProfileConfig:
    """Nsight Compute profiling of correct candidates."""

    enabled: bool = True
    """Profile correct candidates for the Judge."""
    metric_set: MetricSet = MetricSet.cudaforge24
    """Which metrics to collect."""
    metrics: list[str] = field(default_factory=list)
    """The metric names when ``metric_set`` is ``custom``; with another set, extra metrics."""
    clock_control: str = "none"
    """ncu ``--clock-control`` (``none`` leaves the GPU clocks alone; ``base`` locks them at base, ncu's own default
    and the CudaForge authors' setting; a machine where clocks must not be changed needs ``none``)."""
    units: str = "base"
    """ncu ``--print-units``: ``base`` (every value in its base unit: bytes, nanoseconds; ours) or ``auto`` (ncu's
    default, scaled per value: Kbyte, usecond; what the CudaForge authors' Judge reads, without the units)."""
    timeout_s: float = 300.0
    """Timeout of each phase of the profiled worker (start, setup, warm-up, the profiled forward)."""
    compile_timeout_s: float = 600.0
    """Timeout of the profiled worker's import of the candidate (a build-cache miss compiles there)."""
    ncu_path: str = "ncu"
    """The ncu executable."""
    warmup: int = 3
    """Forwards run before the profiled one (ncu does not see them)."""
    include_library_kernels: bool = False
    """Also report the kernels the candidate did not write (torch's copies, cuBLAS ...)."""
    max_kernels: int = 200
    """ncu ``--launch-count``: at most this many launches of the forward are profiled."""
    output: str = "csv"
    """``csv`` (ncu prints CSV, one run) or ``report`` (a ``.ncu-rep`` kept with the run's artifacts)."""
    extra_args: list[str] = field(default_factory=list)
    """More ncu arguments, verbatim."""
    fallback: bool = True
    """When ncu cannot profile (missing, no counter permission, timeout), time kernels with torch.profiler."""
    lock_timeout_s: float | None = 1800.0
    """How long to wait for the GPU's lock, which profiling shares with timing (null: for ever)."""
    cache_dir: str | None = None
    """Where profiles are cached (null: ~/.cache/cudaforge/profile)."""
    lock_dir: str | None = None
    """Where the per-GPU lock files live (null: $CUDAFORGE_LOCK_DIR or ~/.cache/cudaforge/locks)."""
    sandbox: SandboxMode = SandboxMode.auto
    """The profiled candidate runs in the candidate's sandbox, ncu beside it (``auto``, ``required``: refused where a
    protection is missing), or, with ``off``, in a plain child with your user's rights: only for a machine whose
    hardware counters are for administrators, where a sandboxed profile falls back to torch.profiler (docs/profiling.md)."""
