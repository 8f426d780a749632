"""A run over a local Ray cluster (a head and two workers on this machine), one of its nodes lost mid-run.

Ray is an optional extra (``cudaforge[ray]``); the README's test command installs it, so CI runs these.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from test_campaign import RUN, report_rows

ray_cluster_utils = pytest.importorskip("ray.cluster_utils", reason="Ray is the optional extra cudaforge[ray]")

pytestmark = pytest.mark.slow
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": "disabled"}


@pytest.fixture
def cluster():
    """A Ray head with no CPU of its own (the driver's) and two one-CPU worker nodes."""
    cluster = ray_cluster_utils.Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
    )
    cluster.add_node(num_cpus=1)
    cluster.add_node(num_cpus=1)
    yield cluster
    cluster.shutdown()


def start(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cudaforge.cli", *args],
        cwd=cwd,
        env=ENV,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_a_ray_run_equals_a_local_run_and_survives_a_lost_node(cluster, tmp_path):
    work, run_dir = tmp_path / "work", tmp_path / "ray"
    driver = start(
        *RUN,
        "campaign.engine=ray",
        f"campaign.address={cluster.address}",
        f"campaign.work_dir={work}",
        f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 300
    while driver.poll() is None and len(list(work.glob("*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)  # each worker node has one CPU: two task folders means a task in flight on each node
    assert driver.poll() is None, "the campaign ended before two tasks were in flight"
    lost = next(node for node in cluster.worker_nodes)
    cluster.remove_node(lost)  # its task dies with it and is run again on what is left
    cluster.add_node(num_cpus=1)
    out, err = driver.communicate(timeout=600)
    assert driver.returncode == 0, out[-3000:] + err[-3000:]
    assert "campaign on Ray" in out and "3/3 correct" in out

    local = subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", *RUN, f"hydra.run.dir={tmp_path / 'local'}"],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert local.returncode == 0, local.stderr[-2000:]
    assert report_rows(run_dir, tmp_path) == report_rows(tmp_path / "local", tmp_path)
    results = [json.loads(line)["task_id"] for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(results) == sorted(set(results)) and len(results) == 3  # every task once
    rows = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    paid = Counter(row["request_key"] for row in rows if not row["cache_hit"])
    assert paid and max(paid.values()) == 1  # no call paid twice, the lost task's included
    local_keys = {
        json.loads(line)["request_key"] for line in (tmp_path / "local" / "ledger.jsonl").read_text().splitlines()
    }
    assert set(paid) == local_keys
    for task in results:  # each task's folder came back whole
        assert any((run_dir / "tasks").glob(f"{task.replace('/', '__')}/round_*"))

    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            *RUN,
            "campaign.engine=ray",
            f"campaign.address={cluster.address}",
            f"campaign.work_dir={work}",
            f"hydra.run.dir={run_dir}",
        ],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0 and "0 tasks to run" in again.stdout and "3 already finished" in again.stdout
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == 3  # a resume runs and pays nothing


def test_a_campaign_that_cannot_be_placed_is_refused_in_one_line(cluster, tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            *RUN,
            "campaign.engine=ray",
            f"campaign.address={cluster.address}",
            "campaign.gpus_per_task=1",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "campaign.gpus_per_task=1 but the Ray cluster has no GPU" in out.stderr
    assert not (tmp_path / "run").exists()  # nothing left behind by a refused run


def test_a_search_runs_on_ray_with_its_children_side_by_side_and_its_trees_come_back(cluster, tmp_path):
    """Beam search, two children of a round at once, each task a Ray task: every task's tree is in the run
    directory the driver owns, and the report draws it."""
    run_dir = tmp_path / "ray"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            *RUN,
            "strategy=beam",
            "strategy.search.samples=1",
            "strategy.search.parallel=2",
            "suite.problem_ids=[1,2]",
            "campaign.engine=ray",
            f"campaign.address={cluster.address}",
            f"campaign.work_dir={tmp_path / 'work'}",
            f"hydra.run.dir={run_dir}",
        ],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    trees = sorted((run_dir / "tasks").glob("*/tree.jsonl"))
    assert len(trees) == 2
    for path in trees:  # two rounds of two nodes (one child of each survivor), each node with its round folder
        nodes = [json.loads(line) for line in path.read_text().splitlines()]
        assert [n["id"] for n in nodes] == [1, 2, 3, 4] and {n["parent"] for n in nodes[2:]} == {1, 2}
        assert all((path.parent / f"round_{n['id']:02d}").is_dir() for n in nodes)
    from cudaforge.report import build_report

    lines = build_report([run_dir], bootstrap=0).sections["search"]
    assert sum(line.startswith("4 nodes, depth 2, ") for line in lines) == 2
