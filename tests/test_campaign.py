"""Campaigns: a suite split into shards, run apart and merged into one run directory (cudaforge/run/merge.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudaforge.run.merge import MergeError, config_differences, merge_runs
from cudaforge.tasks import load_suite, selection
from cudaforge.tasks.loader import TaskError


def cudaforge(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=900
    )


def test_shards_hold_every_task_once():
    whole = [t.id for t in load_suite(selection("main"))]
    shards = [[t.id for t in load_suite(selection("main", shard_count=4, shard_index=i))] for i in range(4)]
    assert sorted(sum(shards, [])) == sorted(whole)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    with pytest.raises(TaskError, match="shard_index must be in 0..3"):
        load_suite(selection("main", shard_count=4, shard_index=4))
    with pytest.raises(TaskError, match="more shards than the 3 selected tasks"):
        load_suite(selection("tiny", shard_count=5, shard_index=0))


def test_configs_that_differ_only_in_the_shard_merge():
    a = {"suite": {"shard_index": 0, "shard_count": 2}, "eval": {"timing_trials": 100}, "concurrency": 1}
    assert config_differences(a, {**a, "suite": {"shard_index": 1, "shard_count": 2}, "concurrency": 4}) == []
    assert config_differences(a, {**a, "eval": {"timing_trials": 50}}) == ["eval.timing_trials: 100 vs 50"]


def test_a_shard_run_before_the_guards_were_nested_merges_with_a_newer_one(tmp_path):
    """A shard whose config names a guard's policy ``eval.guard_<guard>`` (as before the nesting) reads as written now
    (``eval.guards.<guard>``): the same settings merge, other ones are still told apart."""
    import yaml

    from cudaforge.run.merge import read_config

    def shard(name: str, eval_cfg: dict) -> Path:
        (tmp_path / name / ".hydra").mkdir(parents=True)
        (tmp_path / name / ".hydra" / "config.yaml").write_text(yaml.safe_dump({"eval": eval_cfg}))
        return tmp_path / name

    old = read_config(shard("old", {"timing_trials": 100, "guard_io": "report"}))
    new = read_config(shard("new", {"timing_trials": 100, "guards": {"io": "report"}}))
    other = read_config(shard("other", {"timing_trials": 100, "guards": {"io": "reject"}}))
    assert old == new and config_differences(old, new) == []
    assert config_differences(old, other) == ["eval.guards.io: 'report' vs 'reject'"]


def test_merge_refuses_what_is_not_a_run(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(MergeError, match="not a run directory"):
        merge_runs(tmp_path / "out", [tmp_path / "empty"], say=lambda line: None)


RUN = ["run", "strategy.max_rounds=2", "tracker=disabled", "profile.enabled=false", "eval.held_out_shapes=false"]
"""Held-out shapes off: the shard and merge contract does not depend on them (tests/test_held_out.py has them)."""


def report_rows(run_dir: Path, cwd: Path) -> list[dict]:
    """The report's per-task data, without what depends on when and how long things ran."""
    from cudaforge.report import load_run

    run = load_run(run_dir)
    keep = ("task_id", "correct", "best_speedup", "rounds", "best_candidate_hash")
    return sorted(({k: getattr(r, k) for k in keep} for r in run.results), key=lambda r: r["task_id"])


@pytest.mark.slow
def test_shards_merged_report_the_same_as_one_run(tmp_path):
    whole = cudaforge(*RUN, f"hydra.run.dir={tmp_path / 'whole'}", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr[-2000:]
    for i in range(2):
        shard = cudaforge(
            *RUN,
            "suite.shard_count=2",
            f"suite.shard_index={i}",
            f"hydra.run.dir={tmp_path / f'shard_{i}'}",
            cwd=tmp_path,
        )
        assert shard.returncode == 0, shard.stderr[-2000:]
    shards = [str(tmp_path / f"shard_{i}") for i in range(2)]
    merged = cudaforge("merge", *shards, f"out={tmp_path / 'merged'}", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    assert "3 tasks" in merged.stdout
    assert report_rows(tmp_path / "merged", tmp_path) == report_rows(tmp_path / "whole", tmp_path)
    ledger = lambda d: sorted(json.loads(line)["request_key"] for line in (d / "ledger.jsonl").read_text().splitlines())  # noqa: E731
    assert ledger(tmp_path / "merged") == ledger(tmp_path / "whole")  # the same calls, each once
    problems = lambda d: json.loads((d / "problem_set.json").read_text())  # noqa: E731
    assert problems(tmp_path / "merged")["digest"] == problems(tmp_path / "whole")["digest"]
    again = cudaforge("merge", *shards, f"out={tmp_path / 'merged'}", cwd=tmp_path)  # incremental: adds nothing
    assert again.returncode == 0 and "0 tasks added" in again.stdout
    assert len((tmp_path / "merged" / "results.jsonl").read_text().splitlines()) == 3
    report = cudaforge("report", str(tmp_path / "merged"), f"report.out_dir={tmp_path / 'rep'}", cwd=tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    other = cudaforge(
        *RUN,
        "suite.shard_count=2",
        "suite.shard_index=0",
        "eval.timing_trials=7",
        f"hydra.run.dir={tmp_path / 'other'}",
        cwd=tmp_path,
    )
    assert other.returncode == 0
    refused = cudaforge("merge", shards[0], str(tmp_path / "other"), f"out={tmp_path / 'm2'}", cwd=tmp_path)
    assert refused.returncode == 2 and "eval.timing_trials: 100 vs 7" in refused.stderr


def test_a_pack_cannot_write_outside_its_task_folder(tmp_path):
    from cudaforge.run.campaign import add_task_pack
    from cudaforge.track.store import RunStore
    from cudaforge.types import TaskResult

    store = RunStore(tmp_path / "run")
    result = TaskResult(task_id="tiny/level1/1_ReLU", correct=True)
    bad = {"result": result.to_json(), "files": {"../../escaped.txt": b"x"}, "ledger": [], "cache": []}
    with pytest.raises(MergeError, match="outside its folder"):
        add_task_pack(store, bad, set(), tmp_path / "run" / "llm_cache.sqlite")
    assert not (store.root / "escaped.txt").exists() and store.results() == []  # nothing written, no result
    good = {**bad, "files": {"round_01/candidate.py": b"class ModelNew: pass\n"}}
    done: set[str] = set()
    assert add_task_pack(store, good, done, tmp_path / "run" / "llm_cache.sqlite").task_id == result.task_id
    assert add_task_pack(store, good, done, tmp_path / "run" / "llm_cache.sqlite") is None  # added once only
    assert [r.task_id for r in store.results()] == [result.task_id]
