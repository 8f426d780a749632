"""The static phase: checks on a candidate's text and AST, before anything runs.

Runs in the parent (it only parses). A candidate that fails here is ``invalid`` (it does not parse,
or defines no ``ModelNew``) or, when the eval config is given, ``rejected`` by a static integrity
guard (``cudaforge.eval.guards``); either way it never reaches a worker. The worker runs the same
static guards before it imports the candidate, so a caller that passes no config is still guarded.
"""

from __future__ import annotations

import ast
import threading
from dataclasses import dataclass, field
from typing import Any

from cudaforge import languages, pyast
from cudaforge.eval.guards.policy import Policies, rejection_message, rejections
from cudaforge.eval.guards.source import static_findings


@dataclass
class StaticReport:
    """What the static phase found."""

    ok: bool
    message: str = ""
    backend: str = "torch"
    """The kernel language the source uses (``cudaforge.languages``: ``cuda``, ``triton``, ``cupy`` ...), or ``torch``
    (no custom kernel seen)."""
    findings: list[dict[str, str]] = field(default_factory=list)
    """The static guards' findings (``{guard, verdict, evidence}``), reports included."""
    status: str = ""
    """When not ok: ``invalid`` (format) or ``rejected`` (a guard); an ``EvalStatus`` value."""


def _invalid(message: str) -> StaticReport:
    return StaticReport(ok=False, message=message, status="invalid")


def check_candidate(source: str, cfg: dict[str, Any] | None = None, reference_source: str | None = None) -> StaticReport:
    """Parse the candidate and check that it defines ``ModelNew`` at top level.

    With ``cfg`` (the eval config as a dict), also run the static guards under its policies: a
    rejection makes the report not ok with status ``rejected``; every finding is in ``findings``.
    ``reference_source`` (the task's source) lets the guards see a copied reference forward.
    """
    # In a thread of its own: a source nested past the parser's limit leaves CPython 3.11's per-thread AST
    # recursion counter off ("AST constructor recursion depth mismatch" at the next parse), so the thread that
    # met it must not parse anything again.
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["report"] = _check(source, cfg, reference_source)
        except BaseException as exc:  # noqa: BLE001 - judged below
            box["error"] = exc

    thread = threading.Thread(target=work, name="cudaforge-static-check", daemon=True)
    thread.start()
    thread.join()
    if "report" in box:
        return box["report"]
    exc = box.get("error")
    if isinstance(exc, (RecursionError, MemoryError, ValueError, TypeError, SystemError)):  # built to break the analysis
        return _invalid(f"the candidate could not be analysed ({type(exc).__name__}: {str(exc)[:200]}): an expression "
                        "nested too deeply or a source too large. Write it plainly.")  # fmt: skip
    raise exc if exc is not None else RuntimeError("the static check ended without a report")


def _check(source: str, cfg: dict[str, Any] | None, reference_source: str | None) -> StaticReport:
    if not isinstance(source, str) or not source.strip():
        return _invalid("the candidate source is empty")
    try:
        tree = pyast.parse(source)
    except SyntaxError as exc:
        line = (exc.text or "").rstrip()
        return _invalid(f"the candidate does not parse: line {exc.lineno}: {exc.msg}\n    {line}")
    defines = False
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            defines = True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defines |= any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in targets)
    if not defines:
        return _invalid("the candidate defines no ModelNew at top level")
    report = StaticReport(ok=True, backend=languages.detect(source))
    if cfg is not None:
        report.findings = static_findings(source, Policies(cfg), reference_source)
        if rejections(report.findings):
            report.ok, report.status, report.message = False, "rejected", rejection_message(report.findings)
    return report
