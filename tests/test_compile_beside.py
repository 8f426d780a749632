"""torch.compile timed beside eager: the cache of (task, GPU, torch, mode, timing) pairs, and the report's columns over
torch.compile. The timing itself needs a GPU (scripts/gpu_check.py); here no GPU is ever used: a cached pair is
served without one, and a measurement without a GPU is said and never cached."""

from __future__ import annotations

import json
import math

import pytest
from test_report import write_run

from cudaforge.eval.baseline import Baseline
from cudaforge.eval.compile_beside import CACHE_DIR, cache_key, compile_beside
from cudaforge.eval.settings import EvalConfig
from cudaforge.report import build_report
from cudaforge.report.stats import speedup_over_compile
from cudaforge.types import Task, TaskResult, TimingStats

TASK = Task(id="t/level1/1_A", suite="t", level=1, problem_id=1, name="A", source="class Model: pass\n")


def stats(ms: float) -> TimingStats:
    return TimingStats(n=100, median=ms, mean=ms, min=ms, max=ms, std=0.0, ci_low=ms, ci_high=ms)


def test_a_pair_is_cached_per_task_gpu_torch_mode_and_timing(tmp_path):
    cfg = EvalConfig(compile_beside_mode="max-autotune")
    key = cache_key(TASK, "H200", "max-autotune", cfg)
    assert key != cache_key(TASK, "H100", "max-autotune", cfg) != cache_key(TASK, "H200", "default", cfg)
    assert key != cache_key(TASK, "H200", "max-autotune", cfg.replace(timing_trials=cfg.timing_trials + 1))
    other = Task(**{**TASK.to_dict(), "source": "class Model: other\n"})
    assert key != cache_key(other, "H200", "max-autotune", cfg)
    # a pair measured on an H200 before: served from the cache, no GPU needed
    stored = Baseline(TASK.id, "ok", eager=stats(2.0), compile=stats(0.5), compile_mode="max-autotune")
    (tmp_path / CACHE_DIR).mkdir()
    (tmp_path / CACHE_DIR / f"{key}.json").write_text(json.dumps(stored.to_dict()))
    record = compile_beside(TASK, "0", "H200", cfg, tmp_path)
    assert record["cached"] and record["status"] == "ok" and record["compile_over_eager"] == 4.0
    assert (record["eager_ms"], record["compile_ms"], record["mode"], record["gpu"]) == (
        2.0,
        0.5,
        "max-autotune",
        "H200",
    )
    # on another GPU model nothing is cached: the measurement needs a GPU, and without one it says so, uncached
    missing = compile_beside(TASK, None, "H100", cfg, tmp_path)
    assert missing["status"] == "unavailable" and missing["compile_over_eager"] is None and not missing["cached"]
    assert "no GPU" in missing["message"]
    assert sorted(p.name for p in (tmp_path / CACHE_DIR).iterdir()) == [f"{key}.json"]
    # an unreadable cache file is measured again, not trusted
    (tmp_path / CACHE_DIR / f"{key}.json").write_text("{")
    assert compile_beside(TASK, None, "H200", cfg, tmp_path)["status"] == "unavailable"


def _result(task_id: str, speedup: float | None, ratio: float | None, correct: bool = True) -> TaskResult:
    pair = {"compile_over_eager": ratio, "mode": "max-autotune", "cached": False} if ratio else {}
    return TaskResult(task_id=task_id, correct=correct, best_speedup=speedup if correct else None, compile_beside=pair)


def test_the_report_gives_speedups_over_torch_compile_by_hand(tmp_path):
    results = [
        _result("t/level1/1_A", 3.0, 1.5),  # 2.0 over compile
        _result("t/level1/2_B", 1.2, 2.0),  # 0.6 over compile: faster than eager, slower than compile
        _result("t/level1/3_C", 1.1, None),  # timed, no pair: left out of the compile columns
        _result("t/level1/4_D", None, 1.3, correct=False),  # failed: never fast
    ]
    assert speedup_over_compile(results[0]) == 2.0 and speedup_over_compile(results[2]) is None
    report = build_report([write_run(tmp_path / "r", results)], bootstrap=0, fast_p=[0, 1])
    assert [m.key for m in report.metrics if "compile" in m.key] == ["compile_geomean", "fast_1_compile_pct"]
    values = report.rows("overall")[0].values
    assert values["compile_geomean"].value == pytest.approx(math.sqrt(2.0 * 0.6))
    assert values["fast_1_compile_pct"].value == pytest.approx(100 / 3)  # A of A, B, D
    assert values["fast_1_pct"].value == pytest.approx(75.0)  # over eager: A, B, C
    assert any("vs compile" in note and "2 of 3 timed task(s)" in note for note in report.notes)


def test_a_graph_replaying_compile_slower_than_eager_is_explained_in_the_notes(tmp_path):
    """max-autotune copies each call's new inputs into its CUDA graph: the H200 measured it slower than eager on
    standalone elementwise tasks. The report says so where it happened, and not where compile was faster."""
    slower = build_report(
        [write_run(tmp_path / "a", [_result("t/level1/1_A", 1.0, 0.45), _result("t/level1/2_B", 1.5, 1.2)])],
        bootstrap=0,
        fast_p=[1],
    )
    note = next(n for n in slower.notes if "vs compile" in n)
    assert "In 1 of 2 pair(s) torch.compile was slower than eager" in note and "no-cudagraphs" in note
    faster = build_report([write_run(tmp_path / "b", [_result("t/level1/1_A", 1.0, 1.2)])], bootstrap=0, fast_p=[1])
    assert not any("slower than eager" in n for n in faster.notes)


def test_a_protocol_the_pair_cannot_match_measures_nothing(tmp_path):
    cfg = EvalConfig(tf32="torch_default", speedup_statistic="mean")
    record = compile_beside(TASK, "0", "H200", cfg, tmp_path)  # no GPU is touched: nothing is measured at all
    assert record["status"] == "not_comparable" and record["compile_over_eager"] is None
    assert "eval.tf32=torch_default, eval.speedup_statistic=mean" in record["message"]
    assert not (tmp_path / CACHE_DIR).exists()


def test_a_run_without_pairs_shows_no_compile_figure_beside_one_with_them(tmp_path):
    with_pairs = write_run(
        tmp_path / "a", [_result("t/level1/1_A", 3.0, 1.5), _result("t/level1/2_B", None, None, False)]
    )
    without = write_run(
        tmp_path / "b", [_result("t/level1/1_A", 3.0, None), _result("t/level1/2_B", None, None, False)]
    )
    report = build_report([with_pairs, without], bootstrap=0, fast_p=[0, 1])
    a, b = (row.values for row in report.rows("overall"))
    assert a["fast_1_compile_pct"].value == 50.0 and b["fast_1_compile_pct"].value is None
    assert b["compile_geomean"].value is None
    # speedups rebased onto a stored baseline are no longer the ones the pair divides: the compile columns go
    baseline = tmp_path / "baseline.jsonl"
    stored = Baseline("t/level1/1_A", "ok", eager=stats(1.0), compile=stats(0.5))
    baseline.write_text(stored.to_json() + "\n")
    rebased = build_report([with_pairs], bootstrap=0, baseline=str(baseline), baseline_mode="compile")
    assert not any("compile" in m.key for m in rebased.metrics)
