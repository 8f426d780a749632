"""Shared fixtures. Environment set before anything imports litellm or wandb."""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

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


def pytest_configure(config: pytest.Config) -> None:
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
