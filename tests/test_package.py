"""cudaforge as an installed package: the wheel holds its data and the installed command runs from any directory.

The wheel is built from this checkout (``pip wheel --no-build-isolation``), installed with ``--target`` into a
temporary folder outside the repository, and run from another temporary folder with that folder first on
``PYTHONPATH`` (so the checkout's own package cannot be the one imported; the test checks which one was).
``.ci/wheel`` does the same in a fresh virtual environment, with the quickstart's main job.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RESOURCES = REPO / "cudaforge" / "resources"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source") / "cudaforge"  # setuptools builds in <source>/build: not in the tree
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            ".whl",
            ".dev",
            "build",
            "dist",
            "outputs",
            "benchmarks",
            "tests",
            "*.egg-info",
            "__pycache__",
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(out.glob("cudaforge-*.whl"))
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return wheel, target


def _cli(target: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(target), "WANDB_MODE": "disabled", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_wheel_holds_every_data_file(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {
        f"cudaforge/{p.relative_to(REPO / 'cudaforge').as_posix()}"
        for p in RESOURCES.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert wanted and not wanted - names, sorted(wanted - names)[:10]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    for must in (
        "configs/cudaforge.yaml",
        "agents/coder/first_attempt.j2",
        "suites/tiny",
        "demo/tiny_transcript.yaml",
        "published/cudaforge.yaml",
        "candidates/triton_relu.py",
        "prices/overrides.yaml",
    ):
        assert any(n.startswith(f"cudaforge/resources/{must}") for n in names), must
    licence = [n for n in names if n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE")]
    assert licence and b"Apache License" in zipfile.ZipFile(wheel).read(licence[0])  # the text the metadata names
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    assert b"License-Expression: Apache-2.0" in zipfile.ZipFile(wheel).read(metadata)  # SPDX, not a deprecated table


def test_the_installed_command_runs_from_any_directory(installed, tmp_path):
    _, target = installed
    version = _cli(target, tmp_path, "--version")
    assert version.returncode == 0 and str(target) in version.stdout, version.stdout + version.stderr
    listed = _cli(target, tmp_path, "tasks", "list", "suite=main")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip().splitlines()[-1] == "30 tasks"
    config = _cli(target, tmp_path, "run", "--cfg", "job", "experiment=cudaforge_table1")
    assert config.returncode == 0, config.stderr
    assert "cudaforge_table1" in config.stdout or "timing_lead_us: 0" in config.stdout
    assert not (tmp_path / "outputs").exists()  # printing the config made no run directory


def test_a_users_config_dir_adds_experiments(installed, tmp_path):
    _, target = installed
    mine = tmp_path / "myconf" / "experiment"
    mine.mkdir(parents=True)
    (mine / "my_sweep.yaml").write_text(
        textwrap.dedent("""\
        # @package _global_
        strategy:
          max_rounds: 3
        """)
    )
    shown = _cli(
        target, tmp_path, "run", "--config-dir", str(tmp_path / "myconf"), "experiment=my_sweep", "--cfg", "job"
    )
    assert shown.returncode == 0, shown.stderr
    assert "max_rounds: 3" in shown.stdout


def test_building_leaves_nothing_in_the_checkout(installed):
    """``python -m build`` would find a ``build/`` folder in the tree and import it instead of the build tool."""
    assert not (REPO / "build").exists() and not (REPO / "dist").exists()
