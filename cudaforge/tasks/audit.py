"""``cudaforge tasks audit``: flag degenerate tasks, which make reward hacking easy.

Each task's reference runs in an isolated child (``audit_child.audit_task``) on the GPU if
there is one, else on the CPU with the task's scaled-down ``small`` variant when it declares
one. Checks: output (nearly) zero or constant within tolerance (so returning zeros or a
constant would pass), output independent of the inputs or of the weight seed, NaN/Inf,
nondeterminism, and on a GPU a reference faster than ``audit.min_reference_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from cudaforge.isolation import run_isolated
from cudaforge.types import Task


@dataclass
class TaskAudit:
    """The audit of one task."""

    task_id: str
    findings: list[dict[str, str]] = field(default_factory=list)
    device: str = ""
    variant: str = ""
    skipped_variants: list[str] = field(default_factory=list)
    reference_ms: float | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """No finding."""
        return not self.findings

    def line(self) -> str:
        """One line for the terminal."""
        timing = f" ref {self.reference_ms:.3f} ms" if self.reference_ms is not None else ""
        if self.ok:
            return f"ok    {self.task_id}{timing}"
        issues = "; ".join(f"{f['check']}: {f['detail']}" for f in self.findings)
        return f"FLAG  {self.task_id}{timing}  {issues}"


def audit_tasks(
    tasks: list[Task], cfg: Any, on_result: Callable[[TaskAudit], None] | None = None
) -> list[TaskAudit]:
    """Audit every task in turn; ``cfg`` is an ``AuditConfig``. ``on_result`` sees each as it ends."""
    config = {
        "device": str(getattr(cfg.device, "value", cfg.device)),
        "cpu_variant": cfg.cpu_variant,
        "min_reference_ms": cfg.min_reference_ms,
        "atol": cfg.atol,
        "rtol": cfg.rtol,
    }
    gpu = None if config["device"] == "cpu" else 0
    audits = []
    for task in tasks:
        outcome = run_isolated(
            "cudaforge.tasks.audit_child:audit_task",
            {"task": task.to_dict(), "config": config},
            timeouts={},
            default_timeout=cfg.timeout_s,
            gpu=gpu,
        )
        audit = TaskAudit(task_id=task.id, seconds=outcome.seconds)
        if outcome.status == "ok" and outcome.result is not None:
            r = outcome.result
            audit.findings = r["findings"]
            audit.device, audit.variant = r["device"], r["variant"]
            audit.skipped_variants = r.get("skipped_variants", [])
            audit.reference_ms = r.get("reference_ms")
        else:
            detail = outcome.error.strip().splitlines()[-1] if outcome.error else outcome.status
            audit.findings = [{"check": f"reference_{outcome.status}", "detail": detail}]
        audits.append(audit)
        if on_result:
            on_result(audit)
    return audits


def summary_line(audits: list[TaskAudit]) -> str:
    """The closing line: how many tasks, where they ran, how many were flagged."""
    devices = sorted({a.device for a in audits if a.device})
    where = ", ".join(devices) or "nowhere"
    scaled = [a for a in audits if a.device == "cpu" and a.variant != "default"]
    note = f" (CPU: {len(scaled)} tasks scaled down to their 'small' variant)" if scaled else ""
    flagged = sum(not a.ok for a in audits)
    return f"{len(audits)} tasks audited on {where}{note}; {flagged} flagged"
