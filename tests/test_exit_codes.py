"""Exit statuses a script can rely on: a multirun reports its worst job, and ``eval`` tells "compiled, not run"
from "correct"."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow


def _cli(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": "disabled", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def test_a_multirun_exits_with_its_worst_jobs_status(tmp_path):
    # one round: the demo's first attempt at Softmax is wrong; three rounds: it is correct
    out = _cli(
        [
            "run",
            "-m",
            "strategy.max_rounds=3,1",
            "suite.names=[*Softmax]",
            "tracker=disabled",
            "profile=off",
            "eval.held_out_shapes=false",  # a job's status does not depend on them (tests/test_held_out.py has them)
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        tmp_path,
    )
    assert "1/1 correct" in out.stdout and "0/1 correct" in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]
    assert out.returncode == 1
    # the docs' `cudaforge report outputs/multirun/<date>/*`: the shell's glob also catches multirun.yaml
    sweep = tmp_path / "sweep"
    entries = sorted(str(p) for p in sweep.glob("*"))
    assert any(e.endswith("multirun.yaml") for e in entries)
    for args in (entries, [str(sweep)]):
        report = _cli(
            ["report", *args, "report.plots=false", "report.compare=[]", f"report.out_dir={tmp_path / 'r'}"], tmp_path
        )
        assert report.returncode == 0, report.stderr[-2000:]
        text = (tmp_path / "r" / "report.md").read_text()
        assert text.count("| cudaforge ") == 2 or text.count(str(sweep)) >= 2, text[:1500]
        if args is entries:
            assert "multirun.yaml: not a `cudaforge run` directory" in text
    export = _cli(["export", *entries, f"out_dir={tmp_path / 'x'}"], tmp_path)
    assert export.returncode == 0 and "skipped" in export.stderr, export.stderr[-2000:]


def test_eval_of_a_cuda_candidate_without_a_gpu_is_not_correct(tmp_path):
    out = _cli(["eval", "task=level1/1_ReLU", f"candidate={REPO / 'benchmarks/candidates/cuda_relu.py'}"], tmp_path)
    assert "COMPILED" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.returncode == 3
