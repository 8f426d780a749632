"""A report: statistics of one or more run directories beside published tables, written as files.

``make_report`` is what ``cudaforge report`` calls, with its ``ReportConfig`` whole; library callers name any of its
fields as keyword arguments.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cudaforge.report import tables
from cudaforge.report.load import RunData, load_runs, run_concurrency
from cudaforge.report.model import Report
from cudaforge.report.paired import paired_lines
from cudaforge.report.published import select_published
from cudaforge.report.sections import section_lines
from cudaforge.report.seeds import arm_notes, arm_stats, arms
from cudaforge.report.settings import ReportConfig
from cudaforge.report.stats import (
    FailedAs,
    Metric,
    group_results,
    held_out_summary,
    measurement_summary,
    metrics,
    run_stats,
    speedup_over_compile,
)
from cudaforge.tasks.identity import difference_text, other_problem_set, version_line
from cudaforge.track.store import expand_run_dirs

_FAILED_TEXT = {
    FailedAs.zero: "a task without a correct kernel counts as speedup 0 (failed_as=zero, the default: our reading "
    "of the CudaForge paper, whose overall Perf 1.677 is the task-weighted mean of its level Perfs, so failed "
    "tasks are in the denominator)",
    FailedAs.one: "a task without a correct kernel counts as speedup 1, as if PyTorch's own code were kept "
    "(failed_as=one)",
    FailedAs.exclude: "tasks without a correct kernel are left out: statistics over correct kernels only "
    "(failed_as=exclude)",
}


_NOT_RUN_TEXT = {
    "llm_unavailable": "provider unreachable",
    "gpu_unavailable": "GPU lost",
    "sandbox_unavailable": "sandbox could not be built",
    "internal_error": "internal error of cudaforge",
}


def _notes(report: Report, bootstrap: int, confidence: float, seed: int) -> list[str]:
    geo = "over timed tasks, failed ones as 1" if report.failed_as is FailedAs.one else "over correct timed tasks only"
    notes = [
        "Correct %: tasks with a correct kernel over all tasks. Median, 75th pct (linear interpolation) and Perf "
        f"(arithmetic mean) are over each task's best speedup, where {_FAILED_TEXT[report.failed_as]}. "
        f"Geo. mean: {geo}.",
        "fast_p (KernelBench): tasks whose kernel is correct and faster than p times PyTorch, over all tasks; "
        "fast_0 is the correct rate. $ / min / tokens per kernel: means over all tasks (tokens in + out). "
        "wall min / kernel: wall clock from a task's first step to its last, what the CudaForge paper reports as "
        "minutes per kernel when tasks run one at a time"
        + (
            "; active min / kernel: the same without the time spent waiting for a GPU's lock."
            if any(m.key == "active_minutes" for m in report.metrics)
            else "."
        ),
        f"Intervals: {confidence:.0%} percentile bootstrap over tasks ({bootstrap} resamples, seed {seed})."
        if bootstrap > 0
        else "No intervals (report.bootstrap=0).",
    ]
    for run, stats in zip(report.runs, report.stats):
        overall = stats["overall"]
        if overall.n_untimed:
            notes.append(
                f"{run.label}: {overall.n_untimed} correct task(s) untimed (no GPU timing): counted in "
                "Correct % and fast_0, left out of every other speedup statistic and its denominator."
            )
        if overall.unpriced_calls:
            notes.append(
                f"{run.label}: {overall.unpriced_calls} LLM call(s) of unpriced models: $ / kernel "
                "leaves them out (a lower bound; tasks with only unpriced calls have no dollar figure, "
                "and a table without any shows `unpriced`)."
            )
        if run.not_run:
            reasons: dict[str, int] = {}
            for reason in run.not_run.values():
                reasons[reason] = reasons.get(reason, 0) + 1
            why = ", ".join(f"{n} {_NOT_RUN_TEXT.get(r, r)}" for r, n in sorted(reasons.items()))
            ids = sorted(run.not_run)
            more = " ..." if len(ids) > 5 else ""
            notes.append(
                f"{run.label}: {len(ids)} task(s) not run ({why}): in no statistic, neither as failed nor "
                f"in any denominator; the same `cudaforge run` command runs them again: "
                f"{', '.join(ids[:5])}{more}"
            )
        if run.unfinished:
            more = " ..." if len(run.unfinished) > 5 else ""
            notes.append(
                f"{run.label}: {len(run.unfinished)} task(s) started but without a result "
                f"(not in the tables): {', '.join(run.unfinished[:5])}{more}"
            )
        notes += (
            _time_notes(run)
            + _measurement_notes(run)
            + _prompt_notes(run)
            + _held_out_notes(run)
            + _compile_notes(run)
            + _dropped_notes(run)
        )
        notes.append(
            f"{run.label}: per-round dollars from {run.spend_source['dollars']}; "
            f"per-round minutes from {run.spend_source['minutes']}."
        )
    for table in report.published:
        notes.append(f"{table.name}: {table.title}. Source: {table.source}. Missing cells: not published.")
    return notes


def _compile_notes(run: RunData) -> list[str]:
    """How the speedups over torch.compile were had, when a run timed it beside eager."""
    pairs = [r.compile_beside for r in run.results if speedup_over_compile(r)]
    if not pairs:
        return []
    modes = sorted({str(p.get("mode")) for p in pairs})
    cached = sum(1 for p in pairs if p.get("cached"))
    timed = sum(1 for r in run.results if r.correct and r.best_speedup)
    return [
        f"{run.label}: vs compile: each timed correct kernel's speedup over eager divided by torch.compile's "
        f"(mode {', '.join(modes)}) over eager, both timed in one child on the same GPU model "
        f"({len(pairs)} of {timed} timed task(s); {cached} pair(s) from the cache). fast_p vs compile counts a "
        "failed task as not fast and leaves out a correct one without the pair." + _graph_note(pairs)
    ]


def _graph_note(pairs: list[dict[str, Any]]) -> str:
    """Where compile replayed CUDA graphs and came out slower than eager: the graph copies each call's new inputs."""
    graphs = [p for p in pairs if str(p.get("mode")) in ("max-autotune", "reduce-overhead")]
    slower = [p for p in graphs if (p.get("compile_over_eager") or 1.0) < 1.0]
    if not slower:
        return ""
    return (
        f" In {len(slower)} of {len(pairs)} pair(s) torch.compile was slower than eager: its mode replays CUDA "
        "graphs, which copy every call's new inputs into the graph's own buffers (our reading of the H200 "
        "figures, docs/evaluation.md); eval.compile_beside_mode=max-autotune-no-cudagraphs compares kernels "
        "without that copy."
    )


def _dropped_notes(run: RunData) -> list[str]:
    """The agent replies of a run that could not be used (issue 53): Coder replies with no code and Judge replies
    with no usable advice, counted with their commonest reasons."""
    coder: dict[str, int] = {}
    judge: dict[str, int] = {}
    for r in run.results:
        for h in r.history:
            if h.status == "no_code":
                why = (h.message or "no reason recorded").split("\n")[0][:80]
                coder[why] = coder.get(why, 0) + 1
            failure = (h.feedback or {}).get("failure") if h.judge_mode else None
            if failure:
                why = str(failure).split("\n")[0][:80]
                judge[why] = judge.get(why, 0) + 1
    notes = []
    for role, counts in (("Coder replies held no code", coder), ("Judge replies could not be used", judge)):
        if counts:
            top = sorted(counts.items(), key=lambda kv: -kv[1])[:3]
            reasons = "; ".join(f"{n}x {why}" for why, n in top)
            notes.append(f"{run.label}: {sum(counts.values())} {role} ({reasons}).")
    return notes


def _held_out_notes(run: RunData) -> list[str]:
    """Which of a run's kernels failed a held-out shape, and why the tasks without one have none."""
    checked = [r for r in run.results if r.correct and r.held_out]
    if not checked:
        return []
    failed: list[str] = []
    none: dict[str, int] = {}
    for r in checked:
        if held_out_summary(r)["correct"] is False:
            bad = [
                f"{row['shape']} ({', '.join(f'{k}={v}' for k, v in row['sizes'].items())}): {row['status']}"
                + (f", {', '.join(row['flags'])}" if row.get("flags") else "")
                for row in r.held_out["shapes"]
                if row.get("status") != "skipped" and (not row.get("correct") or row.get("flags"))
            ]
            failed.append(f"{r.task_id} [{'; '.join(bad)}]")
        elif not held_out_summary(r)["checked"]:
            why = r.held_out.get("note") or "every shape skipped: " + "; ".join(
                str(row.get("message")) for row in r.held_out.get("shapes", [])
            )
            none[why] = none.get(why, 0) + 1
    notes = [
        f"{run.label}: held-out shapes (sizes the Coder never saw, checked after the loop): held-out correct % is "
        "over the tasks with a correct kernel and at least one held-out shape evaluated; its geo. mean over those "
        "correct on every shape and timed, of each task's geometric mean over its shapes."
    ]
    if failed:
        notes.append(
            f"{run.label}: {len(failed)} kernel(s) correct on the scored shape failed a held-out one: "
            + "; ".join(failed[:5])
            + (" ..." if len(failed) > 5 else "")
        )
    for why, n in sorted(none.items()):
        notes.append(f"{run.label}: {n} task(s) without a held-out shape: {why}")
    return notes


def _prompt_notes(run: RunData) -> list[str]:
    """Which prompts a run's agents were shown: ours, the paper's paraphrase, or the authors' own builders."""
    import json

    from cudaforge.track.store import PROMPTS_FILE

    try:
        record = json.loads((Path(run.path) / PROMPTS_FILE).read_text())
    except (OSError, ValueError):
        record = None
    if isinstance(record, dict) and record.get("template_set") == "cudaforge_authors":
        commit = str(record.get("commit") or "no git commit")[:12]
        return [
            f"{run.label}: prompts from the CudaForge authors' own builders ({record.get('authors_root')} at "
            f"{commit}; their GPU sheet's {record.get('gpu_name')!r})."
        ]
    template_set = (run.config.get("agents") or {}).get("template_set") if isinstance(run.config, dict) else None
    if template_set == "cudaforge_paper":
        return [
            f"{run.label}: prompts: cudaforge_paper, our paraphrase of the CudaForge paper's prompts (not the "
            "authors' text: agents=cudaforge_authors reads theirs from a checkout)."
        ]
    return []


def _measurement_notes(run: RunData) -> list[str]:
    """What the precision column means for this run, the wins a precision probe alone reproduces, timings that never
    got a clean batch, and the launch-inclusive number beside ours."""
    measured = measurement_summary(run.results)
    notes = []
    if measured["precision"]:
        named = ", ".join(f"{n} task(s) under {name}" for name, n in sorted(measured["precision"].items()))
        notes.append(
            f"{run.label}: the reference's precision in the best speedups: {named} (strict_fp32: no "
            "TF32; torch_default: cuDNN in TF32, as PyTorch and KernelBench's harness leave it; unrecorded: "
            "results made before precisions were kept)."
        )
    if measured["probe_reproduced"]:
        ids = measured["probe_reproduced"]
        notes.append(
            f"{run.label}: {len(ids)} win(s) over strict fp32 that the reference alone reproduces at a "
            f"precision the task's tolerance allows (TF32 or bf16): {', '.join(ids[:5])}"
            f"{' ...' if len(ids) > 5 else ''}"
        )
    if measured["unclean"]:
        ids = measured["unclean"]
        notes.append(
            f"{run.label}: {len(ids)} best speedup(s) timed without one clean batch (the GPU throttled or "
            f"its clock off in every batch): {', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''}"
        )
    if measured["launch_inclusive_geomean"] is not None:
        notes.append(
            f"{run.label}: launch-inclusive speedup (CUDA events around each call with the launch inside, no "
            f"L2 flush: how KernelBench and the CudaForge paper time), geometric mean over "
            f"{measured['launch_inclusive_tasks']} task(s): {measured['launch_inclusive_geomean']:.3f}x."
        )
    return notes


def _time_notes(run: RunData) -> list[str]:
    """Where a run's minutes per kernel come from, and why they may not compare with the paper's."""
    notes = []
    old = sum(1 for r in run.results if r.wall_minutes is None)
    if old:
        notes.append(
            f"{run.label}: {old} task(s) recorded before wall and active minutes were: their wall min / "
            "kernel is TaskResult.minutes, the steps' summed time (GPU-lock waits included), and they "
            "have no active minutes."
        )
    concurrency = run_concurrency(run.config)
    if concurrency and concurrency > 1:
        notes.append(
            f"{run.label}: up to {concurrency} tasks ran at once (concurrency={concurrency}), so its wall "
            "minutes include waits for GPUs other tasks held and are not comparable with the CudaForge "
            "paper's minutes per kernel (one task at a time); active min / kernel leaves those waits out."
        )
    return notes


def problem_set_lines(runs: list[RunData]) -> list[str]:
    """One line when every run names the same problem set, else one per run; then, for each run whose problem
    set has another digest than the first known run's, one line saying how many tasks differ."""
    records = [run.problem_set for run in runs]
    texts = [version_line(record) for record in records]
    if len(set(texts)) == 1:
        out = [f"Every run: {texts[0]}." if len(runs) > 1 else f"{texts[0][0].upper()}{texts[0][1:]}."]
    else:
        out = [f"{run.label}: {text}." for run, text in zip(runs, texts)]
    for run, record in zip(runs, records):
        other = other_problem_set(record)
        if other:
            out.append(
                f"{run.label}: not the problem set its configuration pins ({other}; "
                "suite.allow_other_problem_set=true): its numbers are not comparable with the pinned set's."
            )
    known = [(run, record) for run, record in zip(runs, records) if record]
    for run, record in known[1:]:
        first, base = known[0]
        if record.get("digest") != base.get("digest"):
            out.append(f"{first.label} and {run.label} ran different problem sets: {difference_text(base, record)}.")
    return out


def _rebase_runs(loaded: list[RunData], baseline: str | Path, baseline_mode: str) -> str:
    """The runs' speedups taken against a stored baseline (``rebase.py``), in place; the report's note on it."""
    from cudaforge.report.rebase import load_baseline, rebase

    times = load_baseline(baseline, str(getattr(baseline_mode, "value", baseline_mode)))
    missing = 0
    for run in loaded:
        run.results, lost = rebase(run.results, times)
        missing += lost
        for r in run.results:  # a rebased speedup is no longer the one the torch.compile pair divides
            r.compile_beside = {}
    return (
        f"Speedups are against the stored {baseline_mode} baseline {baseline} (no intervals: the two "
        f"medians come from different sessions); {missing} correct task(s) had no time to rebase."
    )


def _report_metrics(loaded: list[RunData], fast_p: list[float]) -> list[Metric]:
    """The metric columns of the runs' tables: the fixed ones, and those whose data some run has."""
    results = [r for run in loaded for r in run.results]
    return metrics(
        fast_p,
        active_minutes=any((run_concurrency(run.config) or 1) > 1 for run in loaded),
        held_out=any(r.held_out for r in results),
        compile_beside=any(speedup_over_compile(r) for r in results),
        checks=any(r.best_checks for r in results),
        decided=any((r.held_out or {}).get("decided") for r in results),
    )


def report_config(
    runs: Iterable[str | Path] | None = None, cfg: ReportConfig | None = None, **options: Any
) -> ReportConfig:
    """The ``ReportConfig`` a report is made with: ``cfg`` (default: ``ReportConfig`` with no published table, the
    library's default; the command's config adds Table 1), with ``runs`` and any of its fields in ``options`` put in
    (an unknown name raises ``TypeError``)."""
    base = cfg if cfg is not None else ReportConfig(compare=[])
    if runs is not None:
        options["runs"] = [str(r) for r in runs]
    return dataclasses.replace(base, **options)


def build_report(runs: Iterable[str | Path] | None = None, cfg: ReportConfig | None = None, **options: Any) -> Report:
    """Read the runs, compute every statistic, pick the published tables (nothing is written); the settings are
    ``report_config(runs, cfg, **options)``'s (``ReportConfig``'s fields: docs/reports.md).

    ``pool_seeds``: runs that differ only in their seed are one row (``seeds.py``).

    ``baseline``: a ``baseline.jsonl`` whose ``baseline_mode`` medians replace the in-session reference
    as the speedups' denominator (see ``rebase.py``).
    """
    cfg = report_config(runs, cfg, **options)
    runs, labels, confidence = cfg.runs, cfg.labels, cfg.confidence
    bootstrap, seed, paired_with = cfg.bootstrap, cfg.seed, cfg.paired_with
    if not runs:
        raise ValueError("say which run directories: cudaforge report RUN_DIR [RUN_DIR ...]")
    if not 0 < confidence < 1:
        raise ValueError(f"report.confidence must be between 0 and 1, not {confidence}")
    failed_as = FailedAs(getattr(cfg.failed_as, "value", cfg.failed_as))
    fast_p = [float(p) for p in cfg.fast_p]
    run_dirs, skipped = expand_run_dirs(list(runs))  # a sweep folder: its jobs; multirun.yaml from a glob: skipped
    if labels and len(labels) == len(runs) and len(run_dirs) != len(runs):
        raise ValueError(
            f"{len(labels)} labels for {len(runs)} paths that hold {len(run_dirs)} run directories: "
            "give one label per run directory, or none"
        )
    loaded = load_runs(list(run_dirs), labels)
    mode = str(getattr(cfg.baseline_mode, "value", cfg.baseline_mode))
    rebased_note = _rebase_runs(loaded, cfg.baseline, mode) if cfg.baseline else ""
    options = dict(failed_as=failed_as, fast_p=fast_p, bootstrap=bootstrap, confidence=confidence, seed=seed)
    stats = [run_stats(run.results, **options) for run in loaded]
    levels = {g for s in stats for g in s if g.startswith("level")}
    others = ["other"] if any("other" in s for s in stats) else []
    groups = sorted(levels, key=lambda g: int(g[5:])) + others + ["overall"]
    report = Report(
        loaded,
        stats,
        select_published(list(cfg.compare), cfg.published_dir),
        _report_metrics(loaded, fast_p),
        groups,
        failed_as,
    )
    report.fast_p, report.bootstrap, report.confidence, report.seed = fast_p, bootstrap, confidence, seed
    report.arms = arms(loaded, pool=cfg.pool_seeds)
    report.arm_stats = [arm_stats(arm, **options) if arm.pooled else None for arm in report.arms]
    over = "seeds and tasks" if any(arm.pooled for arm in report.arms) else "tasks"
    report.caption = (
        f"Perf is the mean best speedup, failed tasks as {failed_as.value}; fast_p: correct and "
        f"more than p times faster; brackets: {confidence:.0%} bootstrap intervals over {over}."
    )
    report.notes = (
        _notes(report, bootstrap, confidence, seed)
        + arm_notes(report.arms)
        + ([rebased_note] if rebased_note else [])
        + [f"{note[0].upper()}{note[1:]}." for note in skipped]
    )
    report.problem_sets = problem_set_lines(loaded)
    report.sections = section_lines(loaded)
    report.paired = paired_lines(
        loaded,
        failed_as=failed_as,
        bootstrap=bootstrap,
        confidence=confidence,
        seed=seed,
        against=paired_with,
        arms=report.arms,
        rows=report.paired_rows,
    )
    return report


def write_report(report: Report, out_dir: str | Path, plots: bool = True) -> list[Path]:
    """Write report.md, report.tex, report.csv, scaling.csv, anytime.csv and (``plots``) plots/*.png; returns the
    paths."""
    from cudaforge.report import anytime
    from cudaforge.report.scaling import AXES, curve

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    curves = [
        curve(run, [r.task_id for r in results], axis, report.failed_as, group)
        for run in report.runs
        for group, results in group_results(run.results).items()
        for axis in AXES
    ]
    arms_ = report.arms or arms(report.runs, pool=False)
    anytime_curves = anytime.all_curves(
        arms_,
        failed_as=report.failed_as,
        fast_p=report.fast_p,
        bootstrap=report.bootstrap,
        confidence=report.confidence,
        seed=report.seed,
    )
    written = []
    if plots:  # first: a figure without data adds a note to the tables
        from cudaforge.report.plots import plot_all

        written += plot_all(report, curves, out / "plots", anytime_curves)
    written.append(anytime.write_csv(anytime_curves, out / anytime.CSV_FILE))
    with (out / "scaling.csv").open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["run", "group", "axis", "budget", "perf"])
        for c in curves:
            for b, p in zip(c.budgets, c.perf):
                writer.writerow([c.run, c.group, c.axis, repr(b), "" if p is None else repr(p)])
    written.append(out / "scaling.csv")
    for name, text in (
        ("report.md", tables.markdown(report)),
        ("report.tex", tables.latex(report)),
        ("report.csv", tables.csv_text(report)),
    ):
        (out / name).write_text(text)
        written.append(out / name)
    return written


def make_report(
    runs: Iterable[str | Path] | None = None, cfg: ReportConfig | None = None, **options: Any
) -> tuple[Report, list[Path]]:
    """Build the report and write it to ``out_dir`` (default ``<first run>/report``); returns it and the paths. The
    settings are ``report_config(runs, cfg, **options)``'s: ``cudaforge report`` passes its ``ReportConfig`` whole.

    With ``plots`` and no matplotlib, the tables are written all the same and one note names the figures
    skipped (``plot_all``).
    """
    cfg = report_config(runs, cfg, **options)
    report = build_report(cfg=cfg)
    target = Path(cfg.out_dir) if cfg.out_dir else report.runs[0].path / "report"
    return report, write_report(report, target, plots=cfg.plots)
