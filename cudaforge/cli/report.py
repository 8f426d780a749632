"""``cudaforge report``: the paper's tables and plots for runs, beside the published rows."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import positional_runs, run_app

if TYPE_CHECKING:
    from cudaforge.config import ReportConfig

HELP = """usage: cudaforge report RUN_DIR [RUN_DIR ...] [key=value ...]

Tables (Markdown, LaTeX, CSV) and plots of one or more runs beside the published ones (the CudaForge paper's
Table 1): correctness, mean and median speedup, fast_p, dollars and minutes per kernel, with intervals.

examples:
  cudaforge report outputs/runs/2026-12-02_10-00-00
  cudaforge report outputs/multirun/2026-12-02_10-00-00          # a sweep: its jobs' runs
  cudaforge report RUN_A RUN_B report.out_dir=report/
  cudaforge report RUN report.failed_as=zero

config group: report (keys report.*). exit status: 0 written, 2 a usage error. See docs/reports.md."""


def _report(cfg: DictConfig) -> int:
    from cudaforge.report import make_report
    from cudaforge.report.plots import PlottingUnavailable
    from cudaforge.report.tables import markdown

    try:
        report, written = make_report(cfg=cast("ReportConfig", OmegaConf.to_object(cfg.report)))
    except PlottingUnavailable as exc:
        print(f"cudaforge report: error: {exc}", file=sys.stderr)
        return 2
    print(markdown(report))
    print(f"report written to {written[-1].parent} ({len(written)} files)")
    return 0


def main(args: list[str]) -> int:
    return run_app("report", _report, positional_runs(args, "report.runs"))
