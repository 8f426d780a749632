"""Writers: a report's tables as Markdown, LaTeX and CSV.

Layout as in the CudaForge paper: one table per level and one overall (and one per published group of several
levels, such as the paper's "Level 1 & 2"), a row per method (each run, then each published row), a column per
metric; the Markdown puts each published table's source, and its rows' own, above them. A run's cells carry their
bootstrap interval, ``1.107 [1.021, 1.213]``, unless it is a single point (every resample gave the same value,
e.g. 100% correct); the CSV keeps them all.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from cudaforge.report.model import Report
from cudaforge.report.sections import added_lines
from cudaforge.report.seeds import run_seed
from cudaforge.report.stats import Estimate, Metric, measurement_summary

MISSING = "–"


def group_title(group: str) -> str:
    """``level1`` -> ``Level 1``; ``level1_2`` -> ``Levels 1 & 2``; ``overall`` -> ``Overall``."""
    if group.startswith("level"):
        levels = group[5:].split("_")
        return f"Level {levels[0]}" if len(levels) == 1 else "Levels " + " & ".join(levels)
    return group.capitalize()


def _levels(group: str) -> list[int]:
    return [int(n) for n in group[5:].split("_")]


def table_groups(report: Report) -> list[str]:
    """The groups with a table: the report's, plus each group of several levels (``level1_2``) that a published
    row names and whose levels all have a table, placed after its last level. Such a table holds published rows
    only: runs are tabled per level and overall."""
    levels = [g for g in report.groups if g.startswith("level")]
    combined = {row.group for table in report.published for row in table.rows if "_" in row.group}
    levels += [g for g in combined if all(f"level{n}" in levels for n in _levels(g))]
    levels.sort(key=lambda g: (max(_levels(g)), len(_levels(g)), _levels(g)))
    return levels + [g for g in report.groups if not g.startswith("level")]


def published_sources(report: Report, groups: list[str]) -> list[str]:
    """Markdown lines: per published table, its title and source, then each tabled row's own source and note."""
    out = []
    for table in report.published:
        out += ["", f"Compared with **{table.name}**: {table.title} ({table.source})."]
        rows = [row for row in table.rows if row.group in groups and (row.source or row.note)]
        if rows:
            out.append("")
        for row in rows:
            text = "; ".join(t for t in (row.source, row.note) if t)
            out.append(f"- {row.label}, {group_title(row.group)}: {text}.")
    return out


def format_value(metric: Metric, value: float | None) -> str:
    """A number as its column shows it (``–`` when missing)."""
    if value is None:
        return MISSING
    if metric.key in ("tasks", "tokens"):
        return f"{value:,.0f}"
    return f"{value:.{metric.digits}f}"


def format_cell(metric: Metric, est: Estimate | None, ci: bool = True) -> str:
    """A value with its interval, when it has one (no value: why, e.g. ``unpriced``, else a dash)."""
    if est is None or est.value is None:
        return est.missing if est is not None and est.missing else MISSING
    text = format_value(metric, est.value)
    if ci and est.low is not None and est.high is not None and not est.low == est.high == est.value:
        text += f" [{format_value(metric, est.low)}, {format_value(metric, est.high)}]"
    return text


def with_not_run(run: Any) -> str:
    """A run's correct tasks over its finished and not-run tasks together (``n/m (pct%)``): the Correct % a reader
    gets when the tasks the infrastructure stopped count as failed."""
    total = len(run.results) + len(run.not_run)
    correct = sum(1 for r in run.results if r.correct)
    return f"{correct}/{total} ({100 * correct / total:.1f}%)" if total else "–"


def markdown(report: Report) -> str:
    """The whole report as Markdown: the runs, a table per group, the notes."""
    seeds = any(arm.pooled for arm in report.arms)  # a seed column when some row pools seeds
    out = [
        "# cudaforge report",
        "",
        "| run | directory | "
        + ("seed | " if seeds else "")
        + "tasks | not run | unfinished | correct, not run as failed | precision | probe reproduces |",
        "| --- | --- | " + ("---: | " if seeds else "") + "---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for run in report.runs:
        measured = measurement_summary(run.results)
        precision = (
            ", ".join(
                f"{name} ({n})" if len(measured["precision"]) > 1 else name
                for name, n in sorted(measured["precision"].items())
            )
            or "-"
        )
        seed = f"{run_seed(run)} | " if seeds else ""
        out.append(
            f"| {run.label} | `{run.path}` | {seed}{len(run.results)} | {len(run.not_run)} | "
            f"{len(run.unfinished)} | {with_not_run(run)} | {precision} | {len(measured['probe_reproduced'])} |"
        )
    sets = report.problem_sets  # one line as it is, several as a list
    out += [""] + (sets if len(sets) == 1 else [f"- {line}" for line in sets]) if sets else []
    groups = table_groups(report)
    out += published_sources(report, groups)
    for group in groups:
        out += ["", f"## {group_title(group)}", ""]
        if group not in report.groups:
            out += ["Published rows only: runs are tabled per level and overall.", ""]
        out.append("| | " + " | ".join(m.header for m in report.metrics) + " |")
        out.append("| --- | " + " | ".join("---:" for _ in report.metrics) + " |")
        for row in report.rows(group):
            cells = [format_cell(m, row.values.get(m.key)) for m in report.metrics]
            out.append(f"| {row.label} | " + " | ".join(cells) + " |")
    out += report.sections.get("protocols", [])
    out += report.paired
    out += report.sections.get("integrations", [])
    out += report.sections.get("search", [])
    out += ["", "## Notes", ""] + [f"- {note}" for note in report.notes]
    out += added_lines(report.sections)  # the sections of installed packages, after the built-in ones
    return "\n".join(out) + "\n"


_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """Text safe inside a LaTeX table."""
    return "".join(_LATEX_ESCAPES.get(c, c) for c in text).replace(MISSING, "--")


def _latex_cell(metric: Metric, est: Estimate | None) -> str:
    if est is None or est.value is None:
        return latex_escape(est.missing) if est is not None and est.missing else "--"
    text = format_value(metric, est.value).replace(",", "{,}")
    if est.low is not None and est.high is not None and not est.low == est.high == est.value:
        low, high = (format_value(metric, x).replace(",", "{,}") for x in (est.low, est.high))
        text += rf" {{\scriptsize[{low}, {high}]}}"
    return text


def latex(report: Report) -> str:
    """One booktabs table per group (needs ``\\usepackage{booktabs,graphicx}``)."""
    out = ["% Generated by `cudaforge report`; needs \\usepackage{booktabs,graphicx}."]
    for group in table_groups(report):
        rows = report.rows(group)
        out += [
            "",
            r"\begin{table}[t]",
            r"\centering",
            rf"\caption{{{latex_escape(group_title(group))}: {latex_escape(report.caption)}}}",
            r"\resizebox{\textwidth}{!}{%",
            r"\begin{tabular}{l" + "r" * len(report.metrics) + "}",
            r"\toprule",
            " & ".join([""] + [latex_escape(m.header) for m in report.metrics]) + r" \\",
            r"\midrule",
        ]
        previous = None
        for row in rows:
            if previous == "run" and row.source != "run":
                out.append(r"\midrule")
            previous = row.source
            cells = [latex_escape(row.label)] + [_latex_cell(m, row.values.get(m.key)) for m in report.metrics]
            out.append(" & ".join(cells) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}}", r"\end{table}"]
    out += latex_paired(report)
    return "\n".join(out) + "\n"


def latex_paired(report: Report) -> list[str]:
    """One booktabs table per paired comparison (A against B): each metric's difference with its interval, the
    tasks A does better and worse on, and the sign test's p-value."""
    out: list[str] = []
    pairs = dict.fromkeys((row["a"], row["b"]) for row in report.paired_rows)
    for a, b in pairs:
        out += [
            "",
            r"\begin{table}[t]",
            r"\centering",
            rf"\caption{{Paired comparison over shared tasks: {latex_escape(a)} (A) against {latex_escape(b)} (B)}}",
            r"\begin{tabular}{lrrrr}",
            r"\toprule",
            r"metric & tasks & A $-$ B & A better / worse & sign test $p$ \\",
            r"\midrule",
        ]
        for row in (r for r in report.paired_rows if (r["a"], r["b"]) == (a, b)):
            value = f"{row['diff']:.3g}" + ("x" if row["ratio"] else "")
            interval = rf" {{\scriptsize[{row['low']:.3g}, {row['high']:.3g}]}}"
            out.append(
                f"{latex_escape(row['metric'])} & {row['tasks']} & {value}{interval} & "
                f"{row['wins']} / {row['losses']} & {row['p_value']:.3g} \\\\"
            )
        out += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return out


def csv_text(report: Report) -> str:
    """Long format: one line per (group, row, metric) with the value and its interval."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["group", "label", "source", "metric", "value", "ci_low", "ci_high"])
    for group in table_groups(report):
        for row in report.rows(group):
            for m in report.metrics:
                est = row.values.get(m.key)
                if est is None or est.value is None:
                    continue
                value = int(est.value) if m.key == "tasks" else est.value
                low, high = ("" if x is None else repr(x) for x in (est.low, est.high))
                writer.writerow([group, row.label, row.source, m.key, repr(value), low, high])
    for p in report.paired_rows:  # the paired comparisons: the difference with its interval, then the sign test
        label = f"{p['a']} vs {p['b']}"
        writer.writerow(["paired", label, "paired", p["metric"], repr(p["diff"]), repr(p["low"]), repr(p["high"])])
        writer.writerow(["paired", label, "paired", f"{p['metric']} sign test p", repr(p["p_value"]), "", ""])
    return buf.getvalue()
