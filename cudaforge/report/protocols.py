"""A run beside its rescoring under another protocol (``cudaforge rescore``): what each protocol says of the same
kernels, and which verdicts changed and why.

Read from the run directories alone: a rescored run holds ``rescore.json`` (its source run and protocol) and
``rescored.jsonl`` (one row per kernel: before, after, and what changed the verdict). Nothing here imports the
evaluation layer.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cudaforge.report.load import RunData, hydra_choices, load_runs
from cudaforge.report.stats import FailedAs, group_stats
from cudaforge.track.store import RunDir


def protocol_of(run: RunData) -> str:
    """A run's evaluation protocol by name: the rescore's, else the ``eval`` option Hydra recorded, else
    ``default``."""
    record = rescore_record(run.path)
    if record is not None:
        return str(record.get("protocol") or "?")
    return hydra_choices(run.path).get("eval") or "default"


def rescore_record(run_dir: str | Path) -> dict[str, Any] | None:
    """``rescore.json`` of a rescored run, or None."""
    return RunDir(run_dir).rescore()


def _fmt(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _row(protocol: str, run: RunData) -> str:
    stats = group_stats("overall", run.results, failed_as=FailedAs.zero, fast_p=(1,), bootstrap=0)
    v = stats.values
    return (
        f"| {protocol} | {run.label} | {len(run.results)} | {_fmt(v['correct_pct'].value, 1)} | "
        f"{_fmt(v['fast_1_pct'].value, 1)} | {_fmt(v['perf'].value, 3)} | {_fmt(v['geomean'].value, 3)} |"
    )


def changes(rows: list[dict[str, Any]]) -> list[str]:
    """Lines: how many kernels changed verdict, by transition and by what changed them; how speedups moved."""
    flips = [r for r in rows if r.get("changed")]
    out = [f"{len(flips)} of {len(rows)} kernels changed verdict."]
    for (before, after), n in sorted(Counter((r["before_status"], r["after_status"]) for r in flips).items()):
        reasons = Counter(
            r.get("reason") or after for r in flips if (r["before_status"], r["after_status"]) == (before, after)
        )
        said = ", ".join(f"{reason}: {k}" for reason, k in reasons.most_common())
        out.append(f"- {before} -> {after}: {n} ({said})")
    both = [
        r["after_speedup"] / r["before_speedup"]
        for r in rows
        if r.get("before_speedup") and r.get("after_speedup") and r["after_status"] == "correct"
    ]
    if both:
        both.sort()
        out.append(
            f"Speedups of the {len(both)} kernels timed under both: median ratio new/old "
            f"{both[len(both) // 2]:.3f} (from {both[0]:.3f} to {both[-1]:.3f})."
        )
    return out


def _holds(source: RunData, rescored: Path) -> bool:
    """Whether ``source`` made every kernel of the rescore in ``rescored`` (its tasks and candidate hashes)."""
    made = {
        (r.task_id, h)
        for r in source.results
        for h in [r.best_candidate_hash, *(x.candidate_hash for x in r.history)]
        if h
    }
    rows = RunDir(rescored).rescored()
    return bool(rows) and all((row.get("task_id"), row.get("candidate_hash")) in made for row in rows)


def protocol_lines(runs: list[RunData]) -> list[str]:
    """Markdown for every rescored run among ``runs``: its source (loaded from disk when not among them) and it,
    side by side (correct %, fast_1, Perf, geometric mean), then the verdict changes. Empty when none is."""
    out = []
    for run in runs:
        record = rescore_record(run.path)
        if record is None:
            continue
        source_path = Path(str(record.get("source_run", "")))
        source = next((r for r in runs if Path(r.path).resolve() == source_path), None)
        if source is None:  # the source was moved or copied (results brought back from another machine)
            source = next((r for r in runs if r is not run and _holds(r, Path(run.path))), None)
        if source is None and RunDir(source_path).has_results():
            source = load_runs([source_path])[0]
        out += [
            "",
            f"## Protocols: {run.label} rescores {source.label if source else source_path}",
            "",
            "| protocol | run | tasks | Correct % | fast_1 % | Perf | Geo. mean |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        if source is not None:
            out.append(_row(protocol_of(source), source))
        out.append(_row(str(record.get("protocol")), run))
        scope = "every round's kernel" if record.get("all_rounds") else "each task's best kernel"
        out += [
            "",
            f"Rescored: {scope} ({record.get('kernels', 0)} kernels)"
            + ("" if record.get("finished") else "; the rescore did not finish")
            + ".",
        ]
        out += changes(RunDir(run.path).rescored())
    return out
