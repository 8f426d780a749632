"""``cudaforge report``'s settings.

Registered with Hydra by ``cudaforge/config.py`` (docs/configuration.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

# enums their layers define (one definition each), under the names the schemas have always used
from cudaforge.eval import BaselineMode
from cudaforge.report.stats import FailedAs


@dataclass
class ReportConfig:
    """``cudaforge report``: tables and plots from run directories (docs/reports.md)."""

    runs: list[str] = field(default_factory=list)
    """Run directories; ``cudaforge report DIR [DIR ...]`` fills this from its positional arguments."""
    labels: list[str] = field(default_factory=list)
    """One name per run for tables and plots (empty: strategy and models from each run's config, else the
    directory name)."""
    compare: list[str] = field(default_factory=lambda: ["cudaforge_table1"])
    """Published tables to set beside the runs: names from benchmarks/published/*.yaml (empty: none)."""
    failed_as: FailedAs = FailedAs.zero
    """How a task without a correct kernel counts in the median, 75th percentile and Perf."""
    fast_p: list[float] = field(default_factory=lambda: [0.0, 1.0, 1.5, 2.0])
    """Thresholds of fast_p (KernelBench): the share of tasks that are correct with speedup > p."""
    bootstrap: int = 1000
    """Bootstrap resamples of the tasks for the confidence intervals (0: no intervals)."""
    confidence: float = 0.95
    """Confidence level of the intervals."""
    seed: int = 0
    """Seed of the bootstrap: the same report every time."""
    out_dir: str | None = None
    """Where report.md, report.tex, report.csv, scaling.csv and plots/ go (null: <first run dir>/report)."""
    plots: bool = True
    """Write the PNG figures (needs matplotlib: pip install 'cudaforge[report]')."""
    published_dir: str | None = None
    """Folder of published tables (null: benchmarks/published)."""
    baseline: str | None = None
    """A ``baseline.jsonl`` from ``cudaforge baseline``: its medians become the speedups' denominator (null: the
    reference timed beside the candidate, as in the run)."""
    baseline_mode: BaselineMode = BaselineMode.eager
    """Which stored baseline: ``eager`` or ``compile`` (torch.compile)."""
    paired_with: int | None = None
    """Compare every other run with this one task by task (its position among the runs, from 0: an ablation
    multirun's baseline arm); null: only a report of exactly two runs compares them (docs/reports.md)."""
    pool_seeds: bool = True
    """Runs that differ only in their ``seed`` are one row: per metric the mean over seeds, with an interval over
    seeds and tasks (false: a row per run)."""
