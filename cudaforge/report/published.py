"""Published result tables, kept as data under ``benchmarks/published/*.yaml``.

Each file maps table names to a title, a source and rows; a row names its ``label``, its ``group``
(``level1``, ``level2``, ``level3`` or ``overall``) and any of the report's metric keys (``correct_pct``,
``median``, ``p75``, ``perf``, ``geomean``, ``fast_<p>_pct``, ``dollars``, ``minutes``, ``tokens``, ``tasks``),
in the units the report prints (percent for ``*_pct``). A metric a paper does not give is simply absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cudaforge.config import RESOURCES

PUBLISHED_DIR = RESOURCES / "published"
"""Where the published tables live."""

_ROW_KEYS = {"label", "group", "note"}


@dataclass
class PublishedRow:
    """One row of a published table: a method (or setting) on one group of tasks."""

    label: str
    group: str
    values: dict[str, float]
    note: str = ""


@dataclass
class PublishedTable:
    """A published table: the rows a report can set beside a run's."""

    name: str
    """The name ``report.compare`` uses."""
    title: str
    source: str
    """Paper and table or figure the numbers come from."""
    rows: list[PublishedRow] = field(default_factory=list)
    file: str = ""


def load_published(directory: str | Path | None = None) -> dict[str, PublishedTable]:
    """Every table of every ``*.yaml`` file in ``directory`` (default ``benchmarks/published``), by name."""
    root = Path(directory) if directory is not None else PUBLISHED_DIR
    tables: dict[str, PublishedTable] = {}
    for path in sorted(root.glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        for name, spec in (data.get("tables") or {}).items():
            if name in tables:
                raise ValueError(f"{path}: table {name!r} is also defined in {tables[name].file}")
            rows = []
            for row in spec.get("rows") or []:
                values = {k: float(v) for k, v in row.items() if k not in _ROW_KEYS}
                rows.append(PublishedRow(str(row["label"]), str(row["group"]), values, str(row.get("note", ""))))
            tables[name] = PublishedTable(name, str(spec.get("title", name)), str(spec.get("source", "")),
                                          rows, str(path))  # fmt: skip
    return tables


def select_published(names: list[str], directory: str | Path | None = None) -> list[PublishedTable]:
    """The named tables, in the order given (ValueError naming the known ones when a name is unknown)."""
    if not names:
        return []
    tables = load_published(directory)
    unknown = [n for n in names if n not in tables]
    if unknown:
        raise ValueError(f"unknown published table(s) {unknown}; known: {sorted(tables)}")
    return [tables[n] for n in names]
