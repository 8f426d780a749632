"""Pinned problem sets (issue 35): `cudaforge tasks pin ROOT`, a run on another set refused with both digests, the
flag that allows it, and the report marking such a run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

from cudaforge.tasks.identity import main_pin, pin_digest, pin_refusal, pin_status  # noqa: E402
from cudaforge.tasks.loader import load_directory  # noqa: E402

MAIN = Path(__file__).resolve().parent.parent / "cudaforge" / "resources" / "suites" / "main"


def test_pin_prints_the_digest_of_a_folder_and_its_levels(capsys):
    assert main_pin([str(MAIN)]) == 0
    out = capsys.readouterr().out.splitlines()
    tasks = load_directory(MAIN, suite="whatever")
    assert out[-1] == pin_digest(tasks) and "level 1:" in out[0]
    assert main_pin([str(MAIN), "1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == pin_digest(tasks, [1])
    for bad in ([], ["suite.root=x"], [str(MAIN), "one"]):
        assert main_pin(bad) == 2
    assert main_pin([str(MAIN), "9"]) == 2 and "no problem of level" in capsys.readouterr().err


def test_a_changed_problem_changes_the_digest_and_the_run_is_refused(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(MAIN, copy)
    pinned = pin_digest(load_directory(MAIN, suite="a"))
    status = pin_status(load_directory(copy, suite="b"), [], pinned[:12], allow_other=False)
    assert status["matches"] and pin_refusal(status) is None  # a 12-digit prefix pins as well
    first = sorted((copy / "level1").glob("*.py"))[0]
    first.write_text(first.read_text() + "\n# one more line\n")
    status = pin_status(load_directory(copy, suite="b"), [], pinned, allow_other=False)
    line = pin_refusal(status)
    assert not status["matches"] and pinned in line and status["digest"] in line
    assert "suite.allow_other_problem_set=true" in line
    assert pin_refusal(pin_status(load_directory(copy, suite="b"), [], pinned, allow_other=True)) is None
    with pytest.raises(ValueError, match="12 to 16 hex digits"):
        pin_status([], [], "b7d8", allow_other=False)


def test_the_paper_overlays_pin_the_authors_copy():
    from test_config import compose_with

    for experiment in ("cudaforge_table1", "cudaforge_dstar", "cudaforge_strategies"):
        cfg = compose_with([f"experiment={experiment}"])
        assert cfg.suite.expected_problem_set == "b7d841ce26e051dd", experiment  # docs/reproducing.md
        assert list(cfg.suite.levels) == [1, 2, 3] and cfg.suite.allow_other_problem_set is False


def test_the_report_marks_a_run_on_another_problem_set(tmp_path):
    from cudaforge.report import make_report
    from cudaforge.report.tables import markdown
    from cudaforge.run.runner import record_problem_set
    from cudaforge.track.store import RunStore
    from cudaforge.types import TaskResult

    tasks = load_directory(MAIN, suite="main")
    run = tmp_path / "run"
    store = RunStore(run)
    status = pin_status(tasks, [], "b7d841ce26e051dd", allow_other=True)
    assert record_problem_set(store, tasks, str(MAIN), status) is None
    assert json.loads((run / "problem_set.json").read_text())["pin"]["matches"] is False
    store.append_result(TaskResult(task_id=tasks[0].id, correct=True, best_speedup=1.2))
    report, _ = make_report(runs=[str(run)], out_dir=str(tmp_path / "report"), plots=False, bootstrap=0)
    text = markdown(report)
    assert "(other problem set)" in text.split("## Level 1")[1]  # the run's label in its tables
    assert "not the problem set its configuration pins (pinned b7d841ce26e051dd" in text
