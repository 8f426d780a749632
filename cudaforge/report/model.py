"""What a report holds, as data: the runs, their statistics, the published rows and the notes. The writers (``tables.py``,
``plots.py``) read it and ``build.py`` makes it, so none of them imports another to know its shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cudaforge.report.load import RunData
from cudaforge.report.published import PublishedTable
from cudaforge.report.seeds import Arm
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
    sections: dict[str, list[str]] = field(default_factory=dict)
    """Markdown of every registered report section by name (``sections.py``, ``SECTIONS``), in registry order: the
    built-in ``protocols`` (each rescored run beside its source under both protocols, and the verdicts that changed)
    and ``integrations`` (each ``cudaforge integrate`` result in the runs' ``integrate/`` folders), then those of
    installed packages; an empty list: nothing to say."""
    paired: list[str] = field(default_factory=list)
    """Markdown: with exactly two runs, the paired comparison over their shared tasks (``paired.py``)."""
    paired_rows: list[dict[str, Any]] = field(default_factory=list)
    """The same comparisons as data, for the LaTeX and CSV outputs: one row per pair and metric (``a``, ``b``,
    ``metric``, ``tasks``, ``diff``, ``low``, ``high``, ``wins``, ``losses``, ``p_value``, ``ratio``)."""
    caption: str = ""
    """One line for LaTeX captions: the definitions in brief."""
    fast_p: list[float] = field(default_factory=lambda: [0.0, 1.0, 1.5, 2.0])
    """The fast_p thresholds of the tables."""
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0
    """The bootstrap's settings, for what is computed after the tables (the anytime curves)."""
    arms: list[Arm] = field(default_factory=list)
    """The runs as arms (``seeds.py``): runs that differ only in their seed are one, tabled as one row."""
    arm_stats: list[dict[str, GroupStats] | None] = field(default_factory=list)
    """Per arm (in ``arms`` order): the pooled statistics of an arm of several seeds; None for a single run."""

    def rows(self, group: str) -> list[TableRow]:
        """The table of one group: each arm (a run, or the runs of several seeds pooled) with tasks in it, then each
        published row for it."""
        by_path = {run.path: stats for run, stats in zip(self.runs, self.stats)}
        if self.arms:
            tabled = [
                (arm.label, pooled if pooled is not None else by_path[arm.runs[0].path])
                for arm, pooled in zip(self.arms, self.arm_stats)
            ]
        else:
            tabled = [(run.label, stats) for run, stats in zip(self.runs, self.stats)]
        out = [TableRow(label, "run", stats[group].values) for label, stats in tabled if group in stats]
        for table in self.published:
            for row in table.rows:
                if row.group == group:
                    values = {k: Estimate(v) for k, v in row.values.items()}
                    if "correct_pct" in values:  # fast_0 is the correct rate, by definition
                        values.setdefault("fast_0_pct", values["correct_pct"])
                    out.append(TableRow(row.label, table.name, values))
        return out
