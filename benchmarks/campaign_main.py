"""A campaign over the 30-task `main` suite with scripted agents, to exercise run state on a GPU box.

    python benchmarks/campaign_main.py RUN_DIR [cudaforge run overrides ...]

Runs ``cudaforge run suite=main`` in this process with both agents answered by the scripted model
``scripted/campaign`` through the real litellm path (no provider, $0). The Coder's replies reuse the bundled
candidates (`benchmarks/candidates/`, the tasks `compare_checkouts.PAIRS` pairs them with); a task with no
bundled candidate gets the reference's own code (its class renamed) with its output passed through a Triton copy kernel (correct, not
faster; the evaluator's guards may reject it as library work, which is the honest verdict). The Judge answers
every round with a fixed JSON in the keys our templates ask for. The replies depend only on the task and the
prompt's role and mode, so a killed run resumed with the same command replays the same answers.

The process's exit status is the run's. Used by the H200 call that kills such a run mid-way and resumes it
(benchmarks/results/2026-12-03_h200/README.md).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

from compare_checkouts import PAIRS  # noqa: E402

MODEL = "scripted/campaign"
TASK_IN_PROMPT = re.compile(r"task `([^`]+)`")

COPY_TAIL = '''

import triton
import triton.language as tl


@triton.jit
def _campaign_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(_Computation):
    """The reference's computation, its output written by a Triton copy kernel."""

    def forward(self, *args):
        out = super().forward(*args)
        if not isinstance(out, torch.Tensor) or out.numel() == 0:
            return out
        out = out.contiguous()
        y = torch.empty_like(out)
        n = out.numel()
        _campaign_copy[(triton.cdiv(n, 1024),)](out, y, n, BLOCK=1024)
        return y
'''

JUDGE = {
    "correction": {
        "critical_issue": "the kernel's result differs from the reference or was rejected",
        "why_it_matters": "an incorrect kernel cannot be kept",
        "minimal_fix_hint": "compute exactly what the reference computes",
    },
    "optimization": {
        "bottleneck": "memory bandwidth",
        "optimisation_method": "none proposed by this script",
        "modification_plan": "keep the kernel as it is",
        "expected_effect": "none",
    },
}


def candidate_for(task_id: str) -> str | None:
    """The bundled candidate paired with this task of the main suite, if any."""
    for suite, pair_task, file in PAIRS:
        if suite == "main" and task_id == f"main/{pair_task}":
            return (HERE / "candidates" / file).read_text()
    return None


def coder_reply(task_id: str) -> str:
    """The Coder's kernel for a task: the bundled candidate, else the reference with a Triton copy of its output."""
    source = candidate_for(task_id)
    if source is None:
        level, name = task_id.split("/")[-2:]
        reference = (HERE / "suites" / "main" / level / f"{name}.py").read_text()
        source = re.sub(r"^class Model\(", "class _Computation(", reference, flags=re.M) + COPY_TAIL
    return f"Here is the kernel.\n```python\n{source}```"


def reply(messages: list[dict], coder: Callable[[str], str] | None = None) -> str:
    """The scripted answer to a prompt: the Judge's fixed JSON, or ``coder(task_id)`` (default ``coder_reply``)."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = next((m["content"] for m in messages if m["role"] == "user"), "")
    found = TASK_IN_PROMPT.search(user)
    if not found:
        raise LookupError("the prompt names no task")
    if "You are the Judge" in system:
        mode = "correction" if "critical_issue" in user else "optimization"
        return "Here is my analysis.\n```json\n" + json.dumps(JUDGE[mode], indent=2) + "\n```"
    return (coder or coder_reply)(found.group(1))


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-") or "=" in argv[0]:
        sys.exit(__doc__)
    from cudaforge.cli import main as cudaforge
    from cudaforge.llm.scripted import install_script

    install_script("campaign", reply)
    return cudaforge(
        [
            "run",
            "suite=main",
            f"coder.model={MODEL}",
            f"judge.model={MODEL}",
            "coder.input_cost_per_token=0",
            "coder.output_cost_per_token=0",
            "judge.input_cost_per_token=0",
            "judge.output_cost_per_token=0",
            "tracker=disabled",
            f"hydra.run.dir={argv[0]}",
            *argv[1:],
        ]
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
