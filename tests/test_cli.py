"""The `cudaforge` command as a user runs it (a real subprocess, the installed console script)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def cudaforge(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_tasks_list_tiny_from_another_directory(tmp_path):
    out = cudaforge("tasks", "list", "suite=tiny", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == "3 tasks"
    assert lines[0].startswith("tiny/level1/1_ReLU\tlevel 1\tReLU")
    assert list(tmp_path.iterdir()) == []  # listing writes nothing


def test_tasks_list_main_by_level():
    out = cudaforge("tasks", "list", "suite=main", "suite.levels=[3]")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert all(line.startswith("main/level3/") for line in lines[:-1])
    assert lines[-1] == f"{len(lines) - 1} tasks"


def test_tasks_list_kernelbench_layout(kernelbench_root):
    out = cudaforge("tasks", "list", "suite=kernelbench", f"suite.root={kernelbench_root}", "suite.levels=[1]")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines() == [
        "kernelbench/level1/1_Relu_a\tlevel 1\tRelu_a",
        "kernelbench/level1/2_Relu_b\tlevel 1\tRelu_b",
        "2 tasks",
    ]


def test_tasks_list_hf_export(tmp_path):
    import json

    from conftest import problem_source

    path = tmp_path / "kb.jsonl"
    path.write_text(json.dumps({"code": problem_source(), "level": 2, "name": "4_X", "problem_id": 4}) + "\n")
    out = cudaforge("tasks", "list", "suite=kernelbench_hf", f"suite.root={path}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines() == ["kernelbench/level2/4_X\tlevel 2\tX", "1 tasks"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["tasks", "list", "suite=kernelbench", "suite.root=/no/such/dir"], "does not exist"),
        (["tasks", "list", "suite=tiny", "suite.levels=[4]"], "selection is empty"),
        (["tasks", "list", "suite=kernelbench"], "needs suite.root"),
    ],
)
def test_bad_input_is_one_clear_line(args, words):
    out = cudaforge(*args)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr


def test_bad_config_value_names_the_key():
    out = cudaforge("tasks", "list", "eval.baseline=fast")
    assert out.returncode != 0 and "eval.baseline" in out.stderr


def test_baseline_without_a_gpu_says_so(tmp_path):
    out = cudaforge("baseline", "suite=tiny", f"hydra.run.dir={tmp_path}")
    assert out.returncode == 2 and "no GPU visible" in out.stderr


def test_usage_and_unknown_subcommand():
    assert "subcommands:" in cudaforge("--help").stdout
    out = cudaforge("frobnicate")
    assert out.returncode == 2 and "unknown subcommand" in out.stderr
    assert "say `list` or `audit`" in cudaforge("tasks").stderr


def test_profile_without_a_gpu_reports_the_roofline(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    out = cudaforge("profile", "suite=tiny", "task=tiny/level1/3_MatmulBiasReLU",
                    "candidate=benchmarks/candidates/cuda_matmul_bias_relu.py", f"output={tmp_path / 'p.json'}")
    assert out.returncode == 0, out.stderr
    assert "profile unavailable (cudaforge24)" in out.stdout and "3.355e+07 FLOP" in out.stdout
    assert '"status": "unavailable"' in (tmp_path / "p.json").read_text()
    missing = cudaforge("profile", "task=tiny/level1/1_ReLU", f"candidate={tmp_path / 'none.py'}")
    assert missing.returncode == 2 and "no such candidate" in missing.stderr
