"""Strategies: which agent answers after each evaluation (docs/agents.md).

A strategy is data, not a code fork: the graph reads these flags when it routes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Strategy:
    """How the Coder and the Judge alternate."""

    name: str
    judge_corrects: bool
    """A failed candidate goes to the Judge (correction) before the Coder repairs it."""
    judge_optimizes: bool
    """A correct candidate goes to the Judge (optimisation) before the Coder optimises it."""
    profile: bool
    """Correct candidates are profiled; the metrics go to whoever speaks next."""
    metric_set: str | None = None
    """A metric set this strategy insists on (``full_metrics``: ncu's full set)."""
    max_rounds: int | None = None
    """A round cap this strategy insists on (``one_shot``: 1)."""

    def round_cap(self, configured: int) -> int:
        """The rounds a task gets: ``strategy.max_rounds`` as configured, or this strategy's own cap when lower."""
        return min(configured, self.max_rounds or configured)


STRATEGIES: dict[str, Strategy] = {
    # The CudaForge loop: the Judge corrects failures and, with ncu metrics, guides optimisation.
    "cudaforge": Strategy("cudaforge", judge_corrects=True, judge_optimizes=True, profile=True),
    # One Coder reply, evaluated once.
    "one_shot": Strategy("one_shot", judge_corrects=False, judge_optimizes=False, profile=False, max_rounds=1),
    # No Judge: the Coder reads its own compiler, correctness and hardware feedback.
    "self_refine": Strategy("self_refine", judge_corrects=False, judge_optimizes=False, profile=True),
    # The Judge only corrects; correct kernels go back to the Coder with their timing.
    "correction_only": Strategy("correction_only", judge_corrects=True, judge_optimizes=False, profile=False),
    # The Judge only optimises; failures go back to the Coder with the raw error.
    "optimization_only": Strategy("optimization_only", judge_corrects=False, judge_optimizes=True, profile=True),
    # The full loop with ncu's full metric set instead of the chosen 24 metrics.
    "full_metrics": Strategy(
        "full_metrics", judge_corrects=True, judge_optimizes=True, profile=True, metric_set="full"
    ),
}


def get_strategy(name: str) -> Strategy:
    """The strategy called ``name``; an unknown name is an error listing the known ones."""
    try:
        return STRATEGIES[str(getattr(name, "value", name))]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}") from None
