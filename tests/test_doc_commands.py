"""Every `cudaforge ...` command written in docs/*.md (in code blocks) and in each subcommand's `--help` examples
runs as written on a CPU machine with no key and no network.

Placeholders are filled with real things: RUN/RUN_DIR/RUN_A/... and dated run paths with the quickstart's own run
directory (a sweep folder with a small real sweep), PATH and KernelBench checkouts with a KernelBench-layout folder
(`~` and `$HOME` point at a home made for the test), files a command names (`k.py`, `my_gelu.py`, ...) with bundled
candidates. A command then either works (exit 0; a run or an evaluation may also exit 1, its verdict), or refuses in
one clear line with status 2 because this machine lacks what it needs (an API key, a GPU, a Ray cluster or a
scheduler, a server); a traceback or any other failure fails the test. A command written for a model server on this
machine (docs/own-model.md) is run against the stand-in server on the port it names.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, problem_source, quickstart_copy

pytestmark = pytest.mark.slow

CANDIDATES = REPO / "benchmarks" / "candidates"


def doc_commands() -> list[tuple[str, str]]:
    """(where, command) for each command line of the docs' code blocks (continuations joined)."""
    found = []
    for path in sorted((REPO / "docs").glob("*.md")):
        for block in re.findall(r"```(?:bash|sh|console)?\n(.*?)```", path.read_text(), re.S):
            lines = block.replace("\\\n", " ").splitlines()
            for line in lines:
                line = re.sub(r"\s+#.*$", "", line.strip())
                if line.startswith("cudaforge ") and ": error:" not in line:
                    found.append((path.name, line))
    return found


def help_commands() -> list[tuple[str, str]]:
    from cudaforge.cli import help_texts

    found = []
    for name, text in help_texts().items():
        if "examples:" in text:
            for line in text.split("examples:", 1)[1].split("\n\n", 1)[0].splitlines():
                line = re.sub(r"\s+#.*$", "", line.strip())
                if line.startswith("cudaforge "):
                    found.append((f"cudaforge {name} --help", line))
    return found


SYNOPSIS = re.compile(r"\[|\|| \.\.\. |\.\.\.$")
"""A usage synopsis, not a command (`[RUN_DIR ...]`, `format=sft|trajectories`, `shard_1 ... out=`)."""
COMMANDS = [
    c
    for c in dict.fromkeys(doc_commands() + help_commands())
    if not SYNOPSIS.search(
        c[1]
        .replace("[1]", "")
        .replace("[1,2]", "")
        .replace("[cudaforge_strategies]", "")
        .replace("[cudaforge_table1]", "")
        .replace("[*Norm*]", "")
    )
]

REFUSALS = (
    "pip install",
    "offline demo",
    "does not cover",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "needs a GPU",
    "no GPU",
    "not answering",
    "Ray",
    "slurm",
    "launcher",
    "HOSTED_VLLM_API_KEY",
    "nodename nor servname",
    "Name or service not known",
    "suite.allow_other_problem_set",
    "agents.authors_root",
)  # no copy of the authors' KernelBench or repository
"""What a clean refusal may be about on this machine."""
NO_HELD_OUT = "eval.held_out_shapes=false"
"""Added to a documented run that does not name them: the held-out shapes are checked after a task's loop, and their
failure never changes a run's exit status or prints a traceback (it is kept in the task's result), which is all this
test asks of a command; the quickstart's run here, tests/test_readme_commands.py and tests/test_held_out.py check
them."""


@pytest.fixture(scope="module")
def world(tmp_path_factory, quickstart_master):
    """A home with a KernelBench checkout, the quickstart's run, a small sweep and the files commands name."""
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", WANDB_MODE="disabled", HOME=str(home), CUDA_VISIBLE_DEVICES="")
    kb = home / "KernelBench" / "KernelBench"
    for level, pid, name in [(1, 1, "Relu_a"), (1, 2, "Relu_b"), (2, 1, "Relu_fused")]:
        (kb / f"level{level}").mkdir(parents=True, exist_ok=True)
        (kb / f"level{level}" / f"{pid}_{name}.py").write_text(problem_source(pid))
    for pid in range(1, 30):  # 32 tasks in all: the campaign docs split a suite into 32 shards
        (kb / "level3").mkdir(exist_ok=True)
        (kb / "level3" / f"{pid}_Op{pid}.py").write_text(problem_source(pid))
    for other in ("KernelBench-2024/KernelBench", "CudaForge/KernelBench"):
        shutil.copytree(kb, home / other)
    for name in ("benchmarks", "cudaforge"):  # the --help examples name files of the checkout, relative to it
        (home / name).symlink_to(REPO / name)
    # the quickstart's run (conftest's, made once for the session and read by tests/test_readme_commands.py too)
    quickstart_copy(quickstart_master, home / "outputs" / "runs" / "quick")
    sweep = home / "outputs" / "multirun" / "sweep"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            "run",
            "-m",
            "strategy=cudaforge,one_shot",
            "tracker=disabled",
            NO_HELD_OUT,  # the quickstart's run has them, for the commands that read them
            "suite.first_n=1",  # runs of one task each: what the commands given a sweep or a second run read
            f"hydra.sweep.dir={sweep}",
        ],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode in (0, 1) and len([p for p in sweep.iterdir() if p.is_dir()]) == 2, out.stderr[-2000:]
    for name in ("k.py", "my_gelu.py", "my_op_kernel.py"):
        shutil.copy(CANDIDATES / "triton_relu.py", home / name)
    (home / "problems").mkdir()
    (home / "problems" / "my_op.py").write_text(problem_source(1))
    shutil.copytree(REPO / "cudaforge" / "resources" / "suites" / "main", home / "my_suite")
    (home / "my_prompts").mkdir()
    shutil.copy(REPO / "cudaforge/resources/agents/coder/first_attempt.j2", home / "my_prompts" / "terse.j2")
    audit = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            "tasks",
            "audit",
            "suite=kernelbench",
            f"suite.root={kb}",
            f"output={home / 'kernelbench_audit.json'}",
        ],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert audit.returncode in (0, 1) and (home / "kernelbench_audit.json").is_file(), audit.stderr[-2000:]
    (home / "my_configs" / "experiment").mkdir(parents=True)
    (home / "my_configs" / "experiment" / "MINE.yaml").write_text("# @package _global_\nstrategy:\n  max_rounds: 1\n")
    return home, env, home / "outputs/runs/quick", sweep, kb


def fill(command: str, home: Path, run: Path, sweep: Path, kb: Path, tmp: Path) -> str:
    text = command
    for pattern in (
        r"outputs/multirun/<date>/\*",
        r"outputs/multirun/2026-12-02_10-00-00/0_strategy-cudaforge",
        r"outputs/multirun/2026-12-02_10-00-00",
        r"\bSWEEP_DIR\b",
    ):
        text = re.sub(
            pattern,
            str(sweep / "*")
            if "*" in pattern
            else (
                str(next(p for p in sorted(sweep.iterdir()) if p.is_dir())) if "0_strategy" in pattern else str(sweep)
            ),
            text,
        )
    for pattern in (
        r"outputs/runs/<rescore dir>",
        r"outputs/runs/<date>",
        r"outputs/runs/20\d\d-\d\d-\d\d_\d\d-\d\d-\d\d",
        r"outputs/runs/PILOT",
        r"outputs/runs/[AB]\b",
        r"\bOLD_RUN\b",
        r"runs/table1/merged",
        r"runs/table1/shard_3",
        r"runs/table1(?=\s|$)",
        r"\bRUN_(?:DIR|A|B|WITH)\b",
        r"\bRUN\b",
    ):
        text = re.sub(pattern, str(run), text)
    other = sorted(p for p in sweep.iterdir() if p.is_dir())[-1]  # a second run, where a command wants two
    text = re.sub(r"\bRUN_WITHOUT\b", str(other), text)
    for pattern in (
        r"PATH/TO/CudaForge/KernelBench",
        r"/shared/KernelBench/KernelBench",
        r"(?<![\w/~.])CudaForge/KernelBench",
        r"suite\.root=PATH\b",
    ):
        text = re.sub(pattern, ("suite.root=" if pattern.startswith("suite") else "") + str(kb), text)
    text = text.replace("campaign/shard_*", "campaign/shard_0 campaign/shard_1 campaign/shard_2")
    text = text.replace("out=campaign/merged", f"out={tmp / 'merged'}").replace(
        "out=outputs/runs/table1", f"out={tmp / 'merged'}"
    )
    text = re.sub(r"/nfs/[ab]/shard_\d", str(run), text)
    return text.replace("$SLURM_ARRAY_TASK_ID", "3").replace("$HOME", str(home))


@pytest.mark.parametrize("where, command", COMMANDS, ids=[f"{w}: {c[:80]}" for w, c in COMMANDS])
def test_each_documented_command_runs_as_written(where, command, world, tmp_path):
    home, env, run, sweep, kb = world
    text = fill(command, home, run, sweep, kb, tmp_path)
    args = []
    for word in shlex.split(text)[1:]:  # what a shell does: ~word to the home, globs to what they match
        word = str(home) + word[1:] if word == "~" or word.startswith("~/") else word
        args += sorted(glob.glob(word)) if "*" in word and "=" not in word and glob.glob(word) else [word]
    if args[:1] == ["merge"]:
        for shard in ("shard_0", "shard_1", "shard_2"):
            args = [str(run) if a == f"campaign/{shard}" else a for a in args]
    if args == ["run"]:
        return  # the quickstart's own command: conftest's quickstart_master runs it as written, and the world has it
    if args[:1] == ["rescore"]:
        # the sweep's first run (one task) for the quickstart's (three): the same command on a third of the kernels
        first = str(next(p for p in sorted(sweep.iterdir()) if p.is_dir()))
        args = [first if a == str(run) else a for a in args]
    if args[:2] == ["tasks", "audit"] and "suite=main" in args:
        args.append("suite.first_n=2")  # the whole suite on two CPU cores takes minutes; the command is the same
    if args[:1] == ["tasks"] and args[1:2] == ["audit"] and any(a.startswith("output=") for a in args):
        args = [f"output={tmp_path / 'audit.json'}" if a.startswith("output=") else a for a in args]
    if args[:1] == ["run"] and not any(a.startswith(("hydra.", "suite.shard", "suite.first_n")) for a in args):
        # one task, not the suite's three: the command composes, starts and finishes the same way (the world's
        # quickstart and sweep run whole suites, and tests/test_readme_commands.py the README's as written)
        args.append("suite.first_n=1")
    if args[:1] == ["run"] and not any("held_out" in a for a in args):
        args.append(NO_HELD_OUT)
    if args[:1] in (["run"], ["rescore"], ["baseline"]) and not any(a.startswith("hydra.") for a in args):
        args.append(f"hydra.run.dir={tmp_path / 'out'}" if "-m" not in args else f"hydra.sweep.dir={tmp_path / 'sw'}")
    if args[:1] == ["report"] and not any(a.startswith("report.out_dir") for a in args):
        args.append(f"report.out_dir={tmp_path / 'report'}")
    if args[:1] == ["export"] and not any(a.startswith("out_dir") for a in args):
        args.append(f"out_dir={tmp_path / 'export'}")
    if args[:2] == ["skill", "distill"] and not any(a.startswith("out=") for a in args):
        args.append(f"out={tmp_path / 'skill.md'}")
    if args[:2] == ["cache", "clear"]:
        env = {**env, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    served = re.search(r"coder\.api_base=http://localhost:(\d+)/v1 coder\.model=(\S+)", text)
    if served:
        sys.path.insert(0, str(REPO / "tests"))
        from standins.llm_server import StandInServer

        name = "NAME" if served.group(2) == "NAME" else served.group(2)
        with StandInServer(name, port=int(served.group(1))):
            out = subprocess.run(
                [sys.executable, "-m", "cudaforge.cli", *args],
                cwd=home,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
        said = f"{where}: {command}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
        if out.returncode == 2 and args[:1] == ["run"]:  # a model run on a machine without a GPU: refused, said once
            assert "no GPU here" in out.stderr and "eval.device=cpu" in out.stderr and "Traceback" not in out.stderr, (
                said
            )
            return
        assert out.returncode == 0, said
        return
    out = subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", *args], cwd=home, env=env, capture_output=True, text=True, timeout=900
    )
    said = f"{where}: {command}\n(as run: {' '.join(args)})\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    assert "Traceback" not in out.stderr, said
    if out.returncode == 2:
        last = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""
        assert last.startswith("cudaforge") and any(r in out.stderr for r in REFUSALS), said
        return
    verdicts = args[:1] in (
        ["run"],
        ["eval"],
        ["rescore"],
        ["merge"],
        ["doctor"],
        ["tasks"],
        ["profile"],
        ["integrate"],
    )  # integrate: 1 is its verdict, the patched model not correct (or nothing to patch)
    assert out.returncode == 0 or (verdicts and out.returncode in (1, 3)), said
