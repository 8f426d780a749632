"""Shared fixtures. Environment set before anything imports litellm or wandb."""

from __future__ import annotations

import compileall
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("OMP_NUM_THREADS", "1")
"""One OpenMP thread in every process the tests start (the sandbox passes ``OMP_*`` on): two test workers on two cores,
each with a run whose verifier and candidate worker would otherwise each start a thread a core, spend CPU on threads
spinning while they wait for a core (issue 55; five slow tests of test_sweeps, test_exit_codes and test_infra_failures
with `-n 2` on this project's 2-core CPU machine, 2026-12-08: 171 CPU-s with torch's default, 153 with one thread).
What the tests check does not depend on it; a user's runs keep torch's own default."""

REPO = Path(__file__).resolve().parent.parent

PROBLEM = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale

        def forward(self, x):
            return torch.relu(x) * self.scale

    def get_inputs():
        return [torch.randn(8, 16)]

    def get_init_inputs():
        return [{scale}]
    """
)


def problem_source(scale: float = 2.0) -> str:
    """A valid small problem file's text."""
    return PROBLEM.format(scale=scale)


@pytest.fixture
def kernelbench_root(tmp_path: Path) -> Path:
    """A small KernelBench-layout directory: two levels, three problems, one helper file."""
    root = tmp_path / "KernelBench"
    for level, pid, name in [(1, 1, "Relu_a"), (1, 2, "Relu_b"), (2, 1, "Relu_fused")]:
        folder = root / f"level{level}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{pid}_{name}.py").write_text(problem_source(pid))
    (root / "level1" / "__init__.py").write_text("")
    return root


@pytest.fixture
def repo() -> Path:
    """The checkout's root."""
    return REPO


@pytest.fixture(scope="session", autouse=True)
def session_tmpdir(tmp_path_factory: pytest.TempPathFactory):
    """One temporary folder for everything this session's processes make with ``tempfile`` (the evaluator's
    ``cudaforge-*`` working and scratch directories, also those a killed process leaves) and for the profile
    cache (not the user's ~/.cache), removed at the end; other sessions' folders are never touched. pytest's own
    ``tmp_path`` folders stay where pytest keeps them."""
    tmp_path_factory.getbasetemp()  # fixed before tempfile's folder changes
    root = tempfile.mkdtemp(prefix="cudaforge-tests-")
    os.chmod(root, 0o755)  # a sandboxed worker (another uid) must reach its scratch directory inside
    env = {"TMPDIR": root, "CUDAFORGE_PROFILE_CACHE": os.path.join(root, "profile-cache")}
    saved_env, saved_dir = {name: os.environ.get(name) for name in env}, tempfile.tempdir
    os.environ.update(env)
    tempfile.tempdir = root
    try:
        yield Path(root)
    finally:
        tempfile.tempdir = saved_dir
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(root, ignore_errors=True)


def _gpu_visible() -> bool:
    """Whether torch sees a CUDA GPU (False where torch is missing or is a CPU build)."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


LONGEST_FIRST = (
    "test_doc_commands.py",
    "test_readme_commands.py",
    "test_fault_injection.py",
    "test_sandbox.py",
    "test_report_seeds.py",
    "test_campaign.py",
    "test_campaign_ray.py",
    "test_build.py",
    "test_resume.py",
    "test_own_model.py",
    "test_cli.py",
    "test_plan.py",
    "test_guards.py",
    "test_fault_benchmark.py",
    "test_infra_failures.py",
    "test_sweeps.py",
)
"""The test files that take longest in the slow step (CI's ``--durations``), longest first: they are handed to the
workers first. ``--dist loadscope`` hands out whole files, and xdist's own order (the files with the most tests
first) left the long files of one or two tests to the end, where one worker ran them while the other had nothing
left to do (issue 55). The other files follow in xdist's order."""


def _compile_the_checkout() -> None:
    """Byte-compile the package, the tests and the benchmarks once, before any worker starts. Every test that runs
    ``cudaforge`` starts Python processes (the CLI, the verifier, the sandboxed worker, the held-out shapes' child),
    and each one compiled the package's sources afresh where ``PYTHONDONTWRITEBYTECODE`` is set (as on the CI
    machines) or where it may not write: with the bytecode already beside the sources they read it (importing the CLI
    and the verifier: 2.8 s without it, 2.2-2.4 s with it, 2-core CPU, 2026-12-08; issue 55). The evaluator's own processes keep ``PYTHONDONTWRITEBYTECODE=1``: they read, never
    write."""
    for folder in ("cudaforge", "tests", "benchmarks"):
        compileall.compile_dir(REPO / folder, quiet=2, workers=1)


sys.dont_write_bytecode = False  # pytest keeps the rewritten test modules for the next step of the same checkout


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist), once
        _compile_the_checkout()
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # the order of pytest_collection_modifyitems stands


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected: the counts are of the tests that run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``gpu`` marker, handled once: a test marked ``gpu`` is skipped where no CUDA GPU is visible, and runs
    (and must pass) where one is. Nothing else in the tests decides this. Then the files in the order that xdist
    hands them out: ``LONGEST_FIRST`` where their slow tests run (so the fast step keeps xdist's order), then the
    others by their number of tests, most first, as xdist orders them (each file's tests keep their order)."""
    marked = [item for item in items if item.get_closest_marker("gpu") is not None]
    if marked and not _gpu_visible():
        skip = pytest.mark.skip(reason="needs a CUDA GPU (marked gpu)")
        for item in marked:
            item.add_marker(skip)
    files = [item.nodeid.split("::", 1)[0] for item in items]
    counts = {name: files.count(name) for name in set(files)}
    slow = {name for item, name in zip(items, files) if item.get_closest_marker("slow") is not None}
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    order = {
        item.nodeid: (rank.get(Path(name).name, len(rank)) if name in slow else len(rank), -counts[name])
        for item, name in zip(items, files)
    }
    items.sort(key=lambda item: order[item.nodeid])  # stable: each file's tests stay in their order


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With ``$CUDAFORGE_TEST_LOG`` set, append each test's outcome, duration and failure text to that file
    as it finishes (scripts/gpu_check.py sets it, so a check killed mid-run keeps every failure's details)."""
    path = os.environ.get("CUDAFORGE_TEST_LOG")
    if not path or (report.when != "call" and report.passed):
        return
    with open(path, "a") as log:
        log.write(f"{report.nodeid} [{report.when}] {report.outcome} {report.duration:.1f}s\n")
        if report.failed:
            log.write(textwrap.indent(report.longreprtext[-6000:], "    ") + "\n")


def o3_config(**strategy):
    """The default config with OpenAI o3 as both agents, and ``strategy`` fields set."""
    from cudaforge.config import CudaforgeConfig

    cfg = CudaforgeConfig()
    cfg.coder.model = cfg.judge.model = "openai/o3"
    for name, value in strategy.items():
        setattr(cfg.strategy, name, value)
    return cfg


QUICKSTART_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": "disabled"}
"""What the quickstart's run adds to the environment (no API key is passed on: the offline default needs none)."""


@pytest.fixture(scope="session")
def quickstart_master(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The README quickstart's ``cudaforge run``, as written (no argument, in a fresh folder, the offline default),
    made once for the whole test session: under xdist the first worker that asks runs it and the others wait on a
    lock, then read the same folder. Returns its run directory and its standard output. Nothing may change this
    folder: a test takes a copy (``quickstart_copy``). It cost two runs of about two minutes each in CI when
    tests/test_readme_commands.py and tests/test_doc_commands.py each made their own (issue 55)."""
    import fcntl
    import subprocess

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the session's folder, all workers'
    folder, stdout = shared / "quickstart", shared / "quickstart.stdout"
    with open(shared / "quickstart.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stdout.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
            env.update(QUICKSTART_ENV)
            out = subprocess.run(
                [sys.executable, "-m", "cudaforge.cli", "run"],
                capture_output=True,
                text=True,
                cwd=folder,
                env=env,
                timeout=900,
            )
            assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
            stdout.write_text(out.stdout)
    runs = sorted((folder / "outputs" / "runs").iterdir())
    assert len(runs) == 1, runs
    return runs[0], stdout.read_text()


def quickstart_copy(master: tuple[Path, str], where: Path) -> Path:
    """A copy of the quickstart's run directory at ``where`` (a test's own, to read or change)."""
    shutil.copytree(master[0], where)
    return where
