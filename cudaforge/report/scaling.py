"""Best speedup so far against rounds, dollars and minutes: the data behind the scaling figures.

For a budget ``b`` on one axis (a round number, dollars per kernel, minutes per kernel) a task's value is
its best correct speedup among the rounds that ended within ``b``: the result a run with that budget would
have kept. A task with no correct kernel yet counts as ``failed_as`` says; a correct but untimed one is left
out. A curve is the mean of these values over tasks (Perf as the tables define it) at each budget.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudaforge.report.load import RunData
from cudaforge.report.stats import FailedAs, best_value

AXES = ("round", "dollars", "minutes")
"""The budgets a curve can be drawn against."""


@dataclass
class Curve:
    """Perf (mean best speedup so far) at each budget, for one run and one group of tasks."""

    run: str
    group: str
    axis: str
    budgets: list[float]
    perf: list[float | None]


def task_states(run: RunData, result: Any, axis: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A task after each of its rounds: the cumulative budget on ``axis`` (never decreasing), its best correct speedup
    so far (NaN: none yet, or only untimed ones) and whether any kernel so far was correct."""
    records = {r.round: r for r in result.history}
    xs, best_so_far, correct_so_far = [], [], []
    dollars = seconds = 0.0
    best, any_correct = math.nan, False
    for s in run.spend.get(result.task_id, []):
        dollars += s.cost_usd
        seconds += s.seconds
        rec = records.get(s.round)
        if rec is not None:
            correct, speedup = rec.status == "correct", rec.speedup
        else:  # no history: the task's final result stands for its last round
            correct, speedup = result.correct, result.best_speedup
        any_correct |= correct
        if correct and speedup is not None and speedup > 0:
            best = speedup if math.isnan(best) else max(best, speedup)
        xs.append({"round": s.round, "dollars": dollars, "minutes": seconds / 60}[axis])
        best_so_far.append(best)
        correct_so_far.append(any_correct)
    budgets = np.maximum.accumulate(np.array(xs, dtype=float)) if xs else np.zeros(0)
    return budgets, np.array(best_so_far, dtype=float), np.array(correct_so_far, dtype=bool)


def _task_path(run: RunData, result: Any, axis: str, failed_as: FailedAs) -> tuple[np.ndarray, np.ndarray]:
    """A task's cumulative budget after each round and its value (see the module text) from then on."""
    xs, best, correct = task_states(run, result, axis)
    failed = best_value(None, False, failed_as)
    return xs, np.where(~np.isnan(best), best, np.where(correct, math.nan, failed))


def curve(
    run: RunData, task_ids: list[str], axis: str, failed_as: FailedAs = FailedAs.zero, group: str = "overall"
) -> Curve:
    """Perf against one budget axis, at every budget where some task's value can change."""
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, not {axis!r}")
    failed_as = FailedAs(failed_as)
    by_id = {r.task_id: r for r in run.results}
    paths = [_task_path(run, by_id[t], axis, failed_as) for t in task_ids]
    budgets = np.unique(np.concatenate([xs for xs, _ in paths])) if paths else np.zeros(0)
    failed = best_value(None, False, failed_as)
    table = np.full((len(paths), budgets.size), failed, dtype=float)
    for i, (xs, values) in enumerate(paths):
        idx = np.searchsorted(xs, budgets, side="right") - 1
        table[i] = np.where(idx >= 0, values[np.clip(idx, 0, None)] if values.size else failed, failed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a budget where every task is left out
        perf = np.nanmean(table, axis=0) if paths else np.zeros(0)
    return Curve(
        run.label, group, axis, [float(b) for b in budgets], [float(p) if math.isfinite(p) else None for p in perf]
    )
