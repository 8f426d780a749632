"""The task audit catches deliberately degenerate tasks, and our suites pass it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from cudaforge.tasks import load_suite, parse_problem, selection
from cudaforge.tasks.audit import AuditSeverity, TaskAudit, audit_tasks, read_report, summary_line, write_report
from cudaforge.tasks.loader import TaskError

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


CPU = SimpleNamespace(
    device="cpu",
    cpu_variant="small",
    timeout_s=60,
    min_reference_ms=0.0,
    atol=1e-4,
    rtol=1e-4,
    batch_size=16,
    cpu_workers=1,
)

DEGENERATE = {
    "near_zero": task_from("return x * 1e-7\n"),
    "near_constant": task_from("return torch.ones_like(x) * 3.0 + x * 1e-9\n"),
    "input_independent": task_from(
        "return self.w.expand(32, 64) + 0 * x\n", init="self.w = nn.Parameter(torch.randn(1, 64))\n"
    ),
    "weight_independent": task_from("return torch.relu(x)\n", init="self.lin = nn.Linear(64, 64)\n"),
    "non_finite": task_from("return torch.log(x)\n"),
    "nondeterministic": task_from("import random\nreturn x + random.random()\n"),
}


def test_audit_flags_each_degenerate_task_with_its_severity():
    # each call adds a little more (1e-6, 2e-6 ...): two runs on the same inputs always differ, within the tolerance
    unstable = task_from("self.calls = getattr(self, 'calls', 0) + 1\nreturn x + self.calls * 1e-6\n", name="Jitter")
    audits = audit_tasks([*DEGENERATE.values(), unstable], CPU)  # one warm child for all seven
    for (expected, _), audit in zip(DEGENERATE.items(), audits):
        checks = {f["check"] for f in audit.findings}
        assert expected in checks, (expected, audit.findings)
        assert audit.line().startswith("FLAG")
    by_check = {f["check"]: f for a in audits[:-1] for f in a.to_dict()["findings"]}
    assert {c: by_check[c]["severity"] for c in DEGENERATE} == {
        "near_zero": "hack_enabling",
        "near_constant": "hack_enabling",
        "input_independent": "hack_enabling",
        "weight_independent": "hack_enabling",
        "non_finite": "hack_enabling",
        "nondeterministic": "broken",
    }
    jitter = audits[-1]
    assert [f["check"] for f in jitter.findings] == ["nondeterministic"] and "within the tolerance" in jitter.line()
    assert jitter.severities() == {AuditSeverity.note} and not jitter.fails() and jitter.line().startswith("note")
    assert jitter.fails([AuditSeverity.note])
    assert summary_line(audits).endswith("6 flagged, 1 with notes only")


@pytest.mark.slow
def test_a_batch_survives_a_crash_a_hang_and_a_poisoned_process():
    fine = [task_from("return torch.relu(x) * 2\n", name=f"Fine{i}") for i in range(3)]
    crash = task_from("import os\nos._exit(3)\n", name="Crash")
    hang = task_from("import time\ntime.sleep(600)\n", name="Hang")
    poison = task_from("raise RuntimeError('CUDA error: an illegal memory access was encountered')\n", name="Poison")
    tasks = [fine[0], crash, fine[1], hang, poison, fine[2]]
    seen = []
    audits = audit_tasks(tasks, SimpleNamespace(**{**CPU.__dict__, "timeout_s": 8}), on_result=seen.append)
    assert [a.task_id for a in audits] == [t.id for t in tasks]  # the tasks' order, whatever ran when
    assert sorted(a.task_id for a in seen) == sorted(t.id for t in tasks)  # each reported once
    checks = {a.task_id: [f["check"] for f in a.findings] for a in audits}
    assert checks[crash.id] == ["reference_crashed"] and checks[hang.id] == ["reference_timeout"]
    assert checks[poison.id] == ["reference_error"] and "illegal memory access" in audits[4].findings[0]["detail"]
    assert all(checks[t.id] == [] for t in fine), checks  # charged alone: the rest ran again in a fresh child
    assert all(a.severities() == {AuditSeverity.broken} for a in audits[1:5] if a.task_id != fine[1].id)


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


def test_exclude_flagged_drops_what_the_report_flags_and_refuses_a_stale_or_partial_report(tmp_path):
    tasks = load_suite(selection("tiny"))
    zero = {"check": "near_zero", "detail": "all zeros would pass"}
    note = {"check": "too_fast", "detail": "reference takes 0.001 ms"}
    audits = [TaskAudit(t.id, source_hash=t.source_hash) for t in tasks]
    audits[0].findings, audits[1].findings = [zero], [note]
    report = tmp_path / "audit.json"
    write_report(report, audits, "tiny", [AuditSeverity.hack_enabling], 1.0)
    assert [r["findings"] for r in read_report(report)][:2] == [
        [{**zero, "severity": "hack_enabling"}],
        [{**note, "severity": "note"}],
    ]
    kept = load_suite(selection("tiny", exclude_flagged=True, audit_report=str(report)))
    assert [t.id for t in kept] == [t.id for t in tasks[1:]]  # the note does not exclude
    with pytest.raises(TaskError, match="needs suite.audit_report"):
        load_suite(selection("tiny", exclude_flagged=True))
    write_report(report, audits[:2], "tiny", [], 1.0)
    with pytest.raises(TaskError, match=rf"does not cover 1 selected task\(s\) \({tasks[2].id}\)"):
        load_suite(selection("tiny", exclude_flagged=True, audit_report=str(report)))
    audits[2].source_hash = "0" * 64
    write_report(report, audits, "tiny", [], 1.0)
    with pytest.raises(TaskError, match="audited another version of 1 selected task"):
        load_suite(selection("tiny", exclude_flagged=True, audit_report=str(report)))
    report.write_text("{not json")
    with pytest.raises(TaskError, match="not an audit report"):
        load_suite(selection("tiny", exclude_flagged=True, audit_report=str(report)))


@pytest.mark.slow
def test_the_command_fails_on_the_chosen_severities_and_writes_its_report(tmp_path):
    problem = tmp_path / "1_Jitter.py"
    # each call adds a little more (1e-6, 2e-6 ...): two runs on the same inputs always differ, within the tolerance
    problem.write_text(
        task_from("self.calls = getattr(self, 'calls', 0) + 1\nreturn x + self.calls * 1e-6\n", name="Jitter").source
    )

    def audit(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "cudaforge.cli",
                "tasks",
                "audit",
                "suite=file",
                f"suite.root={problem}",
                "audit.device=cpu",
                *extra,
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )

    default = audit(f"output={tmp_path / 'a.json'}")
    assert default.returncode == 0, default.stdout + default.stderr  # a note does not fail by default
    assert "note  " in default.stdout and "0 flagged, 1 with notes only" in default.stdout
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["version"] == 2 and report["fail_on"] == ["hack_enabling", "broken"]
    assert report["tasks"][0]["findings"][0]["severity"] == "note" and report["tasks"][0]["source_hash"]
    strict = audit("audit.fail_on=[note]")
    assert strict.returncode == 1 and "FLAG  " in strict.stdout and "1 flagged" in strict.stdout


def test_the_shipped_kernelbench_audit_is_found_by_name_and_flags_the_known_zero_tasks():
    from cudaforge.tasks.audit import flagged_ids, read_report
    from cudaforge.tasks.suite import audit_report_path

    path = audit_report_path("kernelbench_h200")
    assert path.endswith("kernelbench_audit_h200.json") and audit_report_path("mine.json") == "mine.json"
    records = read_report(path)
    assert len(records) == 250 and all(r["source_hash"] for r in records)  # levels 1-3, each with its file's hash
    flagged = flagged_ids(records)
    for problem in (
        "9_Matmul_Subtract_Multiply_ReLU",
        "23_Conv3d_GroupNorm_Mean",
        "80_Gemm_Max_Subtract_GELU",
        "83_Conv3d_GroupNorm_Min_Clamp_Dropout",
    ):  # level-2 references whose output is all zeros
        assert f"kernelbench/level2/{problem}" in flagged
    noted = {r["task_id"] for r in records if r["findings"]} - set(flagged)
    assert "kernelbench/level2/2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide" in noted  # cuDNN jitter: a note


def test_the_childs_settings_cross_as_a_checked_record():
    from types import SimpleNamespace

    from cudaforge.tasks.audit import ChildSettings
    from cudaforge.types import DevicePreference

    cfg = SimpleNamespace(device=DevicePreference.cpu, cpu_variant="small", min_reference_ms=0.5, atol=1e-4, rtol=0)
    settings = ChildSettings.of(cfg)
    assert ChildSettings.from_dict(settings.to_dict()) == settings and settings.device == "cpu"
    good = settings.to_dict()
    for bad in (
        {**good, "device": "gpu"},
        {**good, "atol": "1e-4"},
        {**good, "rtol": -1.0},
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "cpu_variant"},
        None,
    ):
        with pytest.raises(ValueError):
            ChildSettings.from_dict(bad)
