"""Report sections by name: each a function from the loaded runs to Markdown lines, empty when it has nothing to say.

The built-in ones are the protocols (a rescored run beside its source: ``protocols.py``), the integrations (the
``cudaforge integrate`` results in the runs' folders) and the search trees (``search.py``); report.md places them
where they have always been (the protocols, the paired comparison, the integrations, the search trees, the notes). A package adds a section by naming a
:class:`ReportSection` in the entry-point group ``cudaforge.report_sections``; its lines are appended to report.md
after the built-in ones, in name order (docs/extending.md, "A report section"). A package's section that raises is
left out of the report with a warning; a built-in one that raises stops it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cudaforge import plugins
from cudaforge.registry import Registry
from cudaforge.report.load import RunData
from cudaforge.report.protocols import protocol_lines
from cudaforge.report.search import search_lines


@dataclass(frozen=True)
class ReportSection:
    """One section of report.md: its name (the registry's) and what it says of the loaded runs."""

    name: str
    lines: Callable[[list[RunData]], list[str]]
    """Markdown lines from the loaded runs, in report order: a blank line and a ``## `` heading first, like the
    built-in sections; empty when the runs have nothing for it (the section is then not written at all)."""


def integration_lines(runs: list[RunData]) -> list[str]:
    """The "In a model" section: every ``cudaforge integrate`` result in the runs' ``integrate/`` folders."""
    from cudaforge.run.integrate import report_lines

    return report_lines([Path(run.path) for run in runs])


def _named(name: str, section: ReportSection) -> str | None:
    return None if section.name == name else f"not a ReportSection called {name!r}"


SECTIONS: Registry[ReportSection] = Registry(
    "report section",
    plugins.REPORT_SECTIONS,
    ReportSection,
    built_in={
        "protocols": ReportSection("protocols", protocol_lines),
        "integrations": ReportSection("integrations", integration_lines),
        "search": ReportSection("search", search_lines),
    },
    check=_named,
    reserved=("paired", "notes", "problem_sets"),
)
"""The report sections: the built-in ones, then those installed packages add (:class:`~cudaforge.registry.Registry`;
``paired``, ``notes`` and ``problem_sets``, written by the report itself, are reserved)."""


def section_lines(runs: list[RunData]) -> dict[str, list[str]]:
    """Every registered section's lines for ``runs``, by name in registry order (an empty list: nothing to say)."""
    found: dict[str, list[str]] = {}
    for name, section in SECTIONS.items():
        try:
            found[name] = [str(line) for line in section.lines(runs)]
        except Exception as exc:  # noqa: BLE001 - a package's section must not stop the report
            if SECTIONS.is_built_in(name):
                raise
            warnings.warn(f"the report section {name!r} failed ({exc}); left out of the report", stacklevel=2)
    return found


def added_lines(sections: dict[str, list[str]]) -> list[str]:
    """The lines of the sections installed packages add, in registry order: report.md's tail."""
    return [line for name, lines in sections.items() if not SECTIONS.is_built_in(name) for line in lines]


__all__ = ["SECTIONS", "ReportSection", "added_lines", "integration_lines", "section_lines"]
