"""The `cudaforge` command as a user runs it (a real subprocess, the installed console script)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    assert out.stdout.strip().splitlines() == ["kernelbench/level2/4_X\tlevel 2\tX", "1 task"]


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


@pytest.mark.slow
def test_baseline_without_a_gpu_says_so(tmp_path):
    out = cudaforge("baseline", "suite=tiny", f"hydra.run.dir={tmp_path}")
    assert out.returncode == 2 and "no GPU visible" in out.stderr


def test_usage_and_unknown_subcommand():
    assert "subcommands:" in cudaforge("--help").stdout
    out = cudaforge("frobnicate")
    assert out.returncode == 2 and "unknown subcommand" in out.stderr
    assert "say `list`, `audit`, `diff` or `pin`" in cudaforge("tasks").stderr


@pytest.mark.slow
def test_profile_without_a_gpu_reports_the_roofline(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    out = cudaforge(
        "profile",
        "suite=tiny",
        "task=tiny/level1/3_MatmulBiasReLU",
        "candidate=benchmarks/candidates/cuda_matmul_bias_relu.py",
        f"output={tmp_path / 'p.json'}",
    )
    assert out.returncode == 0, out.stderr
    assert "profile unavailable (cudaforge24)" in out.stdout and "3.355e+07 FLOP" in out.stdout
    assert '"status": "unavailable"' in (tmp_path / "p.json").read_text()
    missing = cudaforge("profile", "task=tiny/level1/1_ReLU", f"candidate={tmp_path / 'none.py'}")
    assert missing.returncode == 2 and "no such candidate" in missing.stderr


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["run", "suite=tinyy"],
            "cudaforge run: error: no option 'tinyy' in config group suite; did you mean suite=tiny? "
            "(options: file, kernelbench, kernelbench_dstar, kernelbench_hf, main, sim20, tiny)",
        ),
        (
            ["run", "strategy.max_roundz=3"],
            "cudaforge run: error: no config key 'strategy.max_roundz'; did you mean "
            "strategy.max_rounds or strategy.memory_rounds or strategy.round_cap? (docs/configuration.md lists every key)",
        ),
        (["run", "strategy.max_rounds=0"], "cudaforge run: error: strategy.max_rounds=0: must be at least 1"),
        (["run", "concurrency=0"], "cudaforge run: error: concurrency=0: must be at least 1"),
        (
            ["run", "strategy.max_dollars=-1"],
            "cudaforge run: error: strategy.max_dollars=-1.0: must be positive, or null for no budget",
        ),
        (
            ["run", "strategy.max_rounds=abc"],
            "cudaforge run: error: strategy.max_rounds=abc: Value 'abc' of type 'str' "
            "could not be converted to Integer",
        ),
        (
            ["tasks", "list", "experiment=cudaforge_tabel1"],
            "cudaforge tasks list: error: no option 'cudaforge_tabel1' in "
            "config group experiment; did you mean experiment=cudaforge_table1 or experiment=cudaforge_dstar or "
            "experiment=cudaforge_strategies? (options: cudaforge_coder_models, cudaforge_dstar, cudaforge_gpus, "
            "cudaforge_judge_models, cudaforge_metric_sets, cudaforge_rounds, cudaforge_strategies, cudaforge_table1, "
            "demo_strategies, offline_demo, skill_with, skill_without)",
        ),
        (
            ["eval", "task=1_GELUU", "candidate=x.py"],
            "cudaforge eval: error: no task '1_GELUU' in any bundled suite; did "
            "you mean main/level1/1_GELU, sim20/level1/10_ELU, sim20/level1/1_ReLU?",
        ),
    ],
)
def test_usage_errors_are_one_line_with_the_nearest_names_and_leave_nothing(args, line, tmp_path, capsys, monkeypatch):
    from cudaforge.cli import main

    monkeypatch.chdir(tmp_path)
    code = main([*args, *([f"hydra.run.dir={tmp_path / 'run'}"] if args[0] == "run" else [])])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip() == line
    assert "schema" not in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no run directory, no outputs/


@pytest.mark.slow
def test_a_run_the_demo_cannot_answer_is_refused_before_it_starts(tmp_path):
    out = cudaforge("run", "suite=main", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 2
    assert "demo" in out.stderr and "main/level1/1_GELU" in out.stderr and len(out.stderr.strip().splitlines()) <= 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_model_without_its_key_is_refused_at_once(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = cudaforge("run", "coder=openai_o3", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 2
    assert "OPENAI_API_KEY" in out.stderr and "openai/o3" in out.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [
        "run",
        "eval",
        "profile",
        "baseline",
        "report",
        "export",
        "skill distill",
        "skill compare",
        "tasks list",
        "tasks audit",
        "tasks diff",
        "doctor",
        "cache",
        "rescore",
        "merge",
        "plan",
        "repair",
    ],
)
def test_each_subcommand_has_a_short_help_of_its_own(command, capsys):
    from cudaforge.cli import main

    code = main([*command.split(), "--help"])
    stdout = capsys.readouterr().out
    lines = stdout.strip().splitlines()
    assert code == 0 and lines[0].startswith(f"usage: cudaforge {command}")
    assert len(lines) < 40 and "examples:" in stdout
    assert sum(line.startswith(f"  cudaforge {command.split()[0]}") for line in lines) >= 3


@pytest.mark.slow
def test_eval_takes_a_suffix_from_any_suite_and_a_problem_file(tmp_path):
    import shutil

    from conftest import REPO

    candidate = REPO / "benchmarks" / "candidates" / "triton_relu.py"
    quick = "eval.held_out_shapes=false"  # which task a name finds is the question here (tests/test_held_out.py)
    by_suffix = cudaforge("eval", "task=1_ReLU", f"candidate={candidate}", quick, cwd=tmp_path)
    assert by_suffix.returncode == 0, by_suffix.stderr
    assert "tiny/level1/1_ReLU" in by_suffix.stdout and "CORRECT" in by_suffix.stdout
    problem = tmp_path / "my_relu.py"
    shutil.copy(REPO / "benchmarks" / "suites" / "tiny" / "level1" / "1_ReLU.py", problem)
    by_path = cudaforge("eval", f"task={problem}", f"candidate={candidate}", quick, cwd=tmp_path)
    assert by_path.returncode == 0, by_path.stderr
    assert "CORRECT" in by_path.stdout and "my_relu" in by_path.stdout
    missing = cudaforge("eval", f"task={tmp_path / 'none.py'}", f"candidate={candidate}", cwd=tmp_path)
    assert missing.returncode == 2 and "no such problem file" in missing.stderr


@pytest.mark.slow
def test_doctor_says_what_stops_a_run(monkeypatch, tmp_path):
    ok = cudaforge("doctor")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    names = {line[3:13].strip() for line in ok.stdout.splitlines()[1:-1]}
    assert {"gpu", "nvcc", "ncu", "triton", "sandbox", "models", "cache"} <= names
    assert ok.stdout.strip().endswith("nothing stops a run")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    bad = cudaforge("doctor", "judge=openai_o3")
    assert bad.returncode == 1
    assert any(line.startswith("x") and "OPENAI_API_KEY" in line for line in bad.stdout.splitlines())
    # a paid run is judged by what this machine can measure for it, before it spends anything
    import shutil

    import torch

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    paid = cudaforge("doctor", "coder=openai_o3", "judge=openai_o3", "strategy.max_dollars=1")
    fit = [line for line in paid.stdout.splitlines() if line[3:13].strip() == "fit"]
    if not torch.cuda.is_available():
        assert paid.returncode == 1 and fit[0].startswith("x") and "no GPU here" in fit[0], paid.stdout
        assert any(
            "- " == line[:2] and "no GPU here" in line and "offline demo" in line for line in ok.stdout.splitlines()
        )  # the free demo: said, not blocking
        # `cudaforge run` with the same settings: the same verdict, refused before any model call (issue 53)
        run = cudaforge(
            "run", "coder=openai_o3", "judge=openai_o3", "strategy.max_dollars=1", f"hydra.run.dir={tmp_path / 'r'}"
        )
        refusal = [line for line in run.stderr.splitlines() if "no GPU here" in line]
        assert run.returncode == 2 and len(refusal) == 1 and fit[0][13:] in refusal[0], run.stderr
        assert not (tmp_path / "r" / "ledger.jsonl").exists() or not (tmp_path / "r" / "ledger.jsonl").read_text()
        # a CPU run on purpose: said, not blocking, for both
        meant = cudaforge("doctor", "coder=openai_o3", "judge=openai_o3", "strategy.max_dollars=1", "eval.device=cpu")
        fit = [line for line in meant.stdout.splitlines() if line[3:13].strip() == "fit"]
        assert meant.returncode == 0 and fit[0].startswith("- ") and "eval.device=cpu" in fit[0], meant.stdout
    elif not shutil.which("ncu"):
        assert paid.returncode == 1 and "no Nsight Compute" in fit[0]
    else:
        assert fit[0].startswith("ok") and paid.returncode == 0, paid.stdout


def test_sweeps_are_not_refused_by_the_override_check():
    from cudaforge.cli.checks import check_overrides
    from cudaforge.config import register_configs
    from cudaforge.paths import CONFIG_DIR

    register_configs()
    assert check_overrides(["experiment=cudaforge_strategies", "suite.levels=[1]"], CONFIG_DIR, []) is None
    said = check_overrides(["strategy=one_shot,self_refine"], CONFIG_DIR, [])
    assert said == (
        "strategy=one_shot,self_refine: several values are a sweep: add -m "
        "(cudaforge run -m strategy=one_shot,self_refine)"
    )
    # a guard's policy named as it was before the policies were nested under their guard
    said = check_overrides(["eval.guard_hidden_work=report"], CONFIG_DIR, [])
    assert said == "eval.guard_hidden_work is now eval.guards.hidden_work (eval.guards.hidden_work=report)"
    assert check_overrides(["eval.guards.hidden_work=report"], CONFIG_DIR, []) is None


def test_tasks_diff_lists_the_problems_two_sets_hold_differently(kernelbench_root, tmp_path, capsys):
    import shutil

    from conftest import problem_source

    from cudaforge.cli import main

    other = tmp_path / "other"
    shutil.copytree(kernelbench_root, other)
    assert main(["tasks", "diff", str(kernelbench_root), str(other)]) == 0
    assert capsys.readouterr().out.strip().endswith("3 problems the same, 0 changed, 0 only in A, 0 only in B")
    (other / "level1" / "2_Relu_b.py").write_text(problem_source(3.0))  # another reference under the same number
    (other / "level2" / "1_Relu_fused.py").rename(other / "level2" / "1_Relu_renamed.py")
    (other / "level1" / "1_Relu_a.py").unlink()
    (other / "level1" / "7_New.py").write_text(problem_source(7.0))
    assert main(["tasks", "diff", str(kernelbench_root), str(other)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()[2:]
    assert [" ".join(line.split()[: 2 if line.startswith("changed") else 4]) for line in lines[:-1]] == [
        "only in A level1/1_Relu_a",
        "changed level1/2_Relu_b",
        "only in B level1/7_New",
        "changed level2/1_Relu_fused",
    ]
    assert "Relu_fused -> Relu_renamed" in lines[3]
    assert lines[-1] == "0 problems the same, 2 changed, 1 only in A, 1 only in B"
    assert main(["tasks", "diff", str(kernelbench_root), str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_directory_with_a_corrupt_database_is_one_line_and_left_as_it_is(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoints.sqlite").write_bytes(b"not a database" * 512)
    out = cudaforge("run", f"hydra.run.dir={run}", cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    [line] = [ln for ln in out.stderr.splitlines() if ln.startswith("cudaforge run: error:")]
    assert (
        "checkpoints.sqlite is not a readable SQLite database" in line
        and f"cudaforge repair {tmp_path / 'run'}" in line
    )
    assert (run / "checkpoints.sqlite").read_bytes() == b"not a database" * 512


def test_a_run_asking_for_a_language_this_machine_lacks_stops_before_it_starts(tmp_path, capsys, monkeypatch):
    """strategy.backend=tilelang without the tilelang package: one line naming the package and how to install it
    (run where tilelang is installed, the same command gets past this check)."""
    from cudaforge import languages
    from cudaforge.cli import main

    monkeypatch.setattr(languages, "missing_modules", lambda name: list(languages.get(name).modules))
    monkeypatch.chdir(tmp_path)
    code = main(["run", "strategy.backend=tilelang", f"hydra.run.dir={tmp_path / 'run'}"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == (
        "cudaforge run: error: strategy.backend=tilelang: TileLang kernels need the "
        "Python module tilelang, which this interpreter cannot import: pip install "
        "tilelang (tested with 0.1.15)"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_home_relative_root_works_as_the_docs_write_it(kernelbench_root, tmp_path):
    """The shell leaves `~` after `=` as it is; the CLI writes the home folder out before Hydra parses it."""
    env = {**os.environ, "HOME": str(kernelbench_root.parent)}
    out = subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", "tasks", "list", "suite=kernelbench", "suite.root=~/KernelBench"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "1_Relu_a" in out.stdout and "LexerNoViableAlt" not in out.stderr


def test_a_mapping_key_is_set_as_written(tmp_path):
    """`strategy.templates={coder/first_attempt: ...}` (docs/agents.md) without Hydra's '++': the schema's mapping
    keys are found from the schemas, not listed by hand."""
    from cudaforge.config import mapping_keys

    assert {"strategy.templates", "skill.categories"} <= mapping_keys()
    out = cudaforge("run", "strategy.templates={coder/first_attempt: coder/optimize}", "--cfg", "job", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "coder/first_attempt: coder/optimize" in out.stdout


def test_each_command_is_one_module_with_its_help_beside_it():
    """``cudaforge/cli/``: a module per command holding ``HELP`` and ``main``; every command of the usage page has
    one; Hydra's flags are listed in one place only (the one Hydra-argument helper)."""
    import re

    import cudaforge.cli as cli

    for command in cli.COMMANDS:
        mod = cli.module(command)
        assert callable(mod.main) and mod.HELP, command
        pages = mod.HELP if isinstance(mod.HELP, dict) else {command: mod.HELP}
        for name, page in pages.items():
            assert page.startswith(f"usage: cudaforge {name}"), name
    listed = set(re.findall(r"^  ([a-z]+)", cli.USAGE, re.M))
    assert listed == set(cli.COMMANDS)
    package = Path(cli.__file__).parent.parent
    holders = [p for p in package.rglob("*.py") if '"--experimental-rerun"' in p.read_text()]
    assert [p.relative_to(package).as_posix() for p in holders] == ["cli/hydra_args.py"]
