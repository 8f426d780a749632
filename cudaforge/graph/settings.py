"""The loop's settings: its strategy and budgets (group ``strategy``).

Registered with Hydra by ``cudaforge/config.py`` (docs/configuration.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

# enums their layers define (one definition each), under the names the schemas have always used
from cudaforge.agents.records import Backend as KernelBackend


class ProfiledKernel(str, enum.Enum):
    """Which kernel the profiler measures for the Judge (``strategy.profiled_kernel``)."""

    latest = "latest"  # the kernel the Judge is shown
    best = "best"  # the fastest correct kernel so far (the CudaForge authors' code)


@dataclass
class StrategyConfig:
    """The loop's shape and budgets."""

    name: str = "cudaforge"
    """The strategy's name, as results and reports label it (choose a packaged one with ``strategy=NAME``)."""
    judge_corrects: bool | None = None
    """A failed candidate goes to the Judge (correction) before the Coder repairs it. Strategies are defined in
    YAML alone (``configs/strategy/<name>.yaml``); null here takes the packaged strategy of ``name``'s value."""
    judge_optimizes: bool | None = None
    """A correct candidate goes to the Judge (optimisation) before the Coder optimises it (null: as above)."""
    profile: bool | None = None
    """Correct candidates are profiled; the metrics go to whoever speaks next (null: as above)."""
    metric_set: str | None = None
    """A metric set this strategy insists on, over ``profile.metric_set`` (``full_metrics``: ``full``)."""
    round_cap: int | None = None
    """A round cap this strategy insists on whatever ``max_rounds`` says (``one_shot``: 1; null: none)."""
    graph: str | None = None
    """The loop's shape: a registered loop shape's name (``graph.strategies.LOOP_SHAPES``) or ``module:function``
    wiring the graph from the loop's nodes (null: the packaged strategy's, the CudaForge loop ``alternating`` for all
    but the searches; docs/agents.md, "Adding a strategy")."""
    max_rounds: int = field(default=10, metadata={"min": 1})
    """Round budget per task (CudaForge: 10)."""
    max_dollars: float | None = field(default=None, metadata={"positive_or_null": True})
    """Dollar budget per task (null: none)."""
    max_minutes: float | None = field(default=None, metadata={"positive_or_null": True})
    """Wall-clock budget per task (null: none)."""
    max_evaluations: int | None = field(default=None, metadata={"positive_or_null": True})
    """Evaluation budget per task: distinct candidates evaluated (a source evaluated before is reused, free; null:
    none). With the dollar and minute budgets, whichever comes first stops the task."""
    search: dict[str, Any] = field(default_factory=dict)
    """Options of a search strategy's loop shape (``best_of_n``, ``beam``, ``tree``: ``samples``, ``beam_width``,
    ``judge_role`` ...; docs/agents.md, "Search strategies"); null or empty: the shape's defaults."""
    memory_rounds: int = field(default=0, metadata={"min": 0})
    """How many earlier rounds each agent sees a summary of, besides the latest kernel (CudaForge: 0)."""
    backend: KernelBackend = KernelBackend["any"]  # a member made at run time, from the language registry
    """Which kernel technology the Coder is asked for (the CudaForge paper: ``cuda``)."""
    max_follow_ups: int = field(default=1, metadata={"min": 0})
    """Follow-up prompts after an unusable reply before the round counts as failed."""
    templates: dict[str, str] = field(default_factory=dict)
    """Template overrides: name (``coder/repair``) -> file path or another template's name."""
    profiled_kernel: ProfiledKernel = ProfiledKernel.latest
    """Whose Nsight Compute metrics the Judge reads: ``latest`` (the kernel it is shown) or ``best`` (the fastest
    correct kernel so far, as the CudaForge authors' main.py profiles it: the paper overlays set it)."""
