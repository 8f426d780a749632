"""A run killed mid-way resumes from its run directory: nothing finished is redone or paid twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def start(run_dir: Path, cwd: Path) -> subprocess.Popen:
    args = [
        sys.executable,
        "-m",
        "cudaforge.cli",
        "run",
        "strategy.max_rounds=2",
        "tracker=disabled",
        "eval.held_out_shapes=false",  # resuming does not depend on them (tests/test_held_out.py has them)
        f"hydra.run.dir={run_dir}",
    ]
    # SIGINT back to its default, so the child's Python turns Ctrl-C into KeyboardInterrupt even when this test runs
    # as a background job (a shell starts those with SIGINT ignored, and a child inherits that)
    return subprocess.Popen(
        args,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for_results(run_dir: Path, n: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    path = run_dir / "results.jsonl"
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError("the run did not get there in time")


def paid_calls(run_dir: Path) -> list[tuple]:
    rows = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    return [(r["meta"]["task_id"], r["meta"]["round"], r["role"]) for r in rows if not r["cache_hit"]]


@pytest.mark.slow
def test_sigkill_then_resume_redoes_nothing(tmp_path):
    run_dir = tmp_path / "run"
    proc = start(run_dir, tmp_path)
    wait_for_results(run_dir, 1, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = json.loads((run_dir / "results.jsonl").read_text().splitlines()[0])
    paid_before = paid_calls(run_dir)
    proc = start(run_dir, tmp_path)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == [
        "tiny/level1/1_ReLU",
        "tiny/level1/2_Softmax",
        "tiny/level1/3_MatmulBiasReLU",
    ]
    assert rows[0] == first  # the finished task was not run again
    paid = paid_calls(run_dir)
    assert paid[: len(paid_before)] == paid_before
    assert len(set(paid)) == len(paid)  # no (task, round, role) paid twice
    assert not any(task == first["task_id"] for task, _, _ in paid[len(paid_before) :])


@pytest.mark.slow
def test_ctrl_c_stops_gracefully_and_says_how_to_resume(tmp_path):
    run_dir = tmp_path / "run"
    proc = start(run_dir, tmp_path)
    wait_for_results(run_dir, 1, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130 and "resume with the same command" in err and str(run_dir) in err
    assert len((run_dir / "results.jsonl").read_text().splitlines()) < 3
