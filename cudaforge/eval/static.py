"""The static phase: checks on a candidate's text and AST, before anything runs.

A candidate that fails here is ``invalid`` (too large, it does not parse, defines no ``ModelNew``, or cannot be
analysed within the phase's deadline and memory) or, when the eval config is given, ``rejected`` by a static
integrity guard (``cudaforge.eval.guards``); either way it never reaches a worker. The analysis runs in a child
process (``cudaforge.eval.static_child``), never in the caller's: a crafted source can make it slow and large. The
worker runs the same static guards before it imports the candidate, so a caller that passes no config is still
guarded.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from cudaforge import languages, pyast
from cudaforge.eval.bounded import cap_strings, source_size_problem
from cudaforge.eval.guards.policy import Policies, rejection_message, rejections
from cudaforge.eval.guards.source import static_findings
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.static_child import AnalysisFailed, analyse


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


ANALYSIS = "cudaforge.eval.static:analysis_report"
"""What the analysis child runs (``cudaforge.eval.static_child``)."""


def _invalid(message: str) -> StaticReport:
    return StaticReport(ok=False, message=message, status="invalid")


def check_candidate(
    source: str,
    cfg: EvalConfig | dict[str, Any] | None = None,
    reference_source: str | None = None,
    *,
    guards: bool = True,
) -> StaticReport:
    """Parse the candidate and check that it defines ``ModelNew`` at top level.

    With ``cfg`` (the eval config: an ``EvalConfig``, or a dict of some of its fields), also run the static guards under its policies (unless ``guards`` is
    false: the format and the kernel language only): a rejection makes the report not ok with status ``rejected``;
    every finding is in ``findings``. ``reference_source`` (the task's source) lets the guards see a copied
    reference forward.

    A source over ``max_source_bytes`` is invalid before anything parses it; the analysis runs in a child process
    with the deadline ``static_timeout_s`` and the address space ``static_memory_gb`` (each from ``cfg``, or
    ``EvalConfig``'s default), and one that overruns either is invalid too. Raises RuntimeError only when the
    analysis itself failed (a fault of ours, not the candidate's).
    """
    if isinstance(cfg, EvalConfig):
        cfg = cfg.to_dict()  # it crosses into the analysis child as JSON
    limits = {
        key: (cfg or {}).get(key, getattr(EvalConfig, key))
        for key in ("max_source_bytes", "static_timeout_s", "static_memory_gb")
    }
    if not isinstance(source, str):
        return _invalid("the candidate source is empty")
    too_large = source_size_problem(source, int(limits["max_source_bytes"]))
    if too_large:
        return _invalid(too_large)
    if not source.strip():
        return _invalid("the candidate source is empty")
    request = {
        "source": source,
        "cfg": cfg if guards else None,
        "reference_source": reference_source,
        "memory_bytes": int(float(limits["static_memory_gb"]) * (1 << 30)),
    }
    try:
        return StaticReport(**analyse(ANALYSIS, request, float(limits["static_timeout_s"])))
    except AnalysisFailed as exc:
        if exc.kind == "deadline":
            why = f"ran past the static phase's deadline (eval.static_timeout_s = {limits['static_timeout_s']} s)"
        elif exc.kind == "memory":
            why = f"needed more than eval.static_memory_gb = {limits['static_memory_gb']} GB"
        else:
            why = f"failed ({exc})"
        return _invalid(
            f"the analysis of the candidate's source {why}: a source this large or this convoluted "
            "cannot be checked. Write it plainly and keep it small."
        )


def analysis_report(source: str, cfg: dict[str, Any] | None, reference_source: str | None) -> dict[str, Any]:
    """The analysis :func:`check_candidate` runs, in the child ``cudaforge.eval.static_child`` forks for it: the
    ``StaticReport`` as a dict, each text in it capped. A source built to break the analysis (nested past the
    parser's limits) is invalid; the child is thrown away after it, so nothing such a parse leaves behind (CPython
    3.11's AST recursion counter, left off by a failed parse) reaches another analysis."""
    try:
        report = _check(source, cfg, reference_source)
    except (RecursionError, ValueError, TypeError, SystemError) as exc:
        report = _invalid(
            f"the candidate could not be analysed ({type(exc).__name__}: {str(exc)[:200]}): an "
            "expression nested too deeply. Write it plainly."
        )
    capped: dict[str, Any] = cap_strings(dataclasses.asdict(report))
    return capped


def _check(source: str, cfg: dict[str, Any] | None, reference_source: str | None) -> StaticReport:
    try:
        tree = pyast.parse(source)
    except SyntaxError as exc:
        line = (exc.text or "").rstrip()[:300]
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
