"""Stored baselines: `cudaforge baseline` records, and reports that use them as the denominator."""

from __future__ import annotations

import json

import pytest

from cudaforge.eval.baseline import Baseline, time_suite
from cudaforge.report import build_report
from cudaforge.track.store import RunStore
from cudaforge.types import TaskResult, TimingStats


def stats(ms: float) -> TimingStats:
    return TimingStats(n=10, median=ms, mean=ms, min=ms, max=ms, std=0.0, ci_low=ms, ci_high=ms)


def test_without_a_gpu_nothing_is_timed():
    from conftest import problem_source

    from cudaforge.tasks import parse_problem

    task = parse_problem(problem_source(), suite="s", level=1, problem_id=1, name="X", path="<x>")
    (result,) = time_suite([task], {}, gpu=None)
    assert result.status == "unavailable" and result.eager is None and "no GPU" in result.message


def test_report_rebases_speedups_on_a_stored_baseline(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append_result(
        TaskResult(
            task_id="s/level1/1_A",
            correct=True,
            best_speedup=1.0,
            best_candidate_ms=2.0,
            best_reference_ms=2.0,
            rounds=1,
        )
    )
    store.append_result(TaskResult(task_id="s/level1/2_B", correct=True, best_speedup=3.0, rounds=1))
    store.append_result(TaskResult(task_id="s/level1/3_C", correct=False, rounds=1))
    base = tmp_path / "baseline.jsonl"
    rows = [
        Baseline("s/level1/1_A", "ok", eager=stats(4.0), compile=stats(3.0)),
        Baseline("s/level1/2_B", "ok", eager=stats(9.0), compile=stats(6.0)),
    ]
    base.write_text("\n".join(b.to_json() for b in rows) + "\n")
    report = build_report([tmp_path / "run"], baseline=base, baseline_mode="compile", bootstrap=0)
    results = {r.task_id: r for r in report.runs[0].results}
    assert results["s/level1/1_A"].best_speedup == pytest.approx(1.5)  # 3.0 ms compiled / 2.0 ms candidate
    assert results["s/level1/2_B"].best_speedup is None  # no candidate time recorded: cannot be rebased
    assert any("compile baseline" in n and "1 correct task(s) had no time" in n for n in report.notes)
    with pytest.raises(ValueError, match="eager or compile"):
        build_report([tmp_path / "run"], baseline=base, baseline_mode="fast")
    assert json.loads(base.read_text().splitlines()[0])["eager"]["median"] == 4.0
