"""Every command of the README's "Main commands" table, run as written on the quickstart's own run directory.

Placeholders are filled in (RUN_DIR and outputs/runs/* by the quickstart's run, PATH by a small KernelBench-layout
folder); a command that needs what this machine lacks (an API key, a file that is not bundled) must refuse in one
clear line with exit status 2, never fail otherwise.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest
from conftest import QUICKSTART_ENV, REPO, quickstart_copy

pytestmark = pytest.mark.slow


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    table = text[text.index("## Main commands") :].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\| `(cudaforge [^`]+)` \|", table, re.M)]


NEEDS_A_KEY = {"OPENAI_API_KEY": "openai_o3"}
NOT_BUNDLED = {"level_1.parquet": "a Hugging Face export file", "campaign.address=auto": "a running Ray cluster"}


def _run(args: list[str], cwd, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=900
    )


@pytest.fixture(scope="module")
def quickstart_run(quickstart_master, tmp_path_factory):
    """The quickstart's `cudaforge run` (as the README says it, in a fresh directory: conftest's
    ``quickstart_master``, made once for the session), copied for this file's commands to read and change."""
    master, stdout = quickstart_master
    log = (master / "run.log").read_text()  # issue 53: run.log was empty in every run directory
    assert "run directory:" in log and "results:" in log and stdout.strip().splitlines()[-1] in log
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(QUICKSTART_ENV)
    return quickstart_copy(quickstart_master, tmp_path_factory.mktemp("quickstart") / master.name), env


def test_the_readme_lists_the_main_commands():
    commands = readme_commands()
    assert len(commands) >= 15 and "cudaforge run" in commands and "cudaforge doctor" in commands


@pytest.mark.parametrize("command", readme_commands())
def test_each_readme_command_works_on_the_quickstart_run(command, quickstart_run, kernelbench_root, tmp_path):
    run_dir, env = quickstart_run
    if command == "cudaforge run":
        return  # the quickstart_run fixture is this very command, run as written and checked there
    for marker, what in NOT_BUNDLED.items():
        if marker in command:
            args = shlex.split(command)[1:]
            run = args[0] == "run"  # a refused run leaves no run directory behind
            out = _run([*args, f"hydra.run.dir={tmp_path / 'refused'}"] if run else args, REPO, env)
            assert out.returncode == 2 and "Traceback" not in out.stderr, (what, out.stderr)
            assert out.stderr.strip().splitlines()[-1].startswith("cudaforge"), out.stderr
            assert not (run and (tmp_path / "refused").exists()), out.stderr
            return
    text = command.replace("outputs/runs/OLD", str(run_dir)).replace("RUN_DIR", str(run_dir))
    text = re.sub(r"outputs/runs/[AB]\b", str(run_dir), text).replace(
        "suite.root=PATH", f"suite.root={kernelbench_root}"
    )
    text = text.replace("SUBCOMMAND", "run")
    args = shlex.split(text)[1:]
    if args[:3] == ["tasks", "audit", "suite=main"]:
        args.append("suite.first_n=2")  # the whole suite on two CPU cores takes minutes; the command is the same
    if "suite=kernelbench_dstar" in args:  # PATH: a KernelBench-layout folder holding D*'s problem ids
        from conftest import problem_source

        from cudaforge.tasks.subsets import resolve_subset

        for level, ids in resolve_subset("cudaforge_dstar").items():
            for pid in ids:
                folder = kernelbench_root / f"level{level}"
                folder.mkdir(parents=True, exist_ok=True)
                if not list(folder.glob(f"{pid}_*.py")):
                    (folder / f"{pid}_Dstar{pid}.py").write_text(problem_source(pid))
    if args[:1] == ["export"]:
        args.append(f"out_dir={tmp_path / 'export'}")
    if args[:1] == ["report"]:
        args.append(f"report.out_dir={tmp_path / 'report'}")
    if args[:1] == ["run"] and "-m" in args:
        args.append(f"hydra.sweep.dir={tmp_path / 'sweep'}")  # not into the checkout's outputs/
        # six jobs of one task each: the sweep of seeds and strategies over the whole of tiny, and its report, are
        # tests/test_report_seeds.py's
        args.append("suite.first_n=1")
        # and no held-out shapes: their failure changes no exit status (it is kept in the task's result), and the
        # quickstart's run above and tests/test_report_seeds.py's sweep check them
        args.append("eval.held_out_shapes=false")
    if args[:1] == ["rescore"]:
        args.append(f"hydra.run.dir={tmp_path / 'rescore'}")
    if args[:1] == ["merge"]:
        args = [f"out={tmp_path / 'merged'}" if a.startswith("out=") else a for a in args]
    if args[:2] == ["skill", "distill"]:
        args.append(f"out={tmp_path / 'skill.md'}")
    out = _run(args, REPO, env)
    key = next((k for k, option in NEEDS_A_KEY.items() if option in command), None)
    if key:
        assert out.returncode == 2 and key in out.stderr and "Traceback" not in out.stderr, out.stderr
        return
    assert out.returncode == 0, f"{command}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    assert "Traceback" not in out.stderr
