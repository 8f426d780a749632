"""Shared fixtures. Environment set before anything imports litellm or wandb."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

REPO = Path(__file__).resolve().parent.parent

PROBLEM = textwrap.dedent(
    '''
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
    '''
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
