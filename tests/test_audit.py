"""The task audit catches deliberately degenerate tasks, and our suites pass it."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest

from cudaforge.tasks import load_suite, parse_problem, selection
from cudaforge.tasks.audit import audit_tasks, summary_line

HEADER = "import torch\nimport torch.nn as nn\n"
INPUTS = "\ndef get_inputs():\n    return [torch.randn(32, 64)]\n\ndef get_init_inputs():\n    return []\n"


def task_from(forward: str, init: str = "", name: str = "T", extra: str = ""):
    body = textwrap.indent(textwrap.dedent(init), "        ") if init else "        pass\n"
    source = (
        HEADER
        + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + body
        + "\n    def forward(self, x):\n"
        + textwrap.indent(textwrap.dedent(forward), "        ")
        + INPUTS
        + extra
    )
    return parse_problem(source, suite="bad", level=1, problem_id=len(name), name=name, path=f"<{name}>")


CPU = SimpleNamespace(device="cpu", cpu_variant="small", timeout_s=60, min_reference_ms=0.0, atol=1e-4, rtol=1e-4)

DEGENERATE = {
    "near_zero": task_from("return x * 1e-7\n"),
    "near_constant": task_from("return torch.ones_like(x) * 3.0 + x * 1e-9\n"),
    "input_independent": task_from("return self.w.expand(32, 64) + 0 * x\n", init="self.w = nn.Parameter(torch.randn(1, 64))\n"),
    "weight_independent": task_from("return torch.relu(x)\n", init="self.lin = nn.Linear(64, 64)\n"),
    "non_finite": task_from("return torch.log(x)\n"),
    "nondeterministic": task_from("import random\nreturn x + random.random()\n"),
}


@pytest.mark.slow
def test_audit_flags_each_degenerate_task():
    audits = audit_tasks(list(DEGENERATE.values()), CPU)
    for (expected, _), audit in zip(DEGENERATE.items(), audits):
        checks = {f["check"] for f in audit.findings}
        assert expected in checks, (expected, audit.findings)
        assert audit.line().startswith("FLAG")
    assert summary_line(audits).endswith("6 flagged")


def test_audit_reports_a_crashing_reference():
    broken = task_from("raise RuntimeError('boom')\n", name="Broken")
    (audit,) = audit_tasks([broken], CPU)
    assert audit.findings[0]["check"] == "reference_error" and "boom" in audit.findings[0]["detail"]


@pytest.mark.slow
def test_tiny_suite_passes_its_own_audit():
    tasks = load_suite(selection("tiny"))
    audits = audit_tasks(tasks, CPU)
    assert all(a.ok for a in audits), [a.line() for a in audits]
    assert all(a.device == "cpu" and a.variant == "small" for a in audits)
    assert "scaled down" in summary_line(audits)
