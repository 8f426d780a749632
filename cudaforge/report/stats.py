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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cudaforge.eval import shapes_pass
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


def metrics(
    fast_p: Iterable[float] = (0, 1, 1.5, 2),
    active_minutes: bool = False,
    held_out: bool = False,
    compile_beside: bool = False,
    checks: bool = False,
    decided: bool = False,
) -> list[Metric]:
    """The report's columns, in table order (``active_minutes``: with the column of minutes without GPU-lock
    waits, which a report shows when some run had several tasks at once; ``held_out``: with the two columns of the
    held-out shapes, shown when some run checked them; ``compile_beside``: with the geometric mean and fast_p over
    torch.compile, shown when some run timed it beside eager; ``checks``: with the precision flags, the parameters not
    varied and the peak-memory ratio of the best kernels, shown when some run recorded them; ``decided``: with the
    Correct % of the scored inputs alone, beside the Correct % that held-out shapes decided)."""
    out = [
        Metric("tasks", "Tasks", 0, "correct", "count"),
        Metric("correct_pct", "Correct %", 1, "correct", "pct"),
    ]
    if decided:
        out.append(Metric("scored_correct_pct", "scored correct %", 1, "scored_correct", "pct"))
    out += [
        Metric("median", "Median", 3, "speedup", "median"),
        Metric("p75", "75th pct", 3, "speedup", "p75"),
        Metric("perf", "Perf", 3, "speedup", "mean"),
        Metric("geomean", "Geo. mean", 3, "log_speedup", "geomean"),
    ]
    out += [Metric(fast_key(p), f"fast_{p:g} %", 1, f"fast_{p:g}", "pct") for p in fast_p]
    if compile_beside:
        out.append(Metric("compile_geomean", "Geo. mean vs compile", 3, "compile_log_speedup", "geomean"))
        out += [
            Metric(f"fast_{p:g}_compile_pct", f"fast_{p:g} vs compile %", 1, f"fast_{p:g}_compile", "pct")
            for p in fast_p
            if p > 0
        ]
    if held_out:
        out += [
            Metric("held_out_pct", "held-out correct %", 1, "held_out_correct", "pct"),
            Metric("held_out_geomean", "held-out geo. mean", 3, "held_out_log_speedup", "geomean"),
        ]
    if checks:
        out += [
            Metric("precision_flagged_pct", "precision flagged %", 1, "precision_flagged", "pct"),
            Metric("not_varied_pct", "params not varied %", 1, "not_varied", "pct"),
            Metric("memory_ratio", "memory ratio", 3, "log_memory_ratio", "geomean"),
        ]
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


def speedup_vectors(
    correct: np.ndarray, raw: np.ndarray, failed_as: FailedAs, fast_p: Iterable[float]
) -> dict[str, np.ndarray]:
    """The speedup quantities of tasks given as arrays of any shape: ``correct`` (bool) and ``raw``, the best correct
    speedup (NaN where there is none: failed, or correct but untimed). NaN marks a task left out of a quantity's
    denominator (the module text's rules); ``task_vectors`` and the anytime curves both use it."""
    correct = np.asarray(correct, dtype=bool)
    raw = np.asarray(raw, dtype=float)
    timed = correct & ~np.isnan(raw)
    untimed = correct & ~timed
    failed = best_value(None, False, failed_as)
    with np.errstate(invalid="ignore"):
        speedup = np.where(correct, np.where(raw > 0, raw, math.nan), failed)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_speedup = np.where(speedup > 0, np.log(speedup), math.nan)
    vectors = {"correct": correct.astype(float), "speedup": speedup, "log_speedup": log_speedup}
    for p in fast_p:
        fast = np.where(timed & (np.nan_to_num(raw) > p), 1.0, 0.0)
        vectors[f"fast_{p:g}"] = correct.astype(float) if p == 0 else np.where(untimed, math.nan, fast)
    return vectors


def speedup_over_compile(result: TaskResult) -> float | None:
    """A task's best speedup over torch.compile (``TaskResult.compile_beside``): its speedup over eager divided by
    compile's, each a ratio measured within one session (None without both)."""
    ratio = (result.compile_beside or {}).get("compile_over_eager")
    if not (result.correct and result.best_speedup) or not isinstance(ratio, (int, float)) or ratio <= 0:
        return None
    return result.best_speedup / ratio


def held_out_summary(result: TaskResult) -> dict[str, Any]:
    """A task's held-out record (``TaskResult.held_out``) as the report reads it: ``checked`` (shapes evaluated),
    ``correct`` (True when the kernel was correct on every one; None without any) and ``speedup`` (the geometric mean
    of their speedups when all were correct and timed, else None)."""
    rows = [r for r in (result.held_out or {}).get("shapes", []) if r.get("status") != "skipped"]
    if not result.correct or not rows:
        return {"checked": 0, "correct": None, "speedup": None}
    correct = bool(shapes_pass(result.held_out))  # correct there, and no precision finding
    speedups = [r.get("speedup") for r in rows]
    timed = correct and all(isinstance(x, (int, float)) and x > 0 for x in speedups)
    geo = math.exp(sum(math.log(x) for x in speedups) / len(speedups)) if timed else None
    return {"checked": len(rows), "correct": correct, "speedup": geo}


def check_vectors(results: list[TaskResult]) -> dict[str, np.ndarray]:
    """Per-task values of the checks beyond the scored inputs (``TaskResult.best_checks``), over correct tasks (NaN
    elsewhere): ``precision_flagged`` (its best kernel carries a ``precision`` or ``precision_fp64`` finding),
    ``not_varied`` (a ``parameters_not_varied`` finding), ``log_memory_ratio`` (its peak memory over the
    reference's, GPU), and ``scored_correct`` over every task (correct on the scored inputs, whatever the held-out
    shapes decided)."""
    flags = [set((r.best_checks or {}).get("flags") or []) for r in results]
    nan = math.nan
    ratio = [(r.best_checks or {}).get("memory_ratio") for r in results]
    return {
        "precision_flagged": np.array(
            [float(bool(f & {"precision", "precision_fp64"})) if r.correct else nan for r, f in zip(results, flags)]
        ),
        "not_varied": np.array(
            [float("parameters_not_varied" in f) if r.correct else nan for r, f in zip(results, flags)]
        ),
        "log_memory_ratio": np.array(
            [
                math.log(x) if r.correct and isinstance(x, (int, float)) and x > 0 else nan
                for r, x in zip(results, ratio)
            ]
        ),
        "scored_correct": np.array(
            [float(r.correct or bool((r.held_out or {}).get("scored_correct"))) for r in results], dtype=float
        ),
    }


def task_vectors(results: list[TaskResult], failed_as: FailedAs, fast_p: Iterable[float]) -> dict[str, np.ndarray]:
    """Per-task values, one array per quantity; NaN marks a task left out of that quantity's denominator."""
    correct = np.array([r.correct for r in results], dtype=bool)
    raw = np.array([r.best_speedup if r.correct and r.best_speedup is not None else math.nan for r in results], float)
    vectors = speedup_vectors(correct, raw, FailedAs(failed_as), fast_p)
    vectors.update(
        {
            "dollars": np.array([math.nan if _unpriced(r) else r.cost_usd for r in results], dtype=float),
            "minutes": np.array([wall_minutes(r) for r in results], dtype=float),
            "active_minutes": np.array(
                [math.nan if r.active_minutes is None else r.active_minutes for r in results], dtype=float
            ),
            "tokens": np.array([r.tokens_in + r.tokens_out for r in results], dtype=float),
        }
    )
    over_compile = np.array([speedup_over_compile(r) or math.nan for r in results], dtype=float)
    measured = ~np.isnan(over_compile)
    failed = np.array([not r.correct for r in results])
    with np.errstate(divide="ignore", invalid="ignore"):
        vectors["compile_log_speedup"] = np.where(measured, np.log(over_compile), math.nan)
    for p in fast_p:
        if p > 0:  # a failed task is never fast; a correct one without the compile pair is left out; none without any
            vectors[f"fast_{p:g}_compile"] = (
                np.where(failed, 0.0, np.where(measured, (np.nan_to_num(over_compile) > p).astype(float), math.nan))
                if measured.any()
                else np.full(len(results), math.nan)
            )
    vectors.update(check_vectors(results))
    held = [held_out_summary(r) for r in results]
    vectors["held_out_correct"] = np.array(
        [math.nan if h["correct"] is None else float(h["correct"]) for h in held], dtype=float
    )
    vectors["held_out_log_speedup"] = np.array(
        [math.log(h["speedup"]) if h["speedup"] else math.nan for h in held], dtype=float
    )
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


def group_stats(group: str, results: list[TaskResult], **options: Any) -> GroupStats:
    """Every metric of one group of tasks, with percentile-bootstrap intervals over tasks (``seeded_group_stats``'s
    options: ``failed_as``, ``fast_p``, ``bootstrap``, ``confidence``, ``seed``).

    ``bootstrap`` resamples (0: no intervals) of the group's tasks, with replacement, from a generator
    seeded by ``seed`` and the group's name, so a report is the same every time it is made.
    """
    return seeded_group_stats(group, [results], **options)


def resample_indices(
    rng: np.random.Generator, bootstrap: int, n_tasks: int, n_seeds: int
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap draws: tasks ``(bootstrap, n_tasks)``, then seeds ``(bootstrap, n_seeds)`` (all 0 for one seed, so a
    single run's draws are those of a task bootstrap alone)."""
    tasks = rng.integers(0, n_tasks, size=(bootstrap, n_tasks))
    seeds = rng.integers(0, n_seeds, size=(bootstrap, n_seeds)) if n_seeds > 1 else np.zeros((bootstrap, 1), int)
    return tasks, seeds


def seeded_reduce(how: str, values: np.ndarray) -> float:
    """A statistic of ``values`` shaped (seeds, tasks): the mean over seeds of each seed's statistic over tasks."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.nanmean(_reduce(how, values)))


def seeded_resamples(how: str, values: np.ndarray, tasks: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """The statistic of every bootstrap draw of ``values`` (seeds, tasks), seeds and tasks resampled jointly: the
    draw's seeds each over the draw's tasks, then the mean over its seeds. The finite ones."""
    drawn = values[seeds[:, :, None], tasks[:, None, :]]  # (bootstrap, seeds, tasks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = np.nanmean(_reduce(how, drawn), axis=-1)
    finite: np.ndarray = out[np.isfinite(out)]
    return finite


def seeded_group_stats(
    group: str,
    per_seed: list[list[TaskResult]],
    *,
    failed_as: FailedAs = FailedAs.zero,
    fast_p: Iterable[float] = (0, 1, 1.5, 2),
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> GroupStats:
    """Every metric of one group of tasks run under several seeds (``per_seed``: one list per seed, the same tasks in
    the same order): each value is the mean over seeds of the per-seed statistic, and its interval a percentile
    bootstrap that resamples seeds and tasks jointly. One seed: ``group_stats``, a bootstrap over tasks alone."""
    fast_p = list(fast_p)
    failed_as = FailedAs(failed_as)
    n = len(per_seed[0]) if per_seed else 0
    if any(len(results) != n for results in per_seed):
        raise ValueError("every seed needs the same tasks in the same order")
    stacked = [task_vectors(results, failed_as, fast_p) for results in per_seed]
    vectors = {key: np.stack([v[key] for v in stacked]) for key in stacked[0]} if per_seed else {}
    everything = [r for results in per_seed for r in results]
    stats = GroupStats(
        group=group,
        n_tasks=n,
        n_correct=int(round(float(vectors["correct"].sum(axis=-1).mean()))) if n else 0,
        n_untimed=max((sum(1 for r in rs if r.correct and r.best_speedup is None) for rs in per_seed), default=0),
        unpriced_calls=sum(r.unpriced_calls for r in everything),
    )
    draws = None
    if bootstrap > 0 and n > 0:
        rng = np.random.default_rng([seed, zlib.crc32(group.encode())])
        draws = resample_indices(rng, bootstrap, n, len(per_seed))
    tail = (1 - confidence) / 2 * 100
    for metric in metrics(fast_p, active_minutes=True, held_out=True, compile_beside=True, checks=True, decided=True):
        if metric.reduce == "count":
            stats.values[metric.key] = Estimate(float(n))
            continue
        values = vectors[metric.vector] if n else None
        point = _finite(seeded_reduce(metric.reduce, values)) if values is not None else None
        low = high = None
        if draws is not None and point is not None and values is not None:
            resampled = seeded_resamples(metric.reduce, values, *draws)
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


def run_stats(results: list[TaskResult], **options: Any) -> dict[str, GroupStats]:
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
    return {
        "precision": precisions,
        "probe_reproduced": sorted(probe),
        "unclean": sorted(unclean),
        "launch_inclusive_geomean": geomean,
        "launch_inclusive_tasks": len(inclusive),
    }
