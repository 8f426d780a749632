"""The with/without-skill experiment: paired differences between two runs over the tasks both finished.

``cudaforge report WITH WITHOUT`` sets the two runs side by side, each with its own interval. A skill's
effect is better read *paired*: the same tasks, the same model, one run with ``coder.skills`` and one
without (``experiment=skill_with`` / ``skill_without``). ``skill_effect`` computes, for each metric, the
difference with minus without and a percentile-bootstrap interval over the shared tasks (resampled
together, so task difficulty cancels). Definitions follow ``cudaforge.report.stats``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cudaforge.report.load import load_run
from cudaforge.report.stats import FailedAs, task_vectors
from cudaforge.teach.runs import expand_runs, run_info


@dataclass
class Effect:
    """One metric in both arms, their difference and its interval."""

    metric: str
    with_skill: float | None
    without_skill: float | None
    difference: float | None
    """with - without (for ``geomean_ratio``: the geometric mean of per-task speedup ratios)."""
    low: float | None
    high: float | None
    n: int
    """Tasks the metric is computed over."""


def arms(paths: list[str | Path]) -> tuple[Path, Path]:
    """The (with, without) run directories from two runs or a sweep folder holding them: by the tags the
    ``skill_with``/``skill_without`` overlays set, else by ``coder.skills``, else in the order given."""
    runs = expand_runs(paths)
    if len(runs) != 2:
        raise ValueError(f"say two run directories (with the skill first) or their sweep folder, not {len(runs)} runs")

    def has_skill(path: Path) -> bool | None:
        config = run_info(path).config
        tags = set(config.get("tags") or [])
        if {"with_skill", "without_skill"} & tags:
            return "with_skill" in tags
        return bool((config.get("coder") or {}).get("skills")) if config else None

    first, second = (has_skill(r) for r in runs)
    return (runs[1], runs[0]) if (first, second) == (False, True) else (runs[0], runs[1])


def _pct(a: np.ndarray) -> float:
    return 100 * float(np.nanmean(a)) if np.isfinite(a).any() else math.nan


def _mean(a: np.ndarray) -> float:
    return float(np.nanmean(a)) if np.isfinite(a).any() else math.nan


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def skill_effect(
    with_run: str | Path,
    without_run: str | Path,
    *,
    failed_as: FailedAs | str = FailedAs.zero,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[list[Effect], list[str]]:
    """Paired effects of a skill (``correct_pct``, ``perf``, ``fast_1_pct``, ``geomean_ratio``) and notes."""
    a, b = load_run(with_run), load_run(without_run)
    ra, rb = {r.task_id: r for r in a.results}, {r.task_id: r for r in b.results}
    shared = sorted(set(ra) & set(rb))
    if not shared:
        raise ValueError(f"{a.path} and {b.path} share no finished task: run both arms on the same suite")
    failed_as = FailedAs(getattr(failed_as, "value", failed_as))
    va = task_vectors([ra[t] for t in shared], failed_as, [1.0])
    vb = task_vectors([rb[t] for t in shared], failed_as, [1.0])
    pairs = {
        "correct_pct": (va["correct"], vb["correct"], _pct),
        "perf": (va["speedup"], vb["speedup"], _mean),
        "fast_1_pct": (va["fast_1"], vb["fast_1"], _pct),
    }
    n = len(shared)
    rng = np.random.default_rng(seed)
    tail = (1 - confidence) / 2 * 100
    effects = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, (x, y, reduce) in pairs.items():
            both = np.isfinite(x) & np.isfinite(y)  # paired: tasks defined in both arms
            x, y = x[both], y[both]
            diff = reduce(x) - reduce(y) if x.size else math.nan
            low = high = None
            if bootstrap > 0 and x.size and math.isfinite(diff):
                idx = rng.integers(0, x.size, size=(bootstrap, x.size))
                sample = np.array([reduce(x[i]) - reduce(y[i]) for i in idx])
                sample = sample[np.isfinite(sample)]
                if sample.size:
                    low, high = (float(v) for v in np.percentile(sample, [tail, 100 - tail]))
            effects.append(
                Effect(
                    name,
                    _num(reduce(x)) if x.size else None,
                    _num(reduce(y)) if y.size else None,
                    _num(diff),
                    low,
                    high,
                    int(x.size),
                )
            )
        la, lb = va["log_speedup"], vb["log_speedup"]
        timed = np.isfinite(la) & np.isfinite(lb) & (va["correct"] == 1) & (vb["correct"] == 1)
        logs = la[timed] - lb[timed]
        ratio = float(np.exp(logs.mean())) if logs.size else math.nan
        low = high = None
        if bootstrap > 0 and logs.size:
            idx = rng.integers(0, logs.size, size=(bootstrap, logs.size))
            low, high = (float(v) for v in np.exp(np.percentile(logs[idx].mean(axis=1), [tail, 100 - tail])))
        effects.append(
            Effect(
                "geomean_ratio",
                _num(float(np.exp(la[timed].mean()))) if logs.size else None,
                _num(float(np.exp(lb[timed].mean()))) if logs.size else None,
                _num(ratio),
                low,
                high,
                int(logs.size),
            )
        )
    notes = [
        f"{n} shared task(s) ({len(ra) - n} only with the skill, {len(rb) - n} only without); "
        f"{confidence:.0%} paired percentile bootstrap over tasks ({bootstrap} resamples, seed {seed}); "
        f"failed tasks as {failed_as.value} in perf."
    ]
    if not timed.any():
        notes.append("no task was timed in both arms (runs without a GPU): only correct_pct is defined.")
    return effects, notes


def effect_table(effects: list[Effect], notes: list[str]) -> str:
    """A Markdown table of the effects, then the notes."""

    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    lines = [
        "| metric | with skill | without | difference | interval | tasks |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for e in effects:
        interval = f"[{f(e.low)}, {f(e.high)}]" if e.low is not None else "-"
        values = " | ".join(f(x) for x in (e.with_skill, e.without_skill, e.difference))
        lines.append(f"| {e.metric} | {values} | {interval} | {e.n} |")
    return "\n".join(lines + [""] + notes)
