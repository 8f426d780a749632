"""Speedups against a stored baseline (``cudaforge baseline``) instead of the in-session reference.

The loop's speedups are measured against the eager reference in the same worker session.
``report.baseline=FILE`` recomputes each task's best speedup as the stored baseline's median
(``report.baseline_mode``: ``eager`` or ``compile``) over the best candidate's median; the
interval is dropped (the two medians come from different sessions), and the report says so.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from cudaforge.types import TaskResult


def load_baseline(path: str | Path, mode: str) -> dict[str, float]:
    """Task id -> median ms of ``mode`` from a ``baseline.jsonl``."""
    if mode not in ("eager", "compile"):
        raise ValueError(f"report.baseline_mode must be eager or compile, not {mode!r}")
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no baseline file (write one with `cudaforge baseline`)")
    times = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("status") == "ok" and row.get(mode):
            times[row["task_id"]] = row[mode]["median"]
    return times


def rebase(results: list[TaskResult], baseline_ms: dict[str, float]) -> tuple[list[TaskResult], int]:
    """Results with speedups against the baseline; also how many correct tasks could not be rebased."""
    out, missing = [], 0
    for r in results:
        if r.correct and r.best_candidate_ms and r.task_id in baseline_ms:
            r = dataclasses.replace(r, best_speedup=baseline_ms[r.task_id] / r.best_candidate_ms, best_speedup_ci=None)
        elif r.correct:
            missing += 1
            r = dataclasses.replace(r, best_speedup=None, best_speedup_ci=None)
        out.append(r)
    return out, missing
