"""The ``cudaforge`` command: a dispatcher over Hydra apps, one per subcommand.

``cudaforge SUBCOMMAND [ACTION] [HYDRA OVERRIDES...]``. Every subcommand composes the same
config tree (``configs/cudaforge.yaml``), so any override works with any of them. The logic
lives in the library; each app here only composes, calls and prints.
"""

from __future__ import annotations

import json
import sys
from typing import Callable

import hydra
from omegaconf import DictConfig, OmegaConf

from cudaforge.config import CONFIG_DIR, register_configs

USAGE = """usage: cudaforge SUBCOMMAND [ACTION] [key=value ...]

subcommands:
  tasks list    print the selected tasks (e.g. suite=tiny, suite=kernelbench suite.root=PATH)
  tasks audit   flag degenerate tasks (constant or input-independent outputs, NaN/Inf, ...)
  eval          evaluate one candidate: task=ID candidate=PATH.py
  run           run the Coder/Judge loop over a suite
  profile       profile one candidate with Nsight Compute
  baseline      time a suite's references (eager and torch.compile)
  report RUN_DIR [RUN_DIR ...]
                tables (Markdown, LaTeX, CSV) and plots of runs beside published ones
  export RUN_DIR [RUN_DIR ...] format=sft|trajectories|preferences
                datasets (JSONL, Hugging Face `datasets`-loadable) of verified kernels
  skill distill RUN_DIR [RUN_DIR ...]
                a skill document from the Judge's advice that led to verified speedups
  skill compare WITH_RUN WITHOUT_RUN (or their sweep folder)
                the paired with/without-skill difference, with intervals (docs/teaching.md)

Overrides are Hydra's: group=option (suite=main), key=value (eval.timing_trials=50),
--cfg job to print the composed config, -m for sweeps, --config-dir DIR to add your own
configs (an experiment/ folder beside ours). See docs/configuration.md.
cudaforge --version prints the version and where the package data lives.
"""


# Subcommands that print rather than produce a run directory write nothing to disk.
_QUIET_HYDRA = [
    "hydra.output_subdir=null",
    "hydra.run.dir=.",
    "hydra/job_logging=disabled",
    "hydra/hydra_logging=disabled",
]


class _Exit:
    """The exit status the Hydra app sets for ``main`` to return."""

    code = 0


def _tasks_list(cfg: DictConfig) -> int:
    from cudaforge.tasks import load_suite

    tasks = load_suite(OmegaConf.to_object(cfg.suite))
    for task in tasks:
        print(f"{task.id}\tlevel {task.level}\t{task.name}")
    print(f"{len(tasks)} tasks")
    return 0


def _tasks_audit(cfg: DictConfig) -> int:
    from cudaforge.tasks import load_suite
    from cudaforge.tasks.audit import audit_tasks, summary_line

    tasks = load_suite(OmegaConf.to_object(cfg.suite))
    audit_cfg = OmegaConf.to_object(cfg.audit)
    print(f"auditing {len(tasks)} tasks ...", flush=True)
    audits = audit_tasks(tasks, audit_cfg, on_result=lambda a: print(a.line(), flush=True))
    print(summary_line(audits))
    if cfg.output:
        with open(cfg.output, "w") as f:
            json.dump([a.__dict__ for a in audits], f, indent=2)
    return 0 if all(a.ok for a in audits) else 1


def _task_and_candidate(cfg: DictConfig):
    """The task named by ``task=`` and the path of ``candidate=``, or a clear error."""
    from pathlib import Path

    from cudaforge.tasks import find_task

    if not cfg.task or not cfg.candidate:
        raise ValueError("say which: task=<id> candidate=<path.py> (ids from `cudaforge tasks list`)")
    task = find_task(OmegaConf.to_object(cfg.suite), cfg.task)
    path = Path(cfg.candidate).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such candidate file")
    return task, path


def _eval(cfg: DictConfig) -> int:
    from pathlib import Path

    from cudaforge.eval.evaluator import Evaluator

    task, path = _task_and_candidate(cfg)
    evaluator = Evaluator(OmegaConf.to_object(cfg.eval))
    where = f"GPU {evaluator.gpus[0]}" if evaluator.gpus else "the CPU (no GPU: no timing)"
    print(f"evaluating {path} against {task.id} on {where} ...", flush=True)
    result = evaluator.evaluate(task, path.read_text())
    print(result.report())
    if cfg.output:
        Path(cfg.output).write_text(result.to_json())
        print(f"result written to {cfg.output}")
    return 0 if result.status.value in ("correct", "compiled") else 1


def _run(cfg: DictConfig) -> int:
    from pathlib import Path

    from hydra.core.hydra_config import HydraConfig

    from cudaforge.run.demo import BANNER, DEMO_MODEL, install_demo
    from cudaforge.run.progress import RunProgress
    from cudaforge.run.runner import RunInterrupted, make_context, run_suite
    from cudaforge.tasks import load_suite
    from cudaforge.track.wandb_sink import make_tracker

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    config = OmegaConf.to_object(cfg)
    if DEMO_MODEL in (config.coder.model, config.judge.model):
        install_demo()
        print(BANNER, flush=True)
    tasks = load_suite(config.suite)
    print(f"run directory: {run_dir}\n{len(tasks)} tasks, strategy {config.strategy.name.value}, "
          f"coder {config.coder.model}, judge {config.judge.model}", flush=True)
    ctx = make_context(config, run_dir)
    hydra_cfg = HydraConfig.get()
    multirun = str(hydra_cfg.mode) == "RunMode.MULTIRUN"
    tracker = make_tracker(
        config.tracker, run_dir, OmegaConf.to_container(cfg, resolve=True), name=run_dir.name,
        group=Path(hydra_cfg.sweep.dir).name if multirun else None,
    )  # fmt: skip

    progress = RunProgress(len(tasks), lambda: ctx.ledger.totals().summary())

    def on_result(result) -> None:
        progress.on_result(result)
        source = ctx.store.task(result.task_id).candidate(result.best_candidate_hash) if result.correct else None
        tracker.log_task(result, source)

    try:
        results = run_suite(ctx, tasks, on_event=progress.on_event, on_result=on_result)
    except RunInterrupted as exc:
        progress.close()
        print(f"\n{exc}", file=sys.stderr)
        return 130
    progress.close()
    tracker.finish(results)
    totals = ctx.ledger.totals()
    print("\nresults:")
    for r in results:
        best = f"{r.best_speedup:.3f}x" if r.best_speedup else ("correct, untimed" if r.correct else "-")
        print(f"{r.task_id}\tcorrect={r.correct}\tbest={best}\trounds={r.rounds}\t{r.minutes:.2f} min")
    correct = sum(r.correct for r in results)
    print(f"{correct}/{len(results)} correct | LLM: {totals.summary()}\nresults: {ctx.store.results_path}")
    return 0


def _profile(cfg: DictConfig) -> int:
    from pathlib import Path

    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.profile import Profiler

    task, path = _task_and_candidate(cfg)
    profile_cfg = OmegaConf.to_object(cfg.profile)
    build = Evaluator(OmegaConf.to_object(cfg.eval)).build_settings().to_dict()  # the evaluator's cache: no rebuild
    profiler = Profiler(profile_cfg, cache_dir=profile_cfg.cache_dir, lock_dir=profile_cfg.lock_dir, build=build)
    where = f"GPU {profiler.gpus[0]}" if profiler.gpus else "no GPU (FLOPs and bytes only)"
    print(f"profiling {path} for {task.id} on {where} ({profile_cfg.metric_set.value}) ...", flush=True)
    result = profiler.profile(task, path.read_text())
    print(result.summary())
    if cfg.output:
        Path(cfg.output).write_text(result.to_json())
        print(f"result written to {cfg.output}")
    return 0 if result.status.value in ("ok", "fallback", "unavailable") else 1


def _baseline(cfg: DictConfig) -> int:
    from pathlib import Path

    from hydra.core.hydra_config import HydraConfig

    from cudaforge.eval.baseline import time_suite
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import load_suite

    tasks = load_suite(OmegaConf.to_object(cfg.suite))
    evaluator = Evaluator(OmegaConf.to_object(cfg.eval))
    if not evaluator.gpus:
        print("cudaforge baseline: error: no GPU visible; baselines are GPU timings", file=sys.stderr)
        return 2
    out = Path(cfg.output) if cfg.output else Path(HydraConfig.get().runtime.output_dir) / "baseline.jsonl"
    print(f"timing {len(tasks)} references on GPU {evaluator.gpus[0]} (eager and torch.compile) -> {out}", flush=True)

    def show(b) -> None:
        with out.open("a") as f:
            f.write(b.to_json() + "\n")
        times = "  ".join(
            f"{m} {s.median:.4f} ms [{s.ci_low:.4f}, {s.ci_high:.4f}]" for m in ("eager", "compile") if (s := getattr(b, m))
        )
        print(f"{b.task_id}\t{b.status}\t{times}\t{b.message}", flush=True)

    results = time_suite(tasks, evaluator.cfg, evaluator.gpus[0], on_result=show)
    print(f"{sum(b.status == 'ok' for b in results)}/{len(results)} timed; written to {out}")
    return 0 if all(b.status == "ok" for b in results) else 1


def _report(cfg: DictConfig) -> int:
    import dataclasses

    from cudaforge.report import make_report
    from cudaforge.report.plots import PlottingUnavailable
    from cudaforge.report.tables import markdown

    try:
        report, written = make_report(**dataclasses.asdict(OmegaConf.to_object(cfg.report)))
    except PlottingUnavailable as exc:
        print(f"cudaforge report: error: {exc}", file=sys.stderr)
        return 2
    print(markdown(report))
    print(f"report written to {written[-1].parent} ({len(written)} files)")
    return 0


def _export(cfg: DictConfig) -> int:
    from cudaforge.teach import export_dataset

    result = export_dataset(OmegaConf.to_object(cfg.export))
    print(f"{result.rows} {result.format} rows from {len(result.runs)} run(s) written to {result.out_dir}")
    return 0


def _skill_distill(cfg: DictConfig) -> int:
    from cudaforge.llm import LLMError
    from cudaforge.run.demo import DEMO_MODEL
    from cudaforge.teach.demo import BANNER, install_demo_distiller
    from cudaforge.teach.skills import distill_from_config, distiller_config

    config = OmegaConf.to_object(cfg)
    if distiller_config(config.judge, config.skill.model).model == DEMO_MODEL:
        install_demo_distiller()
        print(BANNER, flush=True)
    try:
        result = distill_from_config(config.skill, config.judge, config.llm_cache)
    except LLMError as exc:
        print(f"cudaforge skill distill: error: {exc}", file=sys.stderr)
        return 2
    print(result.document.body())
    print(f"skill written to {result.path} ({len(result.evidence)} pieces of advice as evidence)")
    return 0


def _skill_compare(cfg: DictConfig) -> int:
    from pathlib import Path

    from cudaforge.teach.experiment import arms, effect_table, skill_effect

    (with_run, without_run), report = arms(list(cfg.skill.runs)), cfg.report
    effects, notes = skill_effect(with_run, without_run, failed_as=report.failed_as.value, bootstrap=report.bootstrap,
                                  confidence=report.confidence, seed=report.seed)  # fmt: skip
    print(f"with the skill: {with_run}\nwithout: {without_run}\n\n{effect_table(effects, notes)}")
    if cfg.output:
        Path(cfg.output).write_text(json.dumps({"effects": [e.__dict__ for e in effects], "notes": notes}, indent=1))
    return 0


ACTIONS: dict[str, Callable[[DictConfig], int]] = {
    "run": _run,
    "report": _report,
    "baseline": _baseline,
    "tasks list": _tasks_list,
    "tasks audit": _tasks_audit,
    "eval": _eval,
    "profile": _profile,
    "export": _export,
    "skill distill": _skill_distill,
    "skill compare": _skill_compare,
}


# Hydra's flags that take a value; Hydra's parser wants every flag before the first override.
_FLAGS_WITH_VALUE = {"--cfg", "-c", "--package", "-p", "--info", "-i", "--config-path", "-cp", "--config-name",
                     "-cn", "--config-dir", "-cd", "--experimental-rerun"}  # fmt: skip


def _split_flags(args: list[str]) -> tuple[list[str], list[str]]:
    """Hydra flags (``-m``, ``--cfg job``, ...) and overrides, wherever the user put the flags."""
    flags, rest, i = [], [], 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-"):  # overrides never start with "-" (a negative number follows an "=")
            flags.append(arg)
            if arg in _FLAGS_WITH_VALUE and i + 1 < len(args):
                flags.append(args[i + 1])
                i += 1
        else:
            rest.append(arg)
        i += 1
    return flags, rest


def _run_app(action: str, overrides: list[str]) -> int:
    register_configs()
    func = ACTIONS[action]

    @hydra.main(config_path=str(CONFIG_DIR), config_name="cudaforge", version_base="1.3")
    def app(cfg: DictConfig) -> None:
        from cudaforge.tasks.loader import TaskError

        try:
            _Exit.code = func(cfg)
        except (TaskError, ValueError, FileNotFoundError) as exc:
            print(f"cudaforge {action}: error: {exc}", file=sys.stderr)
            _Exit.code = 2

    name = action.replace(" ", "_")
    # a run or a baseline keeps its directory (config, results, logs); the others write nothing
    quiet = [] if action in ("run", "baseline") else _QUIET_HYDRA
    flags, overrides = _split_flags(overrides)
    saved = sys.argv
    sys.argv = [f"cudaforge {action}", *flags, *quiet, f"hydra.job.name={name}", *overrides]
    try:
        app()
    finally:
        sys.argv = saved
    return _Exit.code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cudaforge`` console script; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-V", "--version", "version"):
        from cudaforge import __version__

        print(f"cudaforge {__version__} (package data: {CONFIG_DIR.parent})")
        return 0
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "tasks":
        if not rest or rest[0] not in ("list", "audit"):
            print("cudaforge tasks: say `list` or `audit` (e.g. cudaforge tasks list suite=tiny)", file=sys.stderr)
            return 2
        command, rest = f"tasks {rest[0]}", rest[1:]
    if command == "skill":
        if not rest or rest[0] not in ("distill", "compare"):
            print("cudaforge skill: say `distill` or `compare` (e.g. cudaforge skill distill RUN_DIR)", file=sys.stderr)
            return 2
        command, rest = f"skill {rest[0]}", rest[1:]
    if command in ("export", "skill distill", "skill compare"):
        from cudaforge.config import ExportConfig, SkillConfig
        from cudaforge.teach.args import group_overrides

        group, schema = ("export", ExportConfig) if command == "export" else ("skill", SkillConfig)
        try:
            rest = group_overrides(group, schema, rest)
        except ValueError as exc:
            print(f"cudaforge {command}: error: {exc}", file=sys.stderr)
            return 2
    if command == "report":
        from cudaforge.report import runs_override

        try:
            rest = runs_override(rest)
        except ValueError as exc:
            print(f"cudaforge report: error: {exc}", file=sys.stderr)
            return 2
    if command not in ACTIONS:
        print(f"cudaforge: unknown subcommand {command!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return _run_app(command, rest)


if __name__ == "__main__":
    sys.exit(main())
