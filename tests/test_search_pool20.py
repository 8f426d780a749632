"""The ``sim20`` suite and its simulator pool (benchmarks/search/make_pool.py), ``coder.pool``, and the comparison
script (benchmarks/search/compare.py); docs/simulator.md."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

from cudaforge.config import CudaforgeConfig
from cudaforge.search.pool import SIM20_POOL, TINY_POOL, load_pool
from cudaforge.search.simulator import pool_path, pool_problem, pool_problems
from cudaforge.tasks import load_suite, selection

SEARCH = Path(__file__).resolve().parent.parent / "benchmarks" / "search"


def script(name: str):
    """A module of benchmarks/search, imported from its file."""
    sys.path.insert(0, str(SEARCH))
    try:
        spec = importlib.util.spec_from_file_location(f"search_{name}", SEARCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SEARCH))


def test_the_pool_has_twenty_tasks_each_with_honest_kernels_of_distinct_speeds_a_wrong_one_and_a_hack():
    pool = load_pool(SIM20_POOL)
    assert len(pool) >= 20
    for task, kernels in pool.items():
        kinds = [k.kind for k in kernels]
        speeds = [k.speedup for k in kernels if k.kind == "honest"]
        assert len(speeds) >= 3 and len(set(speeds)) == len(speeds), task
        assert speeds == sorted(speeds) and 0.6 <= min(speeds) and max(speeds) <= 1.7, task
        assert kinds.count("wrong") >= 1 and kinds.count("hack") >= 1, task
        assert len({k.name for k in kernels}) == len(kernels), task
    assert "generated" in yaml.safe_load(SIM20_POOL.read_text())["label"]


def test_the_committed_suite_and_pool_are_the_generators_output():
    make_pool = script("make_pool")
    assert SIM20_POOL.read_text() == make_pool.pool_text()
    files = make_pool.suite_files()
    assert {p.name for p in files} == {p.name for p in make_pool.SUITE_DIR.glob("*.py")}
    for path, text in files.items():
        assert path.read_text() == text, path


def test_every_pool_task_is_a_task_of_the_suite_with_a_small_variant():
    tasks = load_suite(selection("sim20"))
    assert {t.id.rsplit("/", 1)[-1] for t in tasks} == set(load_pool(SIM20_POOL))
    assert all("small" in t.input_variants for t in tasks)


def test_coder_pool_resolves_a_path_or_a_packaged_name_and_says_where_it_looked(tmp_path, monkeypatch):
    assert pool_path(None) == TINY_POOL and pool_path("sim20_pool.yaml") == SIM20_POOL
    assert pool_path("cudaforge/resources/simulator/sim20_pool.yaml") == SIM20_POOL  # the project root's
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text(SIM20_POOL.read_text())
    assert pool_path("mine.yaml") == tmp_path / "mine.yaml"
    with pytest.raises(FileNotFoundError, match="coder.pool: no pool file nope.yaml .*packaged pools: sim20_pool"):
        pool_path("nope.yaml")
    assert "no pool file nope.yaml" in pool_problem("nope.yaml", [])


def test_a_run_on_a_pool_without_its_tasks_is_refused_before_it_starts():
    ids = ["sim20/level1/16_RMSNorm", "sim20/level1/14_Softmax"]
    assert pool_problem("sim20_pool.yaml", ids) is None
    cfg = CudaforgeConfig()
    cfg.coder.model, cfg.judge.model = "scripted/simulator", "scripted/simulator_judge"
    problems = [p for p in pool_problems(cfg, ids)]  # the tiny pool, by default
    assert len(problems) == 1 and "tiny_pool.yaml has no kernels for 2 of the selected tasks" in problems[0].message
    cfg.coder.pool = "sim20_pool.yaml"
    assert not [p for p in pool_problems(cfg, ids)]


@pytest.mark.slow
def test_a_sample_of_the_pool_gets_its_kinds_from_the_real_evaluator(tmp_path):
    """One kernel of each kind on an elementwise and a row-wise task (the row kernel that loops), evaluated by the
    run's default evaluator on the CPU (``make_pool.py --check`` on a sample)."""
    check_pool = script("check_pool")
    full = yaml.safe_load(SIM20_POOL.read_text())
    wanted = {
        "4_Sigmoid": ("sigmoid_b4096", "sigmoid_dropped_tail", "sigmoid_torch"),
        "16_RMSNorm": ("rmsnorm_loop256", "rmsnorm_wrong_formula", "rmsnorm_torch"),
    }
    sample = {"tasks": {t: [k for k in full["tasks"][t] if k["name"] in names] for t, names in wanted.items()}}
    path = tmp_path / "sample.yaml"
    path.write_text(yaml.safe_dump(sample))
    assert check_pool.check(path, workers=2, cache_dir=tmp_path / "verdicts") == []
    assert len(list((tmp_path / "verdicts").glob("*.json"))) == 6
    assert check_pool.problem("honest", "incorrect") and check_pool.problem("hack", "incorrect")
    assert check_pool.problem("wrong", "correct") and not check_pool.problem("wrong", "rejected")


@pytest.mark.slow
def test_the_comparison_runs_each_strategy_and_seed_and_summarises_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUDAFORGE_SIMULATOR_CACHE", str(tmp_path / "verdicts"))
    compare = script("compare")
    out = tmp_path / "cmp"
    argv = ["--out", str(out), "--tasks", "1", "--strategies", "best_of_n,cudaforge", "--seeds", "1,2"]
    argv += [
        "--max-rounds",
        "2",
        "--bootstrap",
        "50",
        "--eval-set",
        "correctness_trials=1",
        "--eval-set",
        "hidden_inputs=[]",
    ]
    assert compare.main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["device"] == "cpu" and summary["seeds"] == [1, 2] and summary["max_rounds"] == 2
    rows = {row["strategy"]: row for row in summary["strategies"]}
    assert set(rows) == {"best_of_n", "cudaforge"}
    for row in rows.values():
        assert row["tasks"] == 1 and row["seeds"] == [1, 2] and len(row["per_seed"]) == 2
        assert set(row["correct_pct"]) == {"value", "low", "high"} and 0 <= row["correct_pct"]["value"] <= 100
        assert row["evaluations"] >= 2 and row["dollars"] > 0
        assert row["speedups"] == ("declared" if row["correct_pct"]["value"] else "measured")
    assert "| best_of_n | 2 | 1 |" in (out / "summary.md").read_text()
    assert compare.main(argv) == 0 and "done before, kept" in capsys.readouterr().out  # nothing run again
