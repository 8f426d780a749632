"""The tasks layer's settings: which suite (group ``suite``) and ``cudaforge tasks audit``'s.

Registered with Hydra by ``cudaforge/config.py`` (docs/configuration.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from cudaforge.tasks.audit import EXCLUDED_SEVERITIES, AuditSeverity

# enums their layers define (one definition each), under the names the schemas have always used
from cudaforge.types import DevicePreference


class SuiteKind(str, enum.Enum):
    """Where a suite's problem files come from."""

    bundled = "bundled"  # benchmarks/suites/<name>/level<L>/<id>_<Name>.py
    kernelbench = "kernelbench"  # a KernelBench checkout: <root>/level<L>/<id>_<Name>.py
    hf_export = "hf_export"  # KernelBench's Hugging Face export as a local .parquet/.jsonl
    file = "file"  # a single problem file


@dataclass
class SuiteConfig:
    """Which tasks to load and how to select among them."""

    name: str = "tiny"
    """Suite name; the first part of every task id."""
    kind: SuiteKind = SuiteKind.bundled
    """Loader to use."""
    root: str | None = None
    """KernelBench checkout, export file or problem file; for ``bundled``, null means benchmarks/suites/<name>."""
    levels: list[int] = field(default_factory=list)
    """Keep only these levels (empty: all)."""
    problem_ids: list[int] = field(default_factory=list)
    """Keep only these problem ids (empty: all)."""
    names: list[str] = field(default_factory=list)
    """Keep only tasks whose name matches one of these globs (empty: all)."""
    subset: str | None = None
    """A named subset (``cudaforge_dstar``) or a YAML file mapping level -> problem ids."""
    first_n: int | None = None
    """Keep the first N tasks after the other filters (and after shuffling)."""
    shuffle_seed: int | None = None
    """Shuffle the selection with this seed (null: keep level/id order)."""
    shard_count: int = 1
    """Split the selection into this many shards (every shard_count-th task, after every other filter): each
    shard is run on its own (a SLURM array job, another machine) and ``cudaforge merge`` joins their run
    directories into one (docs/campaigns.md)."""
    shard_index: int = 0
    """Which shard to run, 0 .. shard_count - 1."""
    exclude_flagged: bool = False
    """Leave out the tasks that an audit report (``suite.audit_report``) flags ``hack_enabling`` or ``broken``:
    tasks on which zeros, a constant or an input-blind kernel would pass, or whose reference fails. Applied after
    ``subset`` and before shuffling, ``first_n`` and the shard."""
    audit_report: str | None = None
    """The audit report ``exclude_flagged`` reads (``cudaforge tasks audit ... output=FILE``)."""
    expected_problem_set: str | None = None
    """The problem set a run must find (``cudaforge tasks pin ROOT`` prints it): the digest of the suite's tasks of
    ``levels`` (all levels when empty), before every other filter, or its first 12 or more hex digits. A run on
    another set stops with both digests; the paper overlays pin theirs."""
    allow_other_problem_set: bool = False
    """Run on another problem set than ``expected_problem_set`` all the same; the run records it, and every table of
    ``cudaforge report`` marks the run ``other problem set``."""


@dataclass
class AuditConfig:
    """``cudaforge tasks audit``."""

    device: DevicePreference = DevicePreference.auto
    """Run references on the GPU if there is one, else on the CPU."""
    cpu_variant: str = "small"
    """On the CPU, use this declared input variant (scaled-down shapes) when the task has it."""
    timeout_s: float = field(default=300.0, metadata={"min": 1})
    """Per-task timeout."""
    min_reference_ms: float = 0.0
    """On a GPU, flag references faster than this (the main suite asks for 0.5 ms)."""
    atol: float = 1e-4
    """Tolerance used to decide that two outputs are the same (tasks' ATOL/RTOL override)."""
    rtol: float = 1e-4
    """Relative tolerance, as ``atol``."""
    batch_size: int = field(default=16, metadata={"min": 1})
    """Tasks audited one after another in one warm child process (each keeps its own ``timeout_s``)."""
    workers_per_gpu: int = field(default=2, metadata={"min": 1})
    """Children at a time on each local GPU (every local GPU is used)."""
    cpu_workers: int = field(default=1, metadata={"min": 1})
    """Children at a time when the audit runs on the CPU."""
    fail_on: list[AuditSeverity] = field(default_factory=lambda: list(EXCLUDED_SEVERITIES))
    """Finding severities that make the command exit 1: ``hack_enabling``, ``broken``, ``note``."""
