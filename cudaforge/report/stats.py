"""The statistics of a report: per level and overall, each with a bootstrap confidence interval.

Definitions (docs/reports.md states them with the CudaForge paper's reading):

- ``correct_pct``: tasks with a correct kernel, over all tasks.
- ``median``, ``p75``, ``perf`` (arithmetic mean): over each task's best speedup; a task without a correct
  kernel counts as 0, 1 or not at all (``failed_as``). ``p75`` interpolates linearly (numpy's default).
- ``geomean``: over correct timed tasks; with ``failed_as=one`` failed tasks count as 1 (a zero has no log).
- ``fast_<p>_pct`` (KernelBench's fast_p): tasks with a correct kernel whose speedup is > p, over all tasks;
  ``fast_0`` is the correct rate.
- ``dollars``, ``minutes``, ``tokens`` (in + out): mean per task (per kernel), failed tasks included. ``minutes``
  is wall clock (``TaskResult.wall_minutes``; ``minutes`` for a run made before it); ``active_minutes`` leaves out
  GPU-lock waits (undefined for older runs). A task whose calls were all unpriced (``cost_usd`` null; in older
  run directories, 0 beside unpriced calls) has no dollar figure (left out); one with some unpriced calls counts
  with its priced dollars (a lower bound). A group with no dollar figure at all shows ``unpriced`` in that column.

A correct task without a speedup (a run without a GPU: ``best_speedup`` null) is *untimed*: it counts in
``correct_pct`` and ``fast_0`` and is left out of every other speedup statistic, denominators included.
"""

from __future__ import annotations

import enum
import math
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from cudaforge.report.load import task_level
from cudaforge.types import TaskResult


class FailedAs(str, enum.Enum):
    """How a task without a correct kernel enters the speedup statistics (median, p75, Perf)."""

    zero = "zero"  # speedup 0: in the denominator, pulls the mean down (the CudaForge paper's reading)
    one = "one"  # speedup 1: as if the task kept PyTorch's own implementation
    exclude = "exclude"  # left out: statistics over correct kernels only


@dataclass(frozen=True)
class Metric:
    """One column of the report's tables."""

    key: str
    """Name in CSV files and published tables."""
    header: str
    """Column header."""
    digits: int
    """Decimals shown."""
    vector: str
    """Which per-task vector it reduces (see ``task_vectors``)."""
    reduce: str
    """``mean``, ``median``, ``p75``, ``geomean``, ``pct`` (100 x mean) or ``count``."""


def fast_key(p: float) -> str:
    """The metric key of fast_p: ``fast_1.5_pct``."""
    return f"fast_{p:g}_pct"


def metrics(fast_p: Iterable[float] = (0, 1, 1.5, 2), active_minutes: bool = False) -> list[Metric]:
    """The report's columns, in table order (``active_minutes``: with the column of minutes without GPU-lock
    waits, which a report shows when some run had several tasks at once)."""
    out = [
        Metric("tasks", "Tasks", 0, "correct", "count"),
        Metric("correct_pct", "Correct %", 1, "correct", "pct"),
        Metric("median", "Median", 3, "speedup", "median"),
        Metric("p75", "75th pct", 3, "speedup", "p75"),
        Metric("perf", "Perf", 3, "speedup", "mean"),
        Metric("geomean", "Geo. mean", 3, "log_speedup", "geomean"),
    ]
    out += [Metric(fast_key(p), f"fast_{p:g} %", 1, f"fast_{p:g}", "pct") for p in fast_p]
    out += [
        Metric("dollars", "$ / kernel", 3, "dollars", "mean"),
        Metric("minutes", "wall min / kernel", 1, "minutes", "mean"),
    ]
    if active_minutes:
        out.append(Metric("active_minutes", "active min / kernel", 1, "active_minutes", "mean"))
    out.append(Metric("tokens", "tokens / kernel", 0, "tokens", "mean"))
    return out


def wall_minutes(result: TaskResult) -> float:
    """A task's wall-clock minutes: ``wall_minutes``, or ``minutes`` (summed step time) in a run made before it."""
    return result.minutes if result.wall_minutes is None else result.wall_minutes


@dataclass
class Estimate:
    """A statistic and its bootstrap interval (None where it is undefined, e.g. no timed task)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    missing: str = ""
    """Why ``value`` is None, shown in its place (``unpriced``); empty: the tables' dash."""


@dataclass
class GroupStats:
    """The statistics of one group of tasks (a level, or all of them)."""

    group: str
    """``level1`` ... or ``overall`` (``other`` for task ids without a level)."""
    n_tasks: int
    n_correct: int
    n_untimed: int
    """Correct tasks without a speedup: left out of the speedup statistics."""
    unpriced_calls: int
    """LLM calls without a price: ``dollars`` leaves them out (a lower bound)."""
    values: dict[str, Estimate] = field(default_factory=dict)


def best_value(speedup: float | None, correct: bool, failed_as: FailedAs) -> float:
    """A task's speedup as the statistics see it: NaN means left out of the denominator."""
    if correct:
        return float(speedup) if speedup is not None and speedup > 0 else math.nan
    return {FailedAs.zero: 0.0, FailedAs.one: 1.0, FailedAs.exclude: math.nan}[FailedAs(failed_as)]


def _unpriced(result: TaskResult) -> bool:
    """True when a task has no dollar figure: every call unpriced (0 beside unpriced calls: an older run)."""
    return result.cost_usd is None or (result.unpriced_calls > 0 and not result.cost_usd)


def task_vectors(results: list[TaskResult], failed_as: FailedAs, fast_p: Iterable[float]) -> dict[str, np.ndarray]:
    """Per-task values, one array per quantity; NaN marks a task left out of that quantity's denominator."""
    correct = np.array([r.correct for r in results], dtype=float)
    timed = np.array([r.correct and r.best_speedup is not None for r in results])
    untimed = (correct == 1) & ~timed
    raw = np.array([r.best_speedup if r.correct and r.best_speedup is not None else math.nan for r in results], float)
    speedup = np.array([best_value(r.best_speedup, r.correct, failed_as) for r in results], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_speedup = np.where(speedup > 0, np.log(speedup), math.nan)
    vectors = {
        "correct": correct,
        "speedup": speedup,
        "log_speedup": log_speedup,
        "dollars": np.array([math.nan if _unpriced(r) else r.cost_usd for r in results], dtype=float),
        "minutes": np.array([wall_minutes(r) for r in results], dtype=float),
        "active_minutes": np.array([math.nan if r.active_minutes is None else r.active_minutes for r in results],
                                   dtype=float),
        "tokens": np.array([r.tokens_in + r.tokens_out for r in results], dtype=float),
    }
    for p in fast_p:
        fast = np.where(timed & (np.nan_to_num(raw) > p), 1.0, 0.0)
        vectors[f"fast_{p:g}"] = correct.copy() if p == 0 else np.where(untimed, math.nan, fast)
    return vectors


def nanquantile(values: np.ndarray, q: float) -> np.ndarray:
    """``np.nanquantile(values, q, axis=-1)`` (linear interpolation), vectorised over rows: fast for bootstraps."""
    ordered = np.sort(values, axis=-1)  # NaNs sort last
    count = np.sum(~np.isnan(values), axis=-1)
    position = q * np.maximum(count - 1, 0)
    below = np.floor(position).astype(int)
    above = np.minimum(below + 1, np.maximum(count - 1, 0))
    low = np.take_along_axis(ordered, below[..., None], axis=-1)[..., 0]
    high = np.take_along_axis(ordered, above[..., None], axis=-1)[..., 0]
    return np.where(count > 0, low + (position - below) * (high - low), np.nan)


_REDUCERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean": lambda a: np.nanmean(a, axis=-1),
    "median": lambda a: nanquantile(a, 0.5),
    "p75": lambda a: nanquantile(a, 0.75),
    "geomean": lambda a: np.exp(np.nanmean(a, axis=-1)),
    "pct": lambda a: 100 * np.nanmean(a, axis=-1),
}


def _reduce(how: str, values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN resample: undefined, not an error
        return _REDUCERS[how](values)


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def group_stats(
    group: str,
    results: list[TaskResult],
    *,
    failed_as: FailedAs = FailedAs.zero,
    fast_p: Iterable[float] = (0, 1, 1.5, 2),
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> GroupStats:
    """Every metric of one group of tasks, with percentile-bootstrap intervals over tasks.

    ``bootstrap`` resamples (0: no intervals) of the group's tasks, with replacement, from a generator
    seeded by ``seed`` and the group's name, so a report is the same every time it is made.
    """
    fast_p = list(fast_p)
    vectors = task_vectors(results, FailedAs(failed_as), fast_p)
    n = len(results)
    stats = GroupStats(
        group=group,
        n_tasks=n,
        n_correct=int(vectors["correct"].sum()),
        n_untimed=sum(1 for r in results if r.correct and r.best_speedup is None),
        unpriced_calls=sum(r.unpriced_calls for r in results),
    )
    index = None
    if bootstrap > 0 and n > 0:
        rng = np.random.default_rng([seed, zlib.crc32(group.encode())])
        index = rng.integers(0, n, size=(bootstrap, n))
    tail = (1 - confidence) / 2 * 100
    for metric in metrics(fast_p, active_minutes=True):
        if metric.reduce == "count":
            stats.values[metric.key] = Estimate(float(n))
            continue
        vec = vectors[metric.vector]
        point = _finite(_reduce(metric.reduce, vec)) if n else None
        low = high = None
        if index is not None and point is not None:
            resampled = _reduce(metric.reduce, vec[index])
            resampled = resampled[np.isfinite(resampled)]
            if resampled.size:
                low, high = (float(x) for x in np.percentile(resampled, [tail, 100 - tail]))
        missing = "unpriced" if point is None and metric.vector == "dollars" and stats.unpriced_calls else ""
        stats.values[metric.key] = Estimate(point, low, high, missing)
    return stats


def group_name(level: int | None) -> str:
    """``level1`` for level 1, ``other`` for a task id without a level."""
    return "other" if level is None else f"level{level}"


def group_results(results: list[TaskResult]) -> dict[str, list[TaskResult]]:
    """Results by group: levels in order, then ``overall`` (all tasks)."""
    by_level: dict[int | None, list[TaskResult]] = {}
    for r in results:
        by_level.setdefault(task_level(r.task_id), []).append(r)
    levels = sorted(by_level, key=lambda lv: (lv is None, lv or 0))
    groups = {group_name(lv): by_level[lv] for lv in levels}
    groups["overall"] = list(results)
    return groups


def run_stats(results: list[TaskResult], **options) -> dict[str, GroupStats]:
    """``group_stats`` of every group of a run's results (options as ``group_stats``'s)."""
    return {name: group_stats(name, rs, **options) for name, rs in group_results(results).items()}


def measurement_summary(results: list[TaskResult]) -> dict[str, Any]:
    """How a run's best speedups were measured (``TaskResult.best_measurement``): the reference precisions named
    (``precision``: e.g. ``strict_fp32``; ``unrecorded`` for results made before precisions were kept), the tasks whose
    win the precision probe alone reproduces (``probe_reproduced``), the tasks whose timing never got a clean batch
    (``unclean``), and the geometric mean of the launch-inclusive speedups (``launch_inclusive_geomean``, None
    without any)."""
    precisions: dict[str, int] = {}
    probe, unclean, inclusive = [], [], []
    for result in results:
        if not result.correct or result.best_speedup is None:
            continue
        measured = result.best_measurement or {}
        name = measured.get("precision") or "unrecorded"
        precisions[name] = precisions.get(name, 0) + 1
        if measured.get("probe_reproduces_win"):
            probe.append(result.task_id)
        if measured.get("timing_clean") is False:
            unclean.append(result.task_id)
        value = measured.get("launch_inclusive")
        if isinstance(value, (int, float)) and value > 0:
            inclusive.append(float(value))
    geomean = float(np.exp(np.mean(np.log(inclusive)))) if inclusive else None
    return {"precision": precisions, "probe_reproduced": sorted(probe), "unclean": sorted(unclean),
            "launch_inclusive_geomean": geomean, "launch_inclusive_tasks": len(inclusive)}
