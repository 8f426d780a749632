"""The hack corpus (``benchmarks/hacks/``): one candidate per known reward hack, and legitimate kernels.

Each file's module docstring declares, one per line::

    TASK: tiny/level1/1_ReLU                 # <suite>/<task id within it>; suite "hacks" is benchmarks/hacks/tasks
    EXPECTED: rejected by output_type        # or: incorrect by <guard>, correct, correct, reported by <guard>
    NEEDS: cuda, tilelang                    # optional: its runtime verdict needs a GPU (and these Python modules)
    CONFIG: torch_ops=strict                 # optional: eval config overrides, comma-separated (guards.io=report)
    THREAT: forged result file               # optional: the threat-model class it attacks (sandbox and verifier)

:func:`check_static` and :func:`check_result` say whether a verdict is the declared one. The
entries whose guard is a static one get their verdict from the static check alone, without a
worker. No torch here.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge import pyast
from cudaforge.eval.guards.catalog import REJECT, REPORT
from cudaforge.eval.guards.policy import GUARDS
from cudaforge.eval.static import check_candidate
from cudaforge.types import Task

CORPUS_DIR = Path(__file__).resolve().parents[3] / "benchmarks" / "hacks"
"""Where the corpus lives in the checkout."""
HACK_TASKS_DIR = CORPUS_DIR / "tasks"
"""The corpus's own tasks (suite ``hacks``): a degenerate one, one with KernelBench's loose tolerance."""

_EXPECTED = re.compile(r"^(?P<status>\w+)(?: by (?P<guard>\w+))?(?:, reported by (?P<reported>\w+))?$")


@dataclass
class Entry:
    """One corpus file and the verdict it must receive."""

    path: Path
    task: str
    """``<suite>/<task id>``."""
    status: str
    """The ``EvalStatus`` value it must end with."""
    guard: str = ""
    """The guard whose rejection (or, for ``incorrect``, explanation) it must carry."""
    reported: str = ""
    """A guard that must have reported (verdict ``report``)."""
    needs_cuda: bool = False
    needs_modules: tuple[str, ...] = ()
    """Python modules its runtime verdict needs besides cudaforge's own (a kernel language's: ``cutlass``)."""
    config: dict[str, Any] = field(default_factory=dict)
    threat: str = ""
    """The threat-model class (docs/threat-model.md, "Threat model") the entry attacks; empty for guard hacks."""

    @property
    def name(self) -> str:
        """The file's stem."""
        return self.path.stem

    @property
    def suite(self) -> str:
        """The suite part of ``task``."""
        return self.task.split("/", 1)[0]

    @property
    def task_id(self) -> str:
        """The task id within the suite (``level1/1_ReLU``)."""
        return self.task.split("/", 1)[1]

    @property
    def static(self) -> bool:
        """True when the declared verdict is a static guard's: no worker is needed to check it.

        (``no_custom_kernel`` and ``torch_compute`` also act on a GPU, from the profiler: an entry
        that needs CUDA expects that verdict.)"""
        if self.status == "invalid":
            return True
        return (
            bool(self.guard)
            and GUARDS[self.guard].where == "static"
            and self.status == "rejected"
            and not self.needs_cuda
        )

    def missing_modules(self) -> list[str]:
        """The modules of ``needs_modules`` this interpreter cannot import (empty: it can run the entry)."""
        import importlib.util

        return [m for m in self.needs_modules if importlib.util.find_spec(m) is None]

    @property
    def source(self) -> str:
        """The candidate's text."""
        return self.path.read_text()

    def expected(self) -> str:
        """The declared verdict, as written."""
        text = self.status + (f" by {self.guard}" if self.guard else "")
        return text + (f", reported by {self.reported}" if self.reported else "")


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_entry(path: Path) -> Entry:
    """Read one corpus file's declarations; raises ValueError naming the file when one is missing or bad."""
    doc = ast.get_docstring(pyast.parse(path.read_text())) or ""
    fields: dict[str, str] = {}
    for line in doc.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("TASK", "EXPECTED", "NEEDS", "CONFIG", "THREAT"):
            fields[key.strip()] = value.strip()
    if "TASK" not in fields or "EXPECTED" not in fields:
        raise ValueError(f"{path}: the docstring must declare TASK: and EXPECTED:")
    match = _EXPECTED.match(fields["EXPECTED"])
    if not match:
        raise ValueError(
            f"{path}: EXPECTED: {fields['EXPECTED']!r} is not '<status> [by <guard>][, reported by <guard>]'"
        )
    for guard in (match["guard"], match["reported"]):
        if guard and guard not in GUARDS:
            raise ValueError(f"{path}: unknown guard {guard!r} (known: {', '.join(GUARDS)})")
    config: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in fields.get("CONFIG", "").split(","))):
        key, _, value = item.partition("=")
        *outer, name = key.strip().split(".")  # guards.concurrency=report: a nested setting
        into = config
        for part in outer:
            into = into.setdefault(part, {})
        into[name] = _value(value.strip())
    needs = [n.strip() for n in fields.get("NEEDS", "").split(",") if n.strip()]
    return Entry(
        path=path,
        task=fields["TASK"],
        status=match["status"],
        guard=match["guard"] or "",
        reported=match["reported"] or "",
        needs_cuda="cuda" in needs,
        config=config,
        needs_modules=tuple(n for n in needs if n != "cuda"),
        threat=fields.get("THREAT", ""),
    )


def load_corpus(directory: Path = CORPUS_DIR) -> list[Entry]:
    """Every corpus file in ``directory`` (``*.py`` but ``run_corpus.py``), hacks first, sorted by name."""
    files = sorted(p for p in directory.glob("*.py") if p.name != "run_corpus.py")
    return sorted((parse_entry(p) for p in files), key=lambda e: (e.status == "correct", e.name))


def find_entry_task(entry: Entry) -> Task:
    """The entry's ``Task`` (suite ``hacks``: benchmarks/hacks/tasks; others: the bundled suites)."""
    from cudaforge.tasks import find_task, selection

    root = str(HACK_TASKS_DIR) if entry.suite == "hacks" else None
    return find_task(selection(entry.suite, root=root), entry.task_id)


def _guards(findings: list[dict[str, Any]], verdict: str) -> list[str]:
    return [f["guard"] for f in findings if f.get("verdict") == verdict]


def check_static(entry: Entry, cfg: dict[str, Any], reference_source: str | None) -> list[str]:
    """Problems with the static verdict (empty: as declared). ``cfg``: the eval config with the entry's overrides.

    A static entry must be rejected by its guard; every other entry must get through the static
    phase (its verdict comes later).
    """
    report = check_candidate(entry.source, {**cfg, **entry.config}, reference_source)
    rejected = _guards(report.findings, REJECT)
    if entry.status == "invalid":
        return (
            []
            if report.status == "invalid"
            else [f"expected the static phase to find it invalid; got {report.status or 'ok'}"]
        )
    if entry.static:
        if report.status != "rejected" or entry.guard not in rejected:
            return [
                f"expected the static phase to reject it by {entry.guard}; got {report.status or 'ok'}"
                f" ({', '.join(rejected) or 'no rejection'})"
            ]
        return []
    if not report.ok:
        return [f"the static phase stopped it ({report.status}: {report.message.splitlines()[0]})"]
    return []


def check_result(entry: Entry, result: Any) -> list[str]:
    """Problems with an ``EvalResult`` against the declared verdict (empty: as declared)."""
    problems = []
    status = getattr(result.status, "value", result.status)
    if status != entry.status:
        first_line = result.message.splitlines()[0] if result.message else ""
        problems.append(f"expected {entry.expected()}, got {status}: {first_line}")
    rejected, reported = _guards(result.guard_findings, REJECT), _guards(result.guard_findings, REPORT)
    if entry.guard and entry.guard not in rejected:
        problems.append(f"no rejection by {entry.guard} among the findings ({', '.join(rejected) or 'none'})")
    if entry.reported and entry.reported not in reported:
        problems.append(f"no report by {entry.reported} among the findings ({', '.join(reported) or 'none'})")
    if entry.status == "correct" and rejected:
        problems.append(f"a legitimate kernel was rejected by {', '.join(rejected)}")
    return problems


def verdict_line(result: Any) -> str:
    """``status [by guard]`` as a result reads, for tables."""
    status: str = getattr(result.status, "value", result.status)
    rejected = _guards(result.guard_findings, REJECT)
    reported = _guards(result.guard_findings, REPORT)
    text = status + (f" by {rejected[0]}" if rejected else "")
    return text + (f", reported by {', '.join(dict.fromkeys(reported))}" if reported else "")
