"""The profile group's settings, defined once: ``cudaforge/config.py`` registers :class:`ProfileConfig` with Hydra,
and the profiler's :class:`ProfileSettings` extends it with what the run supplies. Imports nothing heavy (the
evaluator's settings, for the seed, as ``cudaforge/config.py`` does)."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, cast

from cudaforge.eval import EvalConfig
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


@dataclass
class ProfileSettings(ProfileConfig):
    """How candidates are profiled: the profile group's settings (``ProfileConfig``, defined once, in
    ``cudaforge/profile/settings.py``) and what the run supplies besides. Built from a ``ProfileConfig`` (or a dict):
    fields it lacks keep these defaults. Enum fields hold their plain values here."""

    seed: int = EvalConfig.seed
    """Seed for weights and inputs (the evaluator's)."""
    target_processes: str = "all"
    """ncu ``--target-processes``."""
    allow_tf32: bool = False
    """Bound fp32 tasks by the TF32 tensor rate instead of the fp32 CUDA-core rate."""

    def __post_init__(self) -> None:
        for name in ("metric_set", "sandbox"):
            value = getattr(self, name)
            if isinstance(value, enum.Enum):
                setattr(self, name, value.value)

    @classmethod
    def from_config(cls, cfg: Any = None) -> ProfileSettings:
        """From a ProfileConfig dataclass, an OmegaConf DictConfig or a dict; unknown keys are ignored."""
        if cfg is None:
            return cls()
        if isinstance(cfg, cls):
            return cfg
        if dataclasses.is_dataclass(cfg):
            data = dataclasses.asdict(cast(Any, cfg))  # a config object, not its class
        elif hasattr(cfg, "items"):
            data = {k: cfg[k] for k in cfg}
        else:
            raise TypeError(f"expected a profile config, got {type(cfg).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in data.items() if k in names}
        for key in ("metrics", "extra_args"):
            if key in kwargs:
                kwargs[key] = list(kwargs[key] or [])
        return cls(**kwargs)

    def cache_fields(self) -> dict[str, Any]:
        """The settings that change what a profile reports (part of the cache key)."""
        return {
            "metric_set": self.metric_set,
            "metrics": sorted(self.metrics),
            "clock_control": self.clock_control,
            "units": self.units,
            "warmup": self.warmup,
            "seed": self.seed,
            "include_library_kernels": self.include_library_kernels,
            "max_kernels": self.max_kernels,
            "extra_args": self.extra_args,
            "allow_tf32": self.allow_tf32,
        }
