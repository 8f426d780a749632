"""Run state under faults: kill -9 at random points, torn and undecodable lines, a second run into the same directory,
corrupt databases. Whatever happens, every finished task is recorded exactly once, no call is paid twice, and the
same command finishes the run."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from test_resume import paid_calls

pytestmark = pytest.mark.slow
TASKS = ["tiny/level1/1_ReLU", "tiny/level1/2_Softmax", "tiny/level1/3_MatmulBiasReLU"]
RUN = ["run", "strategy.max_rounds=3", "tracker=disabled", "profile.enabled=false"]


def start(run_dir: Path, cwd: Path, *more: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cudaforge.cli", *RUN, *more, f"hydra.run.dir={run_dir}"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(run_dir: Path) -> list[str]:
    """Task ids of the readable result lines, in file order (torn or undecodable lines left out)."""
    path = run_dir / "results.jsonl"
    out = []
    for line in path.read_bytes().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line.decode())["task_id"])
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
    return out


def tear_or_garble(run_dir: Path, rng: random.Random) -> str:
    """Damage results.jsonl as a crash or a disk fault might; returns what was done."""
    path = run_dir / "results.jsonl"
    if not path.exists() or not path.read_bytes():
        return "nothing to damage"
    data = path.read_bytes()
    if rng.random() < 0.5:
        last = data.rstrip(b"\n").rfind(b"\n") + 1
        path.write_bytes(data[: last + max(1, (len(data) - last) // 2)])  # the last result cut mid-line
        return "tore the last line"
    path.write_bytes(data + b'{"task_id": "\xff\xfe garbage\n')
    return "appended bytes that are not UTF-8"


def test_random_kills_and_damage_never_lose_or_repeat_a_task(tmp_path):
    rng = random.Random(20261202)
    run_dir = tmp_path / "run"
    log = []
    for iteration in range(6):
        proc = start(run_dir, tmp_path)
        time.sleep(rng.uniform(3.0, 8.0 + 4 * iteration))  # later runs live longer, so the run makes progress
        if iteration == 2 and proc.poll() is None:  # a second run into a directory in use is refused, naming it
            second = subprocess.run(
                [sys.executable, "-m", "cudaforge.cli", *RUN, f"hydra.run.dir={run_dir}"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert second.returncode == 2 and "is in use by cudaforge run (pid" in second.stderr, second.stderr
            log.append("a second run was refused")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        log.append(f"killed after {len(finished(run_dir))} results; {tear_or_garble(run_dir, rng)}")
    proc = start(run_dir, tmp_path)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode in (0, 1), "\n".join(log) + err[-3000:]  # it ran to the end (1: a task has no kernel)
    assert "| LLM: " in out and " calls (" in out.split("| LLM: ")[1]  # the closing line names the calls
    assert sorted(finished(run_dir)) == TASKS, log  # every task exactly once, the damaged lines quarantined
    paid = paid_calls(run_dir)
    assert paid and max(Counter(paid).values()) == 1, log  # no (task, round, role) paid twice
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        # every round ran, unless a candidate's evaluation was killed twice: then it is `crashed` by design
        # (docs/evaluation.md), and the demo transcript has no Judge reply for that, which ends the task
        history = json.loads(line)["history"]
        assert len(history) == 3 or any(h["status"] == "crashed" for h in history), (history, log)
    assert proc.returncode == 0 or "crashed" in (run_dir / "results.jsonl").read_text()
    damaged = any("tore" in line or "appended" in line for line in log)
    assert (run_dir / "results.quarantine.jsonl").exists() == damaged, log
    again = start(run_dir, tmp_path)
    out, err = again.communicate(timeout=300)
    assert again.returncode == proc.returncode and len(finished(run_dir)) == 3  # the same verdicts, nothing rerun
    assert paid_calls(run_dir) == paid  # a finished run resumed pays for nothing


NO_HELD_OUT = "eval.held_out_shapes=false"
"""The databases' test runs without the held-out shapes: they are checked after a task's loop, outside the databases
(tests/test_held_out.py has them). The random kills keep them, so that a kill may land during them too."""


def test_corrupt_databases_are_one_line_and_repair_loses_nothing_recorded(tmp_path):
    run_dir = tmp_path / "run"
    proc = start(run_dir, tmp_path, NO_HELD_OUT)
    deadline = time.monotonic() + 300
    while len(finished(run_dir)) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # into the next task
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = finished(run_dir)
    paid_before = paid_calls(run_dir)
    for name in ("llm_cache.sqlite", "checkpoints.sqlite"):
        (run_dir / name).write_bytes(b"this is not a database" * 100)  # a disk fault, or a torn copy of the run
        for side in ("-wal", "-shm"):
            (run_dir / f"{name}{side}").unlink(missing_ok=True)
    refused = start(run_dir, tmp_path, NO_HELD_OUT)
    out, err = refused.communicate(timeout=300)
    assert refused.returncode == 2 and "Traceback" not in err
    assert "llm_cache.sqlite is not a readable SQLite database" in err and f"cudaforge repair {run_dir}" in err
    repaired = subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", "repair", str(run_dir)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert repaired.returncode == 0, repaired.stderr
    assert f"{len(set(paid_before))} replies rebuilt" in repaired.stdout and "have no reply" not in repaired.stdout
    aside = sorted(p.name.split(".corrupt-")[0] for p in run_dir.glob("*.corrupt-*"))
    assert aside == ["checkpoints.sqlite", "llm_cache.sqlite"]  # moved, never deleted
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(next(run_dir.glob("llm_cache.sqlite.corrupt-*"))).execute(
            "SELECT 1 FROM sqlite_master"
        ).fetchall()
    proc = start(run_dir, tmp_path, NO_HELD_OUT)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    assert finished(run_dir)[: len(kept)] == kept and sorted(finished(run_dir)) == TASKS
    paid = paid_calls(run_dir)
    assert paid[: len(paid_before)] == paid_before  # the ledger kept every recorded call
    assert not any(task in kept for task, _, _ in paid[len(paid_before) :])  # finished tasks were not run again
    assert max(Counter(paid).values()) == 1  # the task in flight restarted, its recorded calls replayed, not paid
