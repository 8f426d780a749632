"""Reports: tables (Markdown, LaTeX, CSV) and plots from run directories, beside published results.

- ``make_report(runs, ...)``: what ``cudaforge report`` calls (keyword arguments = ``ReportConfig`` fields).
- ``build_report`` / ``write_report``: the same in two steps (compute, then write).
- ``run_stats`` / ``group_stats``: the statistics of a list of ``TaskResult`` (docs/reports.md defines them).
- ``load_published`` / ``select_published``: the tables under ``benchmarks/published/``.
- ``runs_override``: turns ``cudaforge report DIR DIR key=value`` into Hydra overrides.

Nothing here is needed for a run to succeed; matplotlib is needed only for plots.
"""

from __future__ import annotations

import re
from pathlib import Path

from cudaforge.report.build import build_report, make_report, write_report
from cudaforge.report.load import RunData, load_run, load_runs, task_level
from cudaforge.report.model import Report, TableRow
from cudaforge.report.published import PublishedRow, PublishedTable, load_published, select_published
from cudaforge.report.stats import Estimate, FailedAs, GroupStats, group_stats, metrics, run_stats

# Hydra's command-line flags that take the next argument as their value.
_FLAGS_WITH_VALUE = {
    "--cfg",
    "-c",
    "--package",
    "-p",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--experimental-rerun",
}
_INFO_VALUES = {"all", "config", "defaults", "defaults-tree", "plugins", "searchpath"}


def _quote(text: str) -> str:
    """A Hydra quoted string: backslashes before a quote (or the closing one) doubled, quotes escaped."""
    text = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, text)
    return "'" + text.replace("'", "\\'") + "'"


def runs_override(args: list[str]) -> list[str]:
    """``cudaforge report``'s arguments with positional run directories turned into ``report.runs=[...]``.

    A positional argument is one that is neither an override (it has ``=``) nor a flag (``-...``) nor a
    flag's value (an existing directory counts as positional even when its name has ``=``, as Hydra's sweep
    folders do); each becomes an absolute path, and the override takes the first one's place (Hydra wants
    overrides before flags such as ``--cfg job``). Giving both forms is an error.
    """
    dirs, rest, expect_value, where = [], [], False, 0
    for i, arg in enumerate(args):
        if expect_value:
            rest.append(arg)
            expect_value = False
        elif arg.startswith("-"):
            rest.append(arg)
            following = args[i + 1] if i + 1 < len(args) else ""
            expect_value = arg in _FLAGS_WITH_VALUE or (arg in ("--info", "-i") and following in _INFO_VALUES)
        elif "=" in arg and not Path(arg).expanduser().is_dir():
            rest.append(arg)
        else:
            where = where if dirs else len(rest)
            dirs.append(arg)
    if dirs:
        if any(a.lstrip("+~").startswith("report.runs=") for a in rest):
            raise ValueError("give run directories either as positional arguments or as report.runs=[...], not both")
        paths = ",".join(_quote(str(Path(d).expanduser().resolve())) for d in dirs)
        rest.insert(where, f"report.runs=[{paths}]")  # where the first one was: overrides go before flags
    return rest


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
    "runs_override",
    "select_published",
    "task_level",
    "write_report",
]
