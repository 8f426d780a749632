"""``cudaforge tasks audit``: flag degenerate tasks, which make reward hacking easy.

Each task's reference runs in an isolated child (``audit_child``) on the GPU if there is one, else on the CPU with
the task's scaled-down ``small`` variant when it declares one. Checks: output (nearly) zero or constant within
tolerance (so returning zeros or a constant would pass), output independent of the inputs or of the weight seed,
NaN/Inf, nondeterminism, and on a GPU a reference faster than ``audit.min_reference_ms``.

At suite scale the references are batched: several tasks per warm child (``audit.batch_size``), children side by
side on every local GPU (``audit.workers_per_gpu``; ``audit.cpu_workers`` on a CPU). Each task keeps its own
deadline (``audit.timeout_s``, the parent's); a task that crashes or hangs its child is charged alone, and the
other tasks of its batch run again in a fresh child.

Every finding has a severity: ``hack_enabling`` (a constant, zeros or an input- or weight-blind kernel would
pass), ``broken`` (the reference fails, or differs from itself by more than the task's tolerance) or ``note``
(nondeterminism within tolerance, a fast reference). ``audit.fail_on`` chooses which fail the command, and
``suite.exclude_flagged`` drops the tasks an audit report flags ``hack_enabling`` or ``broken``.
"""

from __future__ import annotations

import enum
import json
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge.proc.isolation import run_isolated
from cudaforge.types import Task


class AuditSeverity(str, enum.Enum):
    """How much a finding matters."""

    hack_enabling = "hack_enabling"  # a degenerate kernel (zeros, a constant, blind to inputs or weights) would pass
    broken = "broken"  # the reference fails, or is unstable beyond the task's tolerance: verdicts would be noise
    note = "note"  # worth knowing, harmless to verdicts: nondeterminism within tolerance, a fast reference


HACK_ENABLING_CHECKS = {"near_zero", "near_constant", "input_independent", "weight_independent", "non_finite"}
"""Checks whose finding means a degenerate kernel would pass the task."""
NOTE_CHECKS = {"too_fast"}
"""Checks that only inform."""
EXCLUDED_SEVERITIES = (AuditSeverity.hack_enabling, AuditSeverity.broken)
"""The severities ``suite.exclude_flagged`` drops a task for (and ``audit.fail_on``'s default)."""
REPORT_VERSION = 2
"""``cudaforge tasks audit output=FILE``'s format: 1 was a bare list of task audits, 2 adds the header and
severities."""


def severity(finding: dict[str, Any]) -> AuditSeverity:
    """A finding's severity, from its check (``nondeterministic`` is a note only within the task's tolerance)."""
    check = finding.get("check", "")
    if check in HACK_ENABLING_CHECKS:
        return AuditSeverity.hack_enabling
    if check in NOTE_CHECKS or (check == "nondeterministic" and finding.get("within_tolerance")):
        return AuditSeverity.note
    return AuditSeverity.broken


@dataclass
class TaskAudit:
    """The audit of one task."""

    task_id: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    device: str = ""
    variant: str = ""
    skipped_variants: list[str] = field(default_factory=list)
    reference_ms: float | None = None
    seconds: float = 0.0
    source_hash: str = ""
    """The content hash of the problem file audited (a report about another version of the file is stale)."""

    @property
    def ok(self) -> bool:
        """No finding at all, notes included."""
        return not self.findings

    def severities(self) -> set[AuditSeverity]:
        """The severities of this task's findings."""
        return {severity(f) for f in self.findings}

    def fails(self, fail_on: Any = EXCLUDED_SEVERITIES) -> bool:
        """A finding of one of the ``fail_on`` severities."""
        wanted = {AuditSeverity(getattr(s, "value", s)) for s in fail_on}
        return bool(self.severities() & wanted)

    def line(self, fail_on: Any = EXCLUDED_SEVERITIES) -> str:
        """One line for the terminal: ``ok``, ``note`` (findings, none failing) or ``FLAG``."""
        timing = f" ref {self.reference_ms:.3f} ms" if self.reference_ms is not None else ""
        timing += f" ({self.seconds:.1f} s)"
        if self.ok:
            return f"ok    {self.task_id}{timing}"
        issues = "; ".join(f"{f['check']} [{severity(f).value}]: {f['detail']}" for f in self.findings)
        return f"{'FLAG' if self.fails(fail_on) else 'note'}  {self.task_id}{timing}  {issues}"

    def to_dict(self) -> dict[str, Any]:
        """The report's record of this task (every finding with its severity)."""
        out = dict(self.__dict__)
        out["findings"] = [{**f, "severity": severity(f).value} for f in self.findings]
        return out


@dataclass(frozen=True)
class ChildSettings:
    """What the audit's child (``audit_child``) needs of ``AuditConfig``. It crosses the process boundary as
    ``to_dict()`` and is read back, typed and checked, with ``from_dict()``."""

    device: str = "auto"
    """``auto``, ``cuda`` or ``cpu``."""
    cpu_variant: str = "small"
    min_reference_ms: float = 0.0
    atol: float = 1e-4
    rtol: float = 1e-4

    @classmethod
    def of(cls, cfg: Any) -> ChildSettings:
        """The child's part of an ``AuditConfig`` (or anything with its fields)."""
        return cls(
            device=str(getattr(cfg.device, "value", cfg.device)),
            cpu_variant=str(cfg.cpu_variant),
            min_reference_ms=float(cfg.min_reference_ms),
            atol=float(cfg.atol),
            rtol=float(cfg.rtol),
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: Any) -> ChildSettings:
        """The settings ``to_dict`` wrote; a missing, unknown or mistyped field raises ``ValueError``."""
        names = {"device", "cpu_variant", "min_reference_ms", "atol", "rtol"}
        if not isinstance(data, dict) or set(data) != names:
            raise ValueError(f"audit settings: expected the fields {sorted(names)}, got {data!r}"[:300])
        if data["device"] not in ("auto", "cuda", "cpu") or not isinstance(data["cpu_variant"], str):
            raise ValueError(f"audit settings: bad device or cpu_variant in {data!r}"[:300])
        numbers = [data[k] for k in ("min_reference_ms", "atol", "rtol")]
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in numbers):
            raise ValueError(
                f"audit settings: min_reference_ms, atol and rtol are non-negative numbers: {data!r}"[:300]
            )
        fields: dict[str, Any] = {
            k: (float(v) if k in ("min_reference_ms", "atol", "rtol") else v) for k, v in data.items()
        }
        return cls(**fields)


def _lanes(device: str, cfg: Any) -> list[str | None]:
    """One entry per child that runs at a time: a GPU id per worker on each local GPU, or None per CPU worker."""
    gpus: list[str] = []
    if device != "cpu":
        import torch  # noqa: PLC0415 -- only to count the GPUs, and only when they may be used

        gpus = [str(i) for i in range(torch.cuda.device_count())]
    if gpus:
        return [gpu for gpu in gpus for _ in range(max(1, int(getattr(cfg, "workers_per_gpu", 1))))]
    return [None] * max(1, int(getattr(cfg, "cpu_workers", 1)))


def _from_result(task: Task, r: dict[str, Any], seconds: float) -> TaskAudit:
    audit = TaskAudit(task_id=task.id, seconds=round(seconds, 3), source_hash=task.source_hash)
    if "error" in r:
        lines = r["error"].strip().splitlines()
        audit.findings = [{"check": "reference_error", "detail": lines[-1] if lines else "error"}]
        return audit
    audit.findings = r["findings"]
    audit.device, audit.variant = r["device"], r["variant"]
    audit.skipped_variants = r.get("skipped_variants", [])
    audit.reference_ms = r.get("reference_ms")
    return audit


def _failed(task: Task, status: str, detail: str, seconds: float) -> TaskAudit:
    return TaskAudit(
        task_id=task.id,
        seconds=round(seconds, 3),
        source_hash=task.source_hash,
        findings=[{"check": f"reference_{status}", "detail": detail}],
    )


def _run_batch(batch: list[Task], gpu: str | None, config: ChildSettings, timeout_s: float) -> list[TaskAudit]:
    """Audit ``batch`` in one child; a task that kills or hangs it is charged alone and the others run again."""
    if not batch:
        return []
    outcome = run_isolated(
        "cudaforge.tasks.audit_child:audit_batch",
        {"tasks": [t.to_dict() for t in batch], "config": config.to_dict()},
        timeouts={f"task:{i}": timeout_s for i in range(len(batch))},
        default_timeout=timeout_s,  # the child's start-up: imports and CUDA
        gpu=gpu,
    )
    if outcome.status == "ok" and outcome.result is not None:
        results = outcome.result["results"]
        done = [
            _from_result(t, r, outcome.phase_seconds.get(f"task:{i}", 0.0))
            for i, (t, r) in enumerate(zip(batch, results))
        ]
        return done + _run_batch(batch[len(results) :], gpu, config, timeout_s)  # a CUDA error stopped the child
    detail = outcome.error.strip().splitlines()[-1] if outcome.error.strip() else outcome.status
    status = outcome.status if outcome.status != "ok" else "error"
    if outcome.phase.startswith("task:"):
        culprit = int(outcome.phase.split(":")[1])
        seconds = outcome.phase_seconds.get(outcome.phase, 0.0)
        rest = _run_batch(batch[:culprit] + batch[culprit + 1 :], gpu, config, timeout_s)
        rest.insert(culprit, _failed(batch[culprit], status, detail, seconds))
        return rest
    if len(batch) > 1:  # the child died before its first task: try each task alone
        return [a for t in batch for a in _run_batch([t], gpu, config, timeout_s)]
    return [_failed(batch[0], status, detail, outcome.seconds)]


def audit_tasks(tasks: list[Task], cfg: Any, on_result: Callable[[TaskAudit], None] | None = None) -> list[TaskAudit]:
    """Audit every task (``cfg`` an ``AuditConfig``), batched into warm children on every lane; the audits come
    back in the order of ``tasks``. ``on_result`` sees each batch's audits as the batch ends (from one thread at a
    time)."""
    config = ChildSettings.of(cfg)
    lanes = _lanes(config.device, cfg)
    size = max(1, min(int(getattr(cfg, "batch_size", 1)), math.ceil(len(tasks) / len(lanes)) if tasks else 1))
    batches: queue.Queue[range] = queue.Queue()
    for start in range(0, len(tasks), size):
        batches.put(range(start, min(start + size, len(tasks))))
    found: dict[int, TaskAudit] = {}
    lock = threading.Lock()

    def lane(gpu: str | None) -> None:
        while True:
            try:
                positions = batches.get_nowait()
            except queue.Empty:
                return
            audits = _run_batch([tasks[i] for i in positions], gpu, config, cfg.timeout_s)
            with lock:
                for i, audit in zip(positions, audits):
                    found[i] = audit
                    if on_result:
                        on_result(audit)

    threads = [threading.Thread(target=lane, args=(gpu,), daemon=True) for gpu in lanes[: batches.qsize()]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [found[i] for i in range(len(tasks))]


def summary_line(audits: list[TaskAudit], fail_on: Any = EXCLUDED_SEVERITIES, seconds: float | None = None) -> str:
    """The closing line: how many tasks, where they ran, how many fail and how many have notes only."""
    devices = sorted({a.device for a in audits if a.device})
    where = ", ".join(devices) or "nowhere"
    scaled = [a for a in audits if a.device == "cpu" and a.variant != "default"]
    note = f" (CPU: {len(scaled)} tasks scaled down to their 'small' variant)" if scaled else ""
    flagged = sum(a.fails(fail_on) for a in audits)
    notes = sum(bool(a.findings) and not a.fails(fail_on) for a in audits)
    took = f" in {seconds:.0f} s" if seconds is not None else ""
    return f"{len(audits)} tasks audited on {where}{note}{took}; {flagged} flagged, {notes} with notes only"


def write_report(path: str | Path, audits: list[TaskAudit], suite: str, fail_on: Any, seconds: float) -> None:
    """``output=FILE``: the audits with their severities, and what ``suite.exclude_flagged`` needs to use it."""
    report = {
        "version": REPORT_VERSION,
        "suite": suite,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "devices": sorted({a.device for a in audits if a.device}),
        "seconds": round(seconds, 1),
        "fail_on": [getattr(s, "value", s) for s in fail_on],
        "tasks": [a.to_dict() for a in audits],
    }
    Path(path).write_text(json.dumps(report, indent=2))


def read_report(path: str | Path) -> list[dict[str, Any]]:
    """The task records of an audit report (this version's, or version 1's bare list)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p}: not an audit report ({exc})") from None
    records = data.get("tasks") if isinstance(data, dict) else data
    if not isinstance(records, list) or not all(isinstance(r, dict) and "task_id" in r for r in records):
        raise ValueError(f"{p}: not an audit report (write one with `cudaforge tasks audit output=FILE`)")
    return records


def flagged_ids(records: list[dict[str, Any]], severities: Any = EXCLUDED_SEVERITIES) -> dict[str, dict[str, Any]]:
    """Task id -> record, for the records with a finding of one of ``severities``."""
    wanted = {AuditSeverity(getattr(s, "value", s)) for s in severities}
    return {r["task_id"]: r for r in records if any(severity(f) in wanted for f in r.get("findings", []))}
