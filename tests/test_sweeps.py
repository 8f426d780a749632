"""A tiny Hydra multirun end to end: two strategies, the demo models, the CPU evaluator, then a report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def cudaforge(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


@pytest.mark.slow
def test_multirun_over_two_strategies_then_a_report(tmp_path):
    sweep = tmp_path / "sweep"
    out = cudaforge(
        "run",
        "-m",
        "experiment=demo_strategies",
        "suite.problem_ids=[1]",
        "strategy.max_rounds=2",
        "eval.held_out_shapes=false",  # not what a sweep and its report are about (tests/test_held_out.py has them)
        f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    import yaml

    runs = sorted(p for p in sweep.iterdir() if p.is_dir())
    strategies = [yaml.safe_load((p / ".hydra" / "config.yaml").read_text())["strategy"]["name"] for p in runs]
    assert strategies == ["cudaforge", "self_refine"]
    for run in runs:
        rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
        assert [r["task_id"] for r in rows] == ["tiny/level1/1_ReLU"] and rows[0]["correct"]
        assert (run / ".hydra" / "config.yaml").exists() and (run / "ledger.jsonl").exists()
    # the Judge speaks in the full loop and never in self-refine
    judged = [
        any(json.loads(line)["role"] == "judge" for line in (r / "ledger.jsonl").read_text().splitlines()) for r in runs
    ]
    assert judged == [True, False]
    report_dir = tmp_path / "report"
    rep = cudaforge("report", *map(str, runs), f"report.out_dir={report_dir}", cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert (report_dir / "report.md").exists() and (report_dir / "report.tex").exists()
    text = (report_dir / "report.md").read_text()
    # CPU runs are correct but untimed: the report says so instead of drawing speedups it does not have; only the
    # anytime figure (Correct % against minutes) has data
    assert "untimed" in text.lower() and [p.name for p in report_dir.glob("plots/*.png")] == ["anytime.png"]
    assert "paper: CudaForge o3/o3" in text and text.count("| cudaforge") + text.count("| self_refine") >= 2


def test_hydras_own_launcher_names_are_refused_in_one_line_without_their_plugin(monkeypatch):
    """Issue 53: ``hydra/launcher=joblib``, Hydra's usual name, gave a raw multi-line Hydra error and exit 1."""
    import importlib

    from cudaforge.cli.hydra_args import launcher_problem

    real = importlib.import_module

    def without_plugins(name, *args, **kwargs):
        if name.startswith("hydra_plugins."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", without_plugins)
    joblib = launcher_problem(["hydra/launcher=joblib"])
    assert joblib is not None and "hydra_joblib_launcher" in joblib and "cudaforge[sweeps]" in joblib
    unknown = launcher_problem(["hydra/launcher=nope"])
    assert unknown is not None and unknown.startswith("hydra/launcher=nope: no such launcher; options: basic")
    assert "\n" not in joblib + unknown
    assert launcher_problem(["hydra/launcher=basic", "strategy=one_shot"]) is None
