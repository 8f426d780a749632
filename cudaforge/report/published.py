"""Published result tables, kept as data under ``benchmarks/published/*.yaml``.

Each file maps table names (under ``tables:``) to a ``title``, a ``source`` (the paper and the tables or figures
the numbers come from) and ``rows``. A row names:

- its ``label`` (the row's name in the report);
- its ``group``: ``level1``, ``level2``, ``level3`` ..., ``overall``, or several levels together such as
  ``level1_2`` (a paper's "Level 1 & 2" aggregate; the report tables it when the runs have each of its levels);
- any of the report's metric keys (``correct_pct``, ``median``, ``p75``, ``perf``, ``geomean``, ``fast_<p>_pct``,
  ``dollars``, ``minutes``, ``tokens``, ``tasks``), in the units the report prints (percent for ``*_pct``);
- optionally ``source``, where in the paper the row is (``Table 1, row 'o3-self-refine'``), and ``note``, what
  else the paper says about it (the report prints both beside the table's source).

A metric a paper does not give is simply absent, so a missing cell means the paper has no such number (never
write it as 0). Other top-level keys of a file (``other_numbers`` in ``cudaforge.yaml``) are not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cudaforge.paths import RESOURCES

PUBLISHED_DIR = RESOURCES / "published"
"""Where the published tables live."""

_ROW_KEYS = {"label", "group", "note", "source"}
GROUP = re.compile(r"overall|level\d+(_\d+)*")
"""The groups a published row may name: ``overall``, a level (``level1``) or levels together (``level1_2``)."""


@dataclass
class PublishedRow:
    """One row of a published table: a method (or setting) on one group of tasks."""

    label: str
    group: str
    values: dict[str, float]
    note: str = ""
    source: str = ""
    """Where in the paper the row is, e.g. ``Table 1, row 'CudaForge'`` ("" when the table's source says it)."""


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


def _row(path: Path, name: str, row: dict[str, Any]) -> PublishedRow:
    group = str(row["group"])
    if not GROUP.fullmatch(group):
        raise ValueError(
            f"{path}: table {name!r}, row {row.get('label')!r}: group {group!r} is not overall, "
            "level<N> or level<N>_<M>..."
        )
    values = {k: float(v) for k, v in row.items() if k not in _ROW_KEYS}
    return PublishedRow(str(row["label"]), group, values, str(row.get("note", "")), str(row.get("source", "")))


def load_published(directory: str | Path | None = None) -> dict[str, PublishedTable]:
    """Every table of every ``*.yaml`` file in ``directory`` (default ``benchmarks/published``), by name."""
    root = Path(directory) if directory is not None else PUBLISHED_DIR
    tables: dict[str, PublishedTable] = {}
    for path in sorted(root.glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        for name, spec in (data.get("tables") or {}).items():
            if name in tables:
                raise ValueError(f"{path}: table {name!r} is also defined in {tables[name].file}")
            rows = [_row(path, name, row) for row in spec.get("rows") or []]
            tables[name] = PublishedTable(
                name, str(spec.get("title", name)), str(spec.get("source", "")), rows, str(path)
            )
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
