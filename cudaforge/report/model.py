"""What a report holds, as data: the runs, their statistics, the published rows and the notes. The writers (``tables.py``,
``plots.py``) read it and ``build.py`` makes it, so none of them imports another to know its shape."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudaforge.report.load import RunData
from cudaforge.report.published import PublishedTable
from cudaforge.report.stats import Estimate, FailedAs, GroupStats, Metric


@dataclass
class TableRow:
    """One row of a group's table: a run, or a published row."""

    label: str
    source: str
    """``run``, or the published table's name."""
    values: dict[str, Estimate]


@dataclass
class Report:
    """Everything the writers print: runs, their statistics, the published rows, the notes."""

    runs: list[RunData]
    stats: list[dict[str, GroupStats]]
    """Per run (in ``runs`` order): group -> statistics."""
    published: list[PublishedTable]
    metrics: list[Metric]
    groups: list[str]
    """Groups with a table: every level some run has, then ``overall``."""
    failed_as: FailedAs
    notes: list[str] = field(default_factory=list)
    problem_sets: list[str] = field(default_factory=list)
    """Lines naming each run's problem-set version, and which compared runs ran different problem sets."""
    protocols: list[str] = field(default_factory=list)
    """Markdown: each rescored run beside its source under both protocols, and the verdicts that changed."""
    paired: list[str] = field(default_factory=list)
    """Markdown: with exactly two runs, the paired comparison over their shared tasks (``paired.py``)."""
    caption: str = ""
    """One line for LaTeX captions: the definitions in brief."""

    def rows(self, group: str) -> list[TableRow]:
        """The table of one group: each run with tasks in it, then each published row for it."""
        out = [TableRow(run.label, "run", stats[group].values)
               for run, stats in zip(self.runs, self.stats) if group in stats]  # fmt: skip
        for table in self.published:
            for row in table.rows:
                if row.group == group:
                    values = {k: Estimate(v) for k, v in row.values.items()}
                    if "correct_pct" in values:  # fast_0 is the correct rate, by definition
                        values.setdefault("fast_0_pct", values["correct_pct"])
                    out.append(TableRow(row.label, table.name, values))
        return out
