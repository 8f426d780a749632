"""``cudaforge rescore``: a run's kept kernels under another protocol, and the report that sets the two side by side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudaforge.report.load import load_runs
from cudaforge.report.protocols import changes, protocol_lines
from cudaforge.run.rescore import changed_by, kept_kernels
from cudaforge.tasks import find_task, selection
from cudaforge.track.store import RunStore
from cudaforge.types import CorrectnessDiff, EvalResult, EvalStatus, RoundRecord, TaskResult, source_hash

REPO = Path(__file__).resolve().parents[1]
RELU = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()


def make_run(root: Path, kept_copy: bool = True) -> Path:
    """A run directory as `cudaforge run` writes it: one task, two rounds (the second the best)."""
    task = find_task(selection("tiny"), "level1/1_ReLU")
    store = RunStore(root)
    ts = store.task(task.id)
    ts.write_json(None, "task.json", task.to_dict())
    first, best = "import torch  # round 1\n" + RELU, RELU
    for number, source in ((1, first), (2, best)):
        ts.write_text(number, "candidate.py", source)
        if kept_copy:
            ts.save_candidate(source_hash(source), source)
    history = [
        RoundRecord(round=1, coder_mode="first_attempt", candidate_hash=source_hash(first), status="incorrect"),
        RoundRecord(round=2, coder_mode="repair", candidate_hash=source_hash(best), status="correct", speedup=1.4),
    ]
    store.append_result(
        TaskResult(
            task_id=task.id,
            correct=True,
            best_round=2,
            best_speedup=1.4,
            best_candidate_hash=source_hash(best),
            rounds=2,
            history=history,
            cost_usd=0.2,
        )
    )
    store.append_result(TaskResult(task_id="tiny/level1/2_Softmax", correct=False, rounds=2))  # no task.json
    return root


@pytest.mark.parametrize("kept_copy", [True, False])
def test_the_kept_kernels_of_a_run_old_layouts_included(tmp_path, kept_copy):
    run = make_run(tmp_path / "run", kept_copy)
    best, notes = kept_kernels(run)
    assert [(k.round, k.digest, k.before_status, k.before_speedup) for k in best] == [
        (2, source_hash(RELU), "correct", 1.4)
    ]
    assert best[0].source == RELU and any("2_Softmax" in n and "task.json" in n for n in notes)
    every, _ = kept_kernels(run, all_rounds=True)
    assert [(k.round, k.before_status) for k in every] == [(1, "incorrect"), (2, "correct")]


def test_what_changed_a_verdict_is_named():
    def result(status, findings=(), variant=None):
        diff = CorrectnessDiff(trial=0, variant=variant) if variant else None
        return EvalResult(task_id="t", candidate_hash="h", status=status, guard_findings=list(findings), diff=diff)

    assert (
        changed_by(
            result(
                EvalStatus.REJECTED,
                [{"guard": "precision", "verdict": "report"}, {"guard": "timing_crosscheck", "verdict": "reject"}],
            )
        )
        == "rejected by timing_crosscheck"
    )
    assert (
        changed_by(result(EvalStatus.INCORRECT, variant="heavy_tail")) == "incorrect on the input variant 'heavy_tail'"
    )
    caching = result(
        EvalStatus.INCORRECT, [{"guard": "torch_compute", "verdict": "report"}, {"guard": "result_caching"}], "timing"
    )
    caching.message = "an output produced during the timed calls was wrong\nresult_caching: cached"
    assert changed_by(caching) == "incorrect in the timed calls (result_caching)"  # a reported guard explains nothing
    assert changed_by(result(EvalStatus.INCORRECT, [{"guard": "torch_compute", "verdict": "report"}])) == "incorrect"
    assert changed_by(result(EvalStatus.COMPILE_ERROR)) == "compile_error"
    # correct where the authors' aligner gave it the reference's weights, wrong on the first inputs without them
    seeded = result(EvalStatus.INCORRECT, variant="default")
    seeded.fingerprint["weights"] = "seed"
    aligned = "authors (2 tensors copied, generic rule)"
    assert changed_by(seeded, aligned) == f"incorrect with the weights set by seed (the source's: {aligned})"
    assert changed_by(seeded, "authors (0 tensors copied, none rule)") == "incorrect"  # nothing was copied there
    assert (
        changed_by(result(EvalStatus.INCORRECT, variant="heavy_tail"), aligned)
        == "incorrect on the input variant 'heavy_tail'"
    )  # right on the first inputs: the weights are not why


def test_the_report_sets_a_rescored_run_beside_its_source(tmp_path):
    source = make_run(tmp_path / "source")
    rescored = tmp_path / "rescored"
    store = RunStore(rescored)
    store.append_result(TaskResult(task_id="tiny/level1/1_ReLU", correct=False, rounds=2, stop_reason="rescored"))
    store.append_result(TaskResult(task_id="tiny/level1/2_Softmax", correct=False, rounds=2, stop_reason="rescored"))
    (rescored / "rescore.json").write_text(
        json.dumps(
            {
                "source_run": str(source.resolve()),
                "protocol": "strictest",
                "kernels": 1,
                "all_rounds": False,
                "finished": True,
            }
        )
    )
    row = {
        "task_id": "tiny/level1/1_ReLU",
        "round": 2,
        "candidate_hash": "abc",
        "before_status": "correct",
        "before_speedup": 1.4,
        "after_status": "rejected",
        "after_speedup": None,
        "changed": True,
        "reason": "rejected by timing_crosscheck",
    }
    (rescored / "rescored.jsonl").write_text(json.dumps(row) + "\n")
    lines = protocol_lines(load_runs([rescored]))  # the source is read from disk when not compared too
    text = "\n".join(lines)
    assert (
        "| default | source | 2 | 50.0 |" in text
        and "| strictest | the kernels of source, rescored [eval=strictest] | 2 | 0.0 |" in text
    )
    assert (
        "1 of 1 kernels changed verdict." in text
        and "- correct -> rejected: 1 (rejected by timing_crosscheck: 1)" in text
    )
    assert protocol_lines(load_runs([source])) == []
    assert changes([{**row, "changed": False, "after_status": "correct", "after_speedup": 1.12}])[-1].startswith(
        "Speedups of the 1 kernels timed under both: median ratio new/old 0.800"
    )


@pytest.mark.slow
def test_rescore_from_the_command_line_and_the_report_beside_it(tmp_path):
    """`cudaforge rescore RUN eval=cudaforge_paper` on a run's kernels (the CPU: correctness only), then `cudaforge
    report RUN NEW` with the protocols side by side."""
    source = make_run(tmp_path / "source")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": "disabled"}
    out_dir = tmp_path / "rescored"
    cmd = [
        sys.executable,
        "-m",
        "cudaforge.cli",
        "rescore",
        str(source),
        "eval=cudaforge_paper",
        "eval.device=cpu",
        f"eval.build_cache_dir={tmp_path / 'build'}",
        f"hydra.run.dir={out_dir}",
        "rescore.all_rounds=true",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "2 kernels rescored" in done.stdout
    record = json.loads((out_dir / "rescore.json").read_text())
    assert record["protocol"] == "cudaforge_paper" and record["finished"] and record["source_run"] == str(source)
    rows = [json.loads(line) for line in (out_dir / "rescored.jsonl").read_text().splitlines()]
    assert sorted((r["round"], r["after_status"]) for r in rows) == [(1, "correct"), (2, "correct")]
    assert (out_dir / ".hydra" / "config.yaml").is_file()
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            "report",
            str(source),
            str(out_dir),
            f"report.out_dir={tmp_path / 'report'}",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert report.returncode == 0, report.stderr[-2000:]
    assert "## Protocols" in report.stdout and "| cudaforge_paper |" in report.stdout
    assert "1 of 2 kernels changed verdict." in report.stdout  # round 1 was incorrect where it was made
    # named by the run that made its kernels, not by the rescore command's own (default) agents
    label = load_runs([out_dir])[0].label
    assert label == "the kernels of source, rescored [eval=cudaforge_paper]", label
    # results brought back from another machine: the source is found among the runs by its kernels, not its path
    moved = tmp_path / "elsewhere" / "campaign"
    moved.parent.mkdir()
    source.rename(moved)
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            "report",
            str(moved),
            str(out_dir),
            f"report.out_dir={tmp_path / 'report2'}",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    protocols = again.stdout.split("## Protocols")[1]
    assert "| default | campaign |" in protocols and "1 of 2 kernels changed verdict." in protocols, protocols


def test_a_runs_label_names_a_protocol_or_template_set_other_than_ours(tmp_path):
    run = make_run(tmp_path / "paper")
    (run / ".hydra").mkdir()
    (run / ".hydra" / "hydra.yaml").write_text(
        "hydra:\n  runtime:\n    choices:\n      eval: cudaforge_paper\n      agents: cudaforge_paper\n      suite: tiny\n"
    )
    (run / ".hydra" / "config.yaml").write_text(
        "strategy: {name: cudaforge, max_rounds: 10}\ncoder: {model: openai/o3}\njudge: {model: openai/o3}\n"
    )
    plain = make_run(tmp_path / "ours")
    labels = [r.label for r in load_runs([run, plain])]
    assert labels == ["cudaforge o3/o3 10 rounds [eval=cudaforge_paper, agents=cudaforge_paper]", "ours"]


def test_a_rescore_of_something_that_is_not_a_run_is_refused_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    from cudaforge.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["rescore", str(tmp_path / "nowhere"), "eval=cudaforge_paper"]) == 2
    assert "not a run directory" in capsys.readouterr().err
    runs = tmp_path / "outputs" / "runs"
    assert not (runs.is_dir() and any(runs.iterdir()))  # the refused command's run directory is gone
    assert main(["rescore", "a", "b"]) == 2  # one run at a time


@pytest.mark.slow  # three rescores through the CLI, about 30 s
def test_an_interrupted_rescore_carries_on_where_it_stopped_and_refuses_another_protocols_directory(tmp_path):
    """The same command resumes a rescore cut off after its first kernel: that kernel is not evaluated again, the
    rows and results come out whole; a directory holding another protocol's rescore is refused."""
    source = make_run(tmp_path / "source")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": "disabled"}
    out_dir = tmp_path / "rescored"

    def rescore(protocol: str) -> subprocess.CompletedProcess:
        cmd = [
            sys.executable,
            "-m",
            "cudaforge.cli",
            "rescore",
            str(source),
            f"eval={protocol}",
            "eval.device=cpu",
            f"eval.build_cache_dir={tmp_path / 'build'}",
            f"hydra.run.dir={out_dir}",
            "rescore.all_rounds=true",
        ]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)

    first = rescore("cudaforge_paper")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    rows = [json.loads(line) for line in (out_dir / "rescored.jsonl").read_text().splitlines()]
    kept, lost = rows
    # as a kill after the first kernel leaves it: no results.jsonl, not finished, the second row torn
    (out_dir / "results.jsonl").unlink()
    record = json.loads((out_dir / "rescore.json").read_text())
    (out_dir / "rescore.json").write_text(json.dumps({**record, "finished": False}))
    (out_dir / "rescored.jsonl").write_text(json.dumps(kept) + "\n" + json.dumps(lost)[:40])
    kept_eval = out_dir / "tasks" / kept["task_id"].replace("/", "__") / f"eval_{kept['candidate_hash']}.json"
    kept_eval = kept_eval if kept_eval.is_file() else next(out_dir.rglob(f"eval_{kept['candidate_hash']}.json"))
    stamp = kept_eval.stat().st_mtime_ns

    again = rescore("cudaforge_paper")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "resuming: 1 of 2 kernels already rescored" in again.stdout
    assert lost["candidate_hash"] in again.stdout and kept["candidate_hash"] not in again.stdout  # only one evaluated
    assert kept_eval.stat().st_mtime_ns == stamp
    resumed = [json.loads(line) for line in (out_dir / "rescored.jsonl").read_text().splitlines()]
    assert sorted(r["candidate_hash"] for r in resumed) == sorted(r["candidate_hash"] for r in rows)
    assert json.loads((out_dir / "rescore.json").read_text())["finished"]
    assert sorted(r.task_id for r in RunStore(out_dir).results()) == ["tiny/level1/1_ReLU", "tiny/level1/2_Softmax"]

    hydra_record = (out_dir / ".hydra" / "hydra.yaml").read_text()
    assert "eval: cudaforge_paper" in hydra_record
    other = rescore("default")
    assert other.returncode == 2 and "holds another rescore (its protocol, eval differ)" in other.stderr, other.stderr[
        -2000:
    ]
    assert len((out_dir / "rescored.jsonl").read_text().splitlines()) == 2  # untouched, its config as well
    assert (out_dir / ".hydra" / "hydra.yaml").read_text() == hydra_record
