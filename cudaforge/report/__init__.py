"""Reports: tables (Markdown, LaTeX, CSV) and plots from run directories, beside published results.

- ``make_report(runs, cfg, **fields)``: what ``cudaforge report`` calls with its ``ReportConfig`` whole (library
  callers name ``ReportConfig`` fields as keyword arguments: ``report_config``).
- ``build_report`` / ``write_report``: the same in two steps (compute, then write).
- ``run_stats`` / ``group_stats``: the statistics of a list of ``TaskResult`` (docs/reports.md defines them).
- ``load_published`` / ``select_published``: the tables under ``benchmarks/published/``.

Nothing here is needed for a run to succeed; matplotlib is needed only for plots.
"""

from __future__ import annotations

from cudaforge.report.build import build_report, make_report, write_report
from cudaforge.report.load import RunData, load_run, load_runs, task_level
from cudaforge.report.model import Report, TableRow
from cudaforge.report.published import PublishedRow, PublishedTable, load_published, select_published
from cudaforge.report.stats import Estimate, FailedAs, GroupStats, group_stats, metrics, run_stats

__all__ = [
    "Estimate",
    "FailedAs",
    "GroupStats",
    "PublishedRow",
    "PublishedTable",
    "Report",
    "RunData",
    "TableRow",
    "build_report",
    "group_stats",
    "load_published",
    "load_run",
    "load_runs",
    "make_report",
    "metrics",
    "run_stats",
    "select_published",
    "task_level",
    "write_report",
]
