"""Anytime curves: what a run had achieved after each dollar and each minute, with bands over seeds and tasks.

At a budget ``b`` on an axis (dollars or wall minutes per kernel, summed over a task's rounds in order) each task
stands where its rounds that ended within ``b`` left it: its best correct speedup so far, and whether any kernel so
far was correct. Over the tasks of a group that gives, at every budget, the report's own statistics (``stats.py``):
Correct %, fast_p, the geometric mean and Perf. So "$0.30 and 26.5 minutes per kernel" becomes a curve: the budget at
which the statistic was reached.

For an arm of several seeds (``seeds.py``) the curve is the mean over seeds, and the band a percentile bootstrap that
resamples seeds and tasks jointly (one seed: tasks alone), as the tables' intervals are. ``anytime.csv`` holds every
curve; ``plots/anytime.png`` draws the overall group.
"""

from __future__ import annotations

import csv
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cudaforge.report.scaling import task_states
from cudaforge.report.seeds import Arm
from cudaforge.report.stats import (
    FailedAs,
    Metric,
    group_results,
    metrics,
    resample_indices,
    seeded_reduce,
    seeded_resamples,
    speedup_vectors,
)

AXES = ("dollars", "minutes")
"""The budgets of the anytime curves: dollars and wall minutes per kernel."""

MAX_POINTS = 60
"""At most this many budgets per curve (the budgets where a value changes, thinned evenly; the last always kept)."""

MAX_RESAMPLES = 200
"""Bootstrap draws per budget (``report.bootstrap`` when smaller)."""

CSV_FILE = "anytime.csv"


@dataclass
class AnytimeCurve:
    """One statistic against one budget axis, for one arm and one group of tasks."""

    arm: str
    group: str
    axis: str
    metric: str
    """A metric key of the tables (``correct_pct``, ``fast_1_pct``, ``geomean``, ``perf``)."""
    seeds: int
    budgets: list[float]
    value: list[float | None]
    low: list[float | None]
    high: list[float | None]
    timed: bool = True
    """Some task of the group had a correct timed kernel (a CPU run has none: its fast_p and speedup curves hold
    only failed tasks' zeros, and are not drawn)."""


def curve_metrics(fast_p: list[float]) -> list[Metric]:
    """The statistics drawn against budgets: Correct %, each fast_p with p > 0, the geometric mean and Perf."""
    keep = {"correct_pct", "geomean", "perf"}
    return [m for m in metrics(fast_p) if m.key in keep or (m.key.startswith("fast_") and m.vector != "fast_0")]


def _grid(paths: list[np.ndarray]) -> np.ndarray:
    everything = np.unique(np.concatenate(paths)) if paths else np.zeros(0)
    if everything.size > MAX_POINTS:
        keep = np.unique(np.linspace(0, everything.size - 1, MAX_POINTS).round().astype(int))
        everything = everything[keep]
    return everything


def _states_at(
    paths: list[tuple[np.ndarray, np.ndarray, np.ndarray]], budgets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(tasks, budgets) arrays of best speedup so far and correct so far (before a task's first round: nothing)."""
    best = np.full((len(paths), budgets.size), math.nan)
    correct = np.zeros((len(paths), budgets.size), dtype=bool)
    for i, (xs, b, c) in enumerate(paths):
        idx = np.searchsorted(xs, budgets, side="right") - 1
        ok = idx >= 0
        best[i, ok] = b[idx[ok]]
        correct[i, ok] = c[idx[ok]]
    return best, correct


def arm_curves(
    arm: Arm,
    axis: str,
    *,
    failed_as: FailedAs = FailedAs.zero,
    fast_p: Sequence[float] = (0, 1, 1.5, 2),
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[AnytimeCurve]:
    """Every curve of one arm on one axis: per group (levels, then ``overall``) and per statistic."""
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, not {axis!r}")
    fast_p = [float(p) for p in fast_p]
    failed_as = FailedAs(failed_as)
    out: list[AnytimeCurve] = []
    per_seed = arm.per_seed()
    if not per_seed or not per_seed[0]:
        return out
    for group, results in group_results(per_seed[0]).items():
        ids = [r.task_id for r in results]
        states = [[task_states(run, {r.task_id: r for r in run.results}[t], axis) for t in ids] for run in arm.runs]
        budgets = _grid([xs for seed_states in states for xs, _, _ in seed_states])
        if budgets.size == 0:
            continue
        at = [_states_at(seed_states, budgets) for seed_states in states]
        best = np.stack([b for b, _ in at])  # (seeds, tasks, budgets)
        correct = np.stack([c for _, c in at])
        vectors = speedup_vectors(correct, best, failed_as, fast_p)
        timed = bool(np.any(correct.astype(bool) & ~np.isnan(best)))
        draws = None
        n_draws = min(bootstrap, MAX_RESAMPLES)
        if n_draws > 0:
            rng = np.random.default_rng([seed, zlib.crc32(f"{group}/{axis}".encode())])
            draws = resample_indices(rng, n_draws, len(ids), len(arm.runs))
        tail = (1 - confidence) / 2 * 100
        for metric in curve_metrics(fast_p):
            values = vectors[metric.vector]
            point, low, high = [], [], []
            for j in range(budgets.size):
                at_budget = values[:, :, j]  # (seeds, tasks)
                p = seeded_reduce(metric.reduce, at_budget)
                point.append(p if math.isfinite(p) else None)
                lo = hi = None
                if draws is not None and point[-1] is not None:
                    resampled = seeded_resamples(metric.reduce, at_budget, *draws)
                    if resampled.size:
                        lo, hi = (float(x) for x in np.percentile(resampled, [tail, 100 - tail]))
                low.append(lo)
                high.append(hi)
            out.append(
                AnytimeCurve(
                    arm.label,
                    group,
                    axis,
                    metric.key,
                    len(arm.runs),
                    [float(b) for b in budgets],
                    point,
                    low,
                    high,
                    timed=timed or metric.key == "correct_pct",
                )
            )
    return out


def all_curves(arms: list[Arm], **options: Any) -> list[AnytimeCurve]:
    """The curves of every arm on both axes (``arm_curves``'s options)."""
    return [c for arm in arms for axis in AXES for c in arm_curves(arm, axis, **options)]


def write_csv(curves: list[AnytimeCurve], path: Path) -> Path:
    """Long format: one line per (arm, group, axis, metric, budget)."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["arm", "seeds", "group", "axis", "metric", "budget", "value", "ci_low", "ci_high"])
        for c in curves:
            for b, v, lo, hi in zip(c.budgets, c.value, c.low, c.high):
                writer.writerow(
                    [
                        c.arm,
                        c.seeds,
                        c.group,
                        c.axis,
                        c.metric,
                        repr(b),
                        *("" if x is None else repr(x) for x in (v, lo, hi)),
                    ]
                )
    return path


def drawable(curves: list[AnytimeCurve], axis: str, metric: str) -> list[AnytimeCurve]:
    """The overall curves of one panel that have a value somewhere, from timed kernels where the statistic needs
    them (dollars: only when something was priced)."""
    chosen = [
        c
        for c in curves
        if c.group == "overall"
        and c.axis == axis
        and c.metric == metric
        and c.timed
        and any(v is not None for v in c.value)
    ]
    if axis == "dollars":
        chosen = [c for c in chosen if c.budgets and c.budgets[-1] > 0]
    return chosen


def panel_metrics(fast_p: list[float]) -> list[str]:
    """The rows of the figure: Correct %, fast_1 (else the smallest p > 0) and the geometric mean."""
    positive = [p for p in fast_p if p > 0]
    p = 1.0 if 1.0 in positive else (min(positive) if positive else None)
    return ["correct_pct"] + ([f"fast_{p:g}_pct"] if p is not None else []) + ["geomean"]
