"""PNG figures of a report: the speedup distribution per level, and the scaling figures (Perf against
rounds, dollars and minutes per kernel), with published Perf values as dashed reference lines.

matplotlib is optional (``pip install 'cudaforge[report]'``): without it ``plot_all`` draws nothing and adds
one note naming the figures it skipped and why; the tables are written all the same.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cudaforge.report.anytime import AnytimeCurve, drawable, panel_metrics
from cudaforge.report.model import Report
from cudaforge.report.scaling import Curve
from cudaforge.report.stats import group_results
from cudaforge.report.tables import group_title

_AXIS_LABELS = {"round": "round", "dollars": "dollars spent per kernel ($)", "minutes": "minutes per kernel"}


class PlottingUnavailable(ImportError):
    """matplotlib is not installed."""


def matplotlib_missing() -> bool:
    """True when ``import matplotlib`` fails (nothing is imported when it is there)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return True
    return False


def require_matplotlib():
    """The pyplot module on the Agg backend (PlottingUnavailable, saying what to do, without matplotlib)."""
    try:
        import matplotlib
    except ImportError as exc:
        raise PlottingUnavailable(
            "report plots need matplotlib: pip install 'cudaforge[report]' (or pip install matplotlib), "
            "or turn plots off with report.plots=false"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _grid(plt, n: int):
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), squeeze=False)
    return fig, list(axes[0])


def _speedup_axis(ax, low: float, high: float) -> None:
    """A log-scale speedup axis with plain labels (0.5x, 1x, 2x ...)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ticks = [2.0**k for k in range(-8, 9) if low / 1.05 <= 2.0**k <= high * 1.05]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _speedups(report: Report) -> list[dict[str, list[float]]]:
    """Per run: group -> best speedups of its correct timed tasks."""
    return [
        {
            g: [r.best_speedup for r in rs if r.correct and r.best_speedup]
            for g, rs in group_results(run.results).items()
        }
        for run in report.runs
    ]


def _scaling_curves(curves: list[Curve], axis: str) -> list[Curve]:
    """The curves a scaling figure draws on one axis (none: no figure)."""
    chosen = [c for c in curves if c.axis == axis and any(p is not None for p in c.perf) and c.budgets]
    if axis == "dollars":
        chosen = [c for c in chosen if c.budgets[-1] > 0]  # no priced calls: no dollar axis
    return chosen


def speedup_distribution(report: Report, path: Path) -> Path | None:
    """Histograms of correct timed tasks' best speedups (log scale), a panel per group, a colour per run."""
    speedups = _speedups(report)
    everything = [s for per_run in speedups for s in per_run.get("overall", [])]
    if not everything:
        return None
    plt = require_matplotlib()
    low, high = min(min(everything), 0.5), max(max(everything), 2.0)
    bins = np.geomspace(low / 1.05, high * 1.05, 25)
    fig, axes = _grid(plt, len(report.groups))
    for ax, group in zip(axes, report.groups):
        for run, per_run in zip(report.runs, speedups):
            values = per_run.get(group, [])
            if values:
                ax.hist(values, bins=bins, histtype="step", linewidth=1.5, label=f"{run.label} (n={len(values)})")
        ax.axvline(1.0, color="gray", linestyle=":", linewidth=1)
        _speedup_axis(ax, low, high)
        ax.set_title(group_title(group))
        ax.set_xlabel("best speedup over PyTorch")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("tasks (correct, timed)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def scaling(report: Report, curves: list[Curve], axis: str, path: Path) -> Path | None:
    """Perf (mean best speedup so far) against one budget axis, a panel per group, a line per run."""
    chosen = _scaling_curves(curves, axis)
    if not chosen:
        return None
    plt = require_matplotlib()
    fig, axes = _grid(plt, len(report.groups))
    for ax, group in zip(axes, report.groups):
        for c in (c for c in chosen if c.group == group):
            perf = [np.nan if p is None else p for p in c.perf]
            if axis == "round":  # discrete: a point per round
                ax.plot(c.budgets, perf, marker="o", markersize=3, label=c.run)
            else:  # the best so far holds until the next round ends
                ax.step(c.budgets, perf, where="post", label=c.run)
        published = [
            row for table in report.published for row in table.rows if row.group == group and "perf" in row.values
        ]
        for i, row in enumerate(published):
            grey = plt.get_cmap("Greys")(0.75 - 0.4 * i / max(len(published) - 1, 1))
            ax.axhline(row.values["perf"], color=grey, linestyle="--", linewidth=0.8, label=row.label)
        ax.set_title(group_title(group))
        ax.set_xlabel(_AXIS_LABELS[axis])
        if axis == "round":
            ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=7)
    axes[0].set_ylabel(f"Perf (failed as {report.failed_as.value})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


_NO_TIMED = "plots: no correct timed task, so no speedup distribution and no scaling figures."

_METRIC_LABELS = {"correct_pct": "Correct %", "geomean": "geo. mean speedup (correct, timed)"}


def anytime(report: Report, curves: list[AnytimeCurve], path: Path) -> Path | None:
    """The anytime figure: a row per statistic (Correct %, fast_1, geometric mean), a column per budget (dollars,
    wall minutes per kernel), a line per arm with its band; panels without data say so."""
    rows = panel_metrics([m for m in report.fast_p])
    columns = [axis for axis in ("dollars", "minutes") if any(drawable(curves, axis, m) for m in rows)]
    if not columns:
        return None
    plt = require_matplotlib()
    fig, axes = plt.subplots(len(rows), len(columns), figsize=(4.6 * len(columns), 3.0 * len(rows)), squeeze=False)
    for i, metric in enumerate(rows):
        for j, axis in enumerate(columns):
            ax = axes[i][j]
            chosen = drawable(curves, axis, metric)
            for c in chosen:
                value = [np.nan if v is None else v for v in c.value]
                line = ax.step(c.budgets, value, where="post", label=c.arm)[0]
                low = [np.nan if v is None else v for v in c.low]
                high = [np.nan if v is None else v for v in c.high]
                ax.fill_between(c.budgets, low, high, step="post", alpha=0.2, color=line.get_color(), linewidth=0)
            if not chosen:
                ax.text(
                    0.5,
                    0.5,
                    "no data (no correct timed kernel)" if metric != "correct_pct" else "no data",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                    fontsize=8,
                    color="gray",
                )
            ax.set_xlabel(_AXIS_LABELS[axis])
            ax.set_ylabel(_METRIC_LABELS.get(metric, metric.replace("_pct", " %")))
            if chosen and (i, j) == (0, 0):
                ax.legend(fontsize=7)
    title = "Overall, against what was spent (bands: bootstrap over seeds and tasks)"
    if len(columns) == 1:  # one panel wide: on two lines, or the figure's edges cut it (its first letter went)
        title = title.replace(" (", "\n(")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_all(
    report: Report, curves: list[Curve], out_dir: Path, anytime_curves: list[AnytimeCurve] | None = None
) -> list[Path]:
    """Every figure into ``out_dir``; each one skipped adds a note to the tables (and nothing fails).

    A figure without data (e.g. no timed task) is skipped with a note saying so. Without matplotlib the
    figures that have data are skipped, with one note naming them and what to install.
    """
    anytime_curves = anytime_curves or []
    has_anytime = any(
        drawable(anytime_curves, axis, m) for axis in ("dollars", "minutes") for m in panel_metrics(report.fast_p)
    )
    timed = any(r.correct and r.best_speedup for run in report.runs for r in run.results)
    axes = ("round", "dollars", "minutes")
    no_data = [axis for axis in axes if not _scaling_curves(curves, axis)] if timed else list(axes)
    if matplotlib_missing():
        with_data = (
            (["speedup_distribution.png"] if timed else [])
            + [f"best_vs_{axis}.png" for axis in axes if axis not in no_data]
            + (["anytime.png"] if has_anytime else [])
        )
        if with_data:
            report.notes.append(
                f"plots skipped ({', '.join(with_data)}): matplotlib is not installed "
                "(pip install matplotlib, or report.plots=false to leave plots out)."
            )
        if not timed:
            report.notes.append(_NO_TIMED)
        return []
    made = []
    if has_anytime:
        out_dir.mkdir(parents=True, exist_ok=True)
        made.append(anytime(report, anytime_curves, out_dir / "anytime.png"))
    if not timed:
        report.notes.append(_NO_TIMED)
        return [p for p in made if p is not None]
    out_dir.mkdir(parents=True, exist_ok=True)
    made.append(speedup_distribution(report, out_dir / "speedup_distribution.png"))
    for axis in axes:
        made.append(scaling(report, curves, axis, out_dir / f"best_vs_{axis}.png"))
    report.notes += [f"plots: no data for best speedup against {axis}." for axis in no_data]
    return [p for p in made if p is not None]
