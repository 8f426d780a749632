"""The run directory store and the W&B sink (offline; never needed for a run to succeed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cudaforge.track.store import SCHEMA_VERSION, RunDir, RunDirTooNew, RunStore, task_slug
from cudaforge.track.wandb_sink import NullTracker, SafeTracker, make_tracker
from cudaforge.types import RoundRecord, TaskResult


def result(task_id="tiny/level1/1_ReLU", correct=True):
    return TaskResult(
        task_id=task_id,
        correct=correct,
        best_round=1,
        best_speedup=1.5,
        rounds=2,
        history=[
            RoundRecord(round=1, coder_mode="first_attempt", status="correct", speedup=1.5),
            RoundRecord(round=2, coder_mode="optimize", status="incorrect"),
        ],
    )


def test_store_round_trips_results_and_skips_a_torn_line(tmp_path):
    store = RunStore(tmp_path)
    store.append_result(result())
    with store.results_path.open("a") as f:
        f.write('{"task_id": "torn"')  # a crash mid-write
    assert [r.task_id for r in store.results()] == ["tiny/level1/1_ReLU"]
    store.append_result(result("tiny/level1/2_Softmax"))  # the resumed run's next result is not glued to the torn line
    with store.results_path.open("ab") as f:
        f.write(b'{"task_id": "\xff\xfe"}\n')  # bytes that are not UTF-8 cost their own line only
    assert [r.task_id for r in store.results()] == ["tiny/level1/1_ReLU", "tiny/level1/2_Softmax"]
    warnings = store.quarantine()  # a run's start: the bad lines move to a side file, named by file and line
    assert [w.split(" is not")[0] for w in warnings] == [f"{store.results_path} line 2", f"{store.results_path} line 4"]
    assert (tmp_path / "results.quarantine.jsonl").read_bytes() == b'{"task_id": "torn"\n{"task_id": "\xff\xfe"}\n'
    assert [r.task_id for r in store.results()] == ["tiny/level1/1_ReLU", "tiny/level1/2_Softmax"]
    assert len(store.results_path.read_bytes().splitlines()) == 2 and store.quarantine() == []
    task = store.task("tiny/level1/1_ReLU")
    task.write_json(3, "eval.json", {"a": 1})
    assert task.read_json(3, "eval.json") == {"a": 1}
    assert (tmp_path / "tasks" / task_slug("tiny/level1/1_ReLU") / "round_03" / "eval.json").exists()


@pytest.mark.slow
def test_wandb_offline_writes_a_run_with_the_summary_and_artifact(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = SimpleNamespace(wandb_mode="offline", project="cudaforge-test", entity=None, tags=["t"])
    tracker = make_tracker(cfg, tmp_path, {"suite": {"name": "tiny"}}, name="job0", group="sweep1")
    assert not isinstance(tracker.inner, NullTracker)
    tracker.log_task(result(), "class ModelNew: pass\n")
    tracker.finish([result(), result("tiny/level1/2_Softmax", correct=False)])
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and any(runs[0].rglob("*.wandb"))


def test_unpriced_costs_reach_wandb_as_null_never_zero(tmp_path, monkeypatch):
    """The per-task table and the run summary: null dollars where nothing was priced, the priced sum otherwise."""
    import sys

    from cudaforge.track.wandb_sink import WandbTracker, run_cost

    unpriced = TaskResult("t/level1/1_A", True, cost_usd=None, unpriced_calls=3)
    priced = TaskResult("t/level1/2_B", False, cost_usd=0.25, unpriced_calls=1)
    assert run_cost([unpriced]) == (None, 3) and run_cost([unpriced, priced]) == (0.25, 4)
    assert run_cost([TaskResult("t/level1/3_C", True)]) == (0.0, 0) and run_cost([]) == (0.0, 0)

    logged: list[dict] = []
    run = SimpleNamespace(summary={}, dir=str(tmp_path / "files"), log=logged.append, finish=lambda: None)
    fake = SimpleNamespace(
        init=lambda **kw: run, Table=lambda columns, data: dict(zip(["columns", "data"], [columns, data]))
    )
    monkeypatch.setitem(sys.modules, "wandb", fake)
    tracker = WandbTracker(
        mode="offline", project="p", entity=None, tags=[], run_dir=tmp_path, config={}, name="j", group=None
    )
    tracker.finish([unpriced])
    table = logged[-1]["tasks"]
    assert table["data"][0][table["columns"].index("cost_usd")] is None
    assert run.summary["cost_usd"] is None and run.summary["unpriced_calls"] == 3


def test_disabled_tracker_and_failures_never_stop_a_run(tmp_path, capsys):
    cfg = SimpleNamespace(wandb_mode="disabled", project="p", entity=None, tags=[])
    assert isinstance(make_tracker(cfg, tmp_path, {}, "j", None).inner, NullTracker)

    def broken():
        raise RuntimeError("no wandb here")

    tracker = SafeTracker(broken)
    tracker.log_task(result(), None)
    tracker.finish([result()])
    said = capsys.readouterr().err  # a plain warning line among the run's, not a log record in Hydra's format
    assert isinstance(tracker.inner, NullTracker) and "warning: W&B tracking is off for this run: no wandb here" in said


def test_a_run_records_its_problem_set_and_a_resume_on_another_says_so(tmp_path, capsys):
    """The real runner on tiny ReLU with a scripted Coder that writes no code (nothing is evaluated)."""
    import dataclasses
    import json

    from cudaforge.config import CudaforgeConfig
    from cudaforge.llm.scripted import install_script, remove_script
    from cudaforge.run.runner import make_context, run_suite
    from cudaforge.tasks import find_task, run_version, selection
    from cudaforge.tasks.identity import version_line

    install_script("track_no_code", lambda messages: "no code today")
    cfg = CudaforgeConfig()
    cfg.coder.model = cfg.judge.model = "scripted/track_no_code"
    cfg.strategy.max_rounds = 1
    cfg.eval.device, cfg.eval.build_cache_dir = "cpu", str(tmp_path / "build")
    cfg.profile.enabled = False
    relu = find_task(selection("tiny"), "level1/1_ReLU")
    try:
        run_suite(make_context(cfg, tmp_path / "run"), [relu])
        record = json.loads((tmp_path / "run" / "problem_set.json").read_text())
        assert record["kind"] == "hashes" and record["tasks"] == {relu.id: relu.source_hash}
        assert record["version"] == f"hashes:{record['digest'][:12]}"
        task_json = RunStore(tmp_path / "run").task(relu.id).read_json(None, "task.json")
        assert task_json["source_hash"] == relu.source_hash
        run = RunDir(tmp_path / "run")  # the read API sees what the runner wrote
        assert run.schema() == SCHEMA_VERSION == json.loads((tmp_path / "run" / "run.json").read_text())["schema"]
        assert run.task(relu.id).task()["source_hash"] == relu.source_hash
        assert [t.slug for t in run.tasks()] == [task_slug(relu.id)]
        first = run.task(relu.id).rounds()[0]
        assert first.number == 1 and first.coder["ok"] is False and first.candidate is None and first.eval is None
        assert run.config() == {} and not run.config_path.exists()  # Hydra writes it; make_context was called bare
        assert list(run.latest_results()) == [relu.id] and run.ledger() and run.ledger()[0]["role"] == "coder"
        capsys.readouterr()
        run_suite(make_context(cfg, tmp_path / "run"), [relu])  # the same problems: nothing said, nothing added
        said = capsys.readouterr().err
        assert (
            "problem set" not in said and "resuming" in said and "1 task of 1 finished earlier, 0 tasks to run" in said
        )
        edited = dataclasses.replace(relu, source=relu.source + "\n# edited\n")
        run_suite(make_context(cfg, tmp_path / "run"), [edited])
    finally:
        remove_script("track_no_code")
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "resuming" not in line]
    assert len(err) == 1 and "warning: this run directory's problem set changed" in err[0]
    assert "1 task(s) differ (1 changed, 0 only in one)" in err[0] and "problem_set.json" in err[0]
    both = RunStore(tmp_path / "run").problem_set()
    assert both["digest"] == record["digest"] and both["changed_on_resume"][0]["tasks"] == {relu.id: edited.source_hash}
    assert version_line(both).startswith(f"problem set {record['version']}, changed on resume to hashes:")
    assert run_version(tmp_path / "run") == record["version"] and run_version(tmp_path / "build") is None


def test_a_released_run_directory_keeps_no_lock_file_and_can_be_claimed_again(tmp_path):
    from cudaforge.track.store import LOCK_FILE

    store = RunStore(tmp_path / "run")
    store.claim()
    assert (tmp_path / "run" / LOCK_FILE).exists()
    store.release()
    assert not (tmp_path / "run" / LOCK_FILE).exists()
    again = RunStore(tmp_path / "run")
    again.claim()
    script = (
        f"from cudaforge.track.store import RunStore, RunDirBusy\ntry:\n RunStore({str(tmp_path / 'run')!r}).claim()"
        "\nexcept RunDirBusy as e:\n print('busy', e)"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("busy") and f"pid {__import__('os').getpid()}" in out.stdout
    again.release()


def test_one_run_at_a_time_in_a_run_directory(tmp_path):
    """A second `cudaforge run` into a directory in use would run, and pay for, every task again."""
    import subprocess
    import sys

    from cudaforge.track.store import RunDirBusy

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from cudaforge.track.store import RunStore; "
            f"RunStore({str(tmp_path)!r}).claim(); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirBusy, match=rf"in use by cudaforge run \(pid {holder.pid}\).*another hydra.run.dir"):
            RunStore(tmp_path).claim()
    finally:
        holder.kill()
        holder.wait()
    RunStore(tmp_path).claim()  # the holder is gone: the directory is free again
    RunStore(tmp_path).claim()  # and this process may claim it twice (a resume in the same process)


def test_a_corrupt_database_of_the_run_is_one_line_naming_it(tmp_path):
    from cudaforge.run.runner import RunStateError, check_sqlite

    check_sqlite(tmp_path / "absent.sqlite", "nothing")  # absent: nothing to say
    bad = tmp_path / "llm_cache.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(RunStateError) as info:
        check_sqlite(bad, "the run's recorded LLM replies")
    text = str(info.value)
    assert (
        str(bad) in text
        and "recorded LLM replies" in text
        and f"cudaforge repair {tmp_path}" in text
        and "\n" not in text
    )


def test_the_run_directory_file_names_are_spelled_only_by_the_store():
    """The runner writes the run directory and the report, teach, rescore, merge and plan readers read it: every
    file name comes from ``cudaforge/track/store.py``, so a renamed file cannot leave a reader behind."""
    import ast
    from pathlib import Path

    import cudaforge
    from cudaforge.track import store

    names = {
        store.RESULTS_FILE,
        store.LEDGER_FILE,
        store.TASK_FILE,
        store.CANDIDATE_FILE,
        store.EVAL_FILE,
        store.PROFILE_FILE,
        store.RESCORE_FILE,
        store.RESCORED_FILE,
        "problem_set.json",
        store.CODER_FILE,
        store.JUDGE_FILE,
        store.RUN_FILE,
        store.LLM_CACHE_FILE,
        store.CHECKPOINTS_FILE,
        store.HYDRA_DIR,
        store.CONFIG_FILE,
        store.HYDRA_FILE,
        store.PLAN_FILE,
        store.MERGE_FILE,
        store.LOCK_FILE,
    }
    package = Path(cudaforge.__file__).parent
    allowed = {
        package / "track" / "store.py",
        package / "tasks" / "identity.py",  # where they are defined
        package / "eval" / "extensions" / "precompile.py",
    }  # its candidate.py: a build's scratch file, not a run's
    spelled = []
    for path in package.rglob("*.py"):
        if path in allowed or "resources" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                spelled.append(f"{path.relative_to(package)}:{node.lineno} {node.value}")
    assert not spelled, spelled


def test_a_run_directory_of_a_newer_schema_is_refused_by_every_reader_and_writer(tmp_path):
    """Read as if it were ours, a layout we do not know would be misread in silence: one line says upgrade."""
    from cudaforge.report.load import load_run
    from cudaforge.run.merge import merge_runs
    from cudaforge.teach.runs import load_run_view

    legacy = tmp_path / "legacy"  # a run made before run.json: schema 0, read as before
    RunStore(legacy).append_result(result())
    assert RunDir(legacy).schema() == 0 and [r.task_id for r in load_run(legacy).results] == ["tiny/level1/1_ReLU"]
    RunStore(legacy).write_schema()
    assert RunDir(legacy).schema() == SCHEMA_VERSION
    newer = tmp_path / "newer"
    RunStore(newer).append_result(result())
    (newer / "run.json").write_text('{"schema": 99, "cudaforge": "9.0"}')
    for read in (
        load_run,
        load_run_view,
        lambda p: RunDir(p).require_results(),
        lambda p: RunStore(p).write_schema(),
        lambda p: merge_runs(tmp_path / "merged", [p], say=lambda _: None),
    ):
        with pytest.raises(
            RunDirTooNew, match=r"schema 99 \(written by cudaforge 9\.0\).*reads schemas 0 to 1: upgrade"
        ):
            read(newer)
    assert not (tmp_path / "merged" / "results.jsonl").exists()


def test_hydra_choices_of_a_malformed_hydra_yaml_are_none_not_a_crash(tmp_path):
    hydra = tmp_path / ".hydra"
    hydra.mkdir()
    for text, expected in [
        ("hydra: {runtime: oops}\n", {}),
        ("hydra: [1, 2]\n", {}),
        (": : :\n", {}),
        (
            "hydra: {runtime: {choices: {eval: cudaforge_paper, agents: default}}}\n",
            {"eval": "cudaforge_paper", "agents": "default"},
        ),
    ]:
        (hydra / "hydra.yaml").write_text(text)
        assert RunDir(tmp_path).hydra_choices() == expected


def test_each_round_reaches_wandb_as_it_ends_with_its_own_dollars_tokens_and_the_judges_outcome(tmp_path, monkeypatch):
    """Issue 53: W&B got per-round metrics only when a task finished, with no per-round dollars, tokens or Judge
    outcome."""
    import sys

    from cudaforge.track.wandb_sink import WandbTracker

    logged: list[dict] = []
    run = SimpleNamespace(summary={}, dir=str(tmp_path / "files"), log=logged.append, finish=lambda: None)
    monkeypatch.setitem(sys.modules, "wandb", SimpleNamespace(init=lambda **kw: run))
    tracker = WandbTracker(
        mode="offline", project="p", entity=None, tags=[], run_dir=tmp_path, config={}, name="j", group=None
    )
    first = {"event": "round_done", "task_id": "t/level1/1_A", "round": 1, "status": "incorrect", "judge": "dropped"}
    tracker.log_round({**first, "cost_usd": 0.02, "tokens_in": 100, "tokens_out": 20})
    tracker.log_round(
        {**first, "round": 2, "status": "correct", "speedup": 1.4, "judge": "advice"}
        | {"cost_usd": 0.05, "tokens_in": 260, "tokens_out": 50}
    )
    assert [row["round/cost_usd"] for row in logged] == pytest.approx([0.02, 0.03])
    assert [(row["round/tokens_in"], row["round/tokens_out"]) for row in logged] == [(100, 20), (160, 30)]
    assert [row["round/judge"] for row in logged] == ["dropped", "advice"] and logged[1]["round/speedup"] == 1.4
    history = [
        RoundRecord(1, "first_attempt", status="incorrect"),
        RoundRecord(2, "repair", status="correct"),
        RoundRecord(3, "optimize", status="correct"),
    ]
    tracker.log_task(TaskResult("t/level1/1_A", True, rounds=3, history=history), None)
    assert [row["round"] for row in logged] == [1, 2, 3]  # only the round not logged as it ended
