"""Two runs compared task by task (``cudaforge report A B``): for each metric, the mean difference over the tasks
both ran with a paired bootstrap interval and a sign test, and one line that says whether A beats B.

Pairing removes what the tasks themselves contribute to the spread (some tasks are easy for every method), so a
difference too small to show between two independent tables can show here, and one that does not show is said
not to. Runs of several seeds (``seeds.py``) are compared as arms: a task's value is its mean over the arm's seeds.
Pure: reads ``TaskResult`` lists, imports nothing of the evaluation layer.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from cudaforge.report.load import RunData
from cudaforge.report.seeds import Arm
from cudaforge.report.seeds import arms as as_arms
from cudaforge.report.stats import FailedAs, task_vectors

PAIRED_METRICS = (
    # (vector key, header, scale, digits, higher is better)
    ("correct", "Correct %", 100.0, 1, True),
    ("speedup", "Perf", 1.0, 3, True),
    ("fast_1", "fast_1 %", 100.0, 1, True),
    ("log_speedup", "Geo. mean (ratio A/B)", 1.0, 3, True),
    ("dollars", "$ / kernel", 1.0, 3, False),
    ("minutes", "wall min / kernel", 1.0, 1, False),
)
"""What is compared; the geometric mean's row is a ratio (exp of the mean difference of logs), the others
differences A - B."""


@dataclass
class Paired:
    """One metric over the shared tasks."""

    header: str
    n: int
    """Tasks where both runs have the value."""
    diff: float
    low: float
    high: float
    wins: int
    """Tasks where A is better (by the metric's direction)."""
    losses: int
    p_value: float
    """Two-sided sign test over the tasks that differ."""
    ratio: bool = False


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test (binomial, p = 1/2) over the tasks that differ; 1.0 when none do."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def compare(
    a: list,
    b: list,
    *,
    failed_as: FailedAs = FailedAs.zero,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[list[str], list[Paired]]:
    """The shared task ids and one ``Paired`` per metric (those with at least one task where both have a value)."""
    return compare_seeds([a], [b], failed_as=failed_as, bootstrap=bootstrap, confidence=confidence, seed=seed)


def _seed_mean(per_seed: list[list], shared: list[str], failed_as: FailedAs) -> dict[str, np.ndarray]:
    """Each task's values, averaged over the seeds (NaN where no seed has one)."""
    stacked = [
        task_vectors([{r.task_id: r for r in results}[t] for t in shared], failed_as, (1,)) for results in per_seed
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a task no seed has a value for: NaN, left out
        return {key: np.nanmean(np.stack([v[key] for v in stacked]), axis=0) for key in stacked[0]}


def compare_seeds(
    a: list[list],
    b: list[list],
    *,
    failed_as: FailedAs = FailedAs.zero,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[list[str], list[Paired]]:
    """``compare`` for two arms given as one result list per seed: the tasks every seed of both has, each task's
    value its mean over its arm's seeds (the geometric mean's row: the mean of the seeds' logs)."""
    ids = [{r.task_id for r in results} for results in [*a, *b]]
    shared = sorted(set.intersection(*ids)) if ids else []
    if not shared:
        return [], []
    failed_as = FailedAs(failed_as)
    va, vb = _seed_mean(a, shared, failed_as), _seed_mean(b, shared, failed_as)
    rng = np.random.default_rng(seed)
    out = []
    for key, header, scale, _, higher in PAIRED_METRICS:
        d = (va[key] - vb[key]) * scale
        d = d[~np.isnan(d)]
        if d.size == 0:
            continue
        if bootstrap > 0 and d.size > 1:
            means = d[rng.integers(0, d.size, size=(bootstrap, d.size))].mean(axis=1)
            low, high = np.quantile(means, [(1 - confidence) / 2, 1 - (1 - confidence) / 2])
        else:
            low = high = float(d.mean())
        better = d > 0 if higher else d < 0
        worse = d < 0 if higher else d > 0
        wins, losses = int(better.sum()), int(worse.sum())
        ratio = key == "log_speedup"
        value, low, high = (
            (math.exp(x) for x in (float(d.mean()), float(low), float(high)))
            if ratio
            else (float(d.mean()), float(low), float(high))
        )
        out.append(Paired(header, int(d.size), value, low, high, wins, losses, sign_test(wins, losses), ratio))
    return shared, out


def verdict(a: str, b: str, paired: list[Paired], confidence: float) -> str:
    """One line on Perf: A beats B, B beats A, or neither at this confidence."""
    perf = next((p for p in paired if p.header == "Perf"), None)
    if perf is None:
        return f"No task has a speedup in both {a} and {b}: no verdict."
    shown = f"Perf {perf.diff:+.3f} [{perf.low:+.3f}, {perf.high:+.3f}], sign test p = {perf.p_value:.3g}"
    if perf.low > 0:
        return f"**{a} beats {b}** on the {perf.n} shared tasks: {shown}."
    if perf.high < 0:
        return f"**{b} beats {a}** on the {perf.n} shared tasks: {shown}."
    return f"Neither run beats the other at {confidence:.0%} on the {perf.n} shared tasks: {shown}."


def paired_lines(
    runs: list[RunData],
    *,
    failed_as: FailedAs = FailedAs.zero,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    against: int | None = None,
    arms: list[Arm] | None = None,
    rows: list[dict] | None = None,
) -> list[str]:
    """Markdown of the paired comparisons: every other arm against the arm of ``runs[against]``
    (``report.paired_with``), or, with ``against`` None, the two arms of a report that has exactly two; nothing
    otherwise. ``arms``: the runs grouped by seed (default: each run its own arm); ``rows``: a list that gets the
    comparisons as data (``Report.paired_rows``)."""
    arms = arms if arms is not None else as_arms(runs, pool=False)
    if against is not None and not 0 <= against < len(runs):
        raise ValueError(f"report.paired_with={against}: the report has {len(runs)} run(s), numbered from 0")
    if against is None:
        return _pair(arms[0], arms[1], failed_as, bootstrap, confidence, seed, rows) if len(arms) == 2 else []
    base = next(arm for arm in arms if any(run.path == runs[against].path for run in arm.runs))
    lines = []
    for arm in arms:
        if arm is not base:
            lines += _pair(arm, base, failed_as, bootstrap, confidence, seed, rows)
    return lines


def _pair(
    a: Arm, b: Arm, failed_as: FailedAs, bootstrap: int, confidence: float, seed: int, rows: list[dict] | None = None
) -> list[str]:
    shared, paired = compare_seeds(
        [r.results for r in a.runs],
        [r.results for r in b.runs],
        failed_as=failed_as,
        bootstrap=bootstrap,
        confidence=confidence,
        seed=seed,
    )
    lines = ["", f"## Paired comparison: {a.label} (A) against {b.label} (B)", ""]
    if not shared:
        return lines + ["The two runs share no task: nothing to pair."]
    lines += [
        verdict(a.label, b.label, paired, confidence),
        "",
        f"| metric | tasks | A - B | {confidence:.0%} interval | A better / worse | sign test p |",
        "| --- | ---: | ---: | --- | ---: | ---: |",
    ]
    digits = {header: d for _, header, _, d, _ in PAIRED_METRICS}
    for p in paired:
        if rows is not None:
            rows.append(
                {"a": a.label, "b": b.label, "metric": p.header, "tasks": p.n, "diff": p.diff, "low": p.low}
                | {"high": p.high, "wins": p.wins, "losses": p.losses, "p_value": p.p_value, "ratio": p.ratio}
            )
        k = digits[p.header]
        fmt = (lambda x: f"{x:.{k}f}x") if p.ratio else (lambda x: f"{x:+.{k}f}")  # noqa: B023
        lines.append(
            f"| {p.header} | {p.n} | {fmt(p.diff)} | [{fmt(p.low)}, {fmt(p.high)}] | {p.wins} / {p.losses} | "
            f"{p.p_value:.3g} |"
        )
    tasks_a = {r.task_id for run in a.runs for r in run.results}
    tasks_b = {r.task_id for run in b.runs for r in run.results}
    only_a, only_b = len(tasks_a - set(shared)), len(tasks_b - set(shared))
    seeds = (
        f" Each task's value is its mean over its arm's seeds ({len(a.runs)} in A, {len(b.runs)} in B)."
        if len(a.runs) > 1 or len(b.runs) > 1
        else ""
    )
    lines += [
        "",
        f"Paired over the {len(shared)} tasks both ran ({only_a} only in A, {only_b} only in B); intervals: "
        f"paired bootstrap over tasks ({bootstrap} resamples, seed {seed}); Perf counts a failed task as "
        f"{FailedAs(failed_as).value}; the geometric mean's row is the ratio of A's to B's over tasks timed in "
        "both; $ and minutes: lower is better." + seeds,
    ]
    return lines
