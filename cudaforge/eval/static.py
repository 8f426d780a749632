"""The static phase: checks on a candidate's text and AST, before anything runs.

Runs in the parent (it only parses). A candidate that fails here is ``invalid`` and never
reaches a worker.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass
class StaticReport:
    """What the static phase found."""

    ok: bool
    message: str = ""
    backend: str = "torch"
    """``cuda`` (load_inline / load), ``triton``, ``cupy`` or ``torch`` (no custom kernel seen)."""
    findings: list[dict[str, str]] = field(default_factory=list)


def detect_backend(source: str) -> str:
    """Which kernel technology a candidate uses, judged from its text."""
    if "load_inline" in source or "cpp_extension.load(" in source:
        return "cuda"
    if "triton.jit" in source or "@jit" in source and "triton" in source:
        return "triton"
    if "cupy" in source and ("RawKernel" in source or "RawModule" in source):
        return "cupy"
    return "torch"


def check_candidate(source: str) -> StaticReport:
    """Parse the candidate and check that it defines ``ModelNew`` at top level."""
    if not source.strip():
        return StaticReport(ok=False, message="the candidate source is empty")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        line = (exc.text or "").rstrip()
        return StaticReport(
            ok=False, message=f"the candidate does not parse: line {exc.lineno}: {exc.msg}\n    {line}"
        )
    defines = False
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            defines = True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defines |= any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in targets)
    if not defines:
        return StaticReport(ok=False, message="the candidate defines no ModelNew at top level")
    return StaticReport(ok=True, backend=detect_backend(source))
