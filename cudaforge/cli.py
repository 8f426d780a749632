"""The ``cudaforge`` command: a dispatcher over Hydra apps, one per subcommand.

``cudaforge SUBCOMMAND [ACTION] [HYDRA OVERRIDES...]``. Every subcommand composes the same
config tree (``configs/cudaforge.yaml``), so any override works with any of them. The logic
lives in the library; each app here only composes, calls and prints.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from cudaforge.config import mapping_keys, register_configs
from cudaforge.paths import CONFIG_DIR
from cudaforge.track.store import HYDRA_DIR, LEDGER_FILE, LOCK_FILE, PLAN_FILE, RESCORED_FILE, RESULTS_FILE, RunDir

USAGE = """usage: cudaforge SUBCOMMAND [ACTION] [key=value ...]

subcommands:
  tasks list    print the selected tasks (e.g. suite=tiny, suite=kernelbench suite.root=PATH)
  tasks audit   flag degenerate tasks (constant or input-independent outputs, NaN/Inf, ...)
  tasks diff ROOT_A ROOT_B
  tasks pin ROOT [LEVEL ...]
                the problems two KernelBench-layout folders hold differently (content hashes)
  eval          evaluate one candidate: task=ID candidate=PATH.py
  run           run the Coder/Judge loop over a suite
  profile       profile one candidate with Nsight Compute
  baseline      time a suite's references (eager and torch.compile)
  rescore RUN_DIR eval=PROTOCOL
                a run's kept kernels evaluated again under another protocol (report them side by side)
  merge SHARD_DIR [SHARD_DIR ...] out=DIR
                a campaign's shards (suite.shard_count=N suite.shard_index=I) joined into one run directory
  repair RUN_DIR
                a damaged run directory made resumable: bad result lines quarantined, unreadable databases moved
                aside, the response cache rebuilt from the round folders and the ledger
  plan [RUN_DIR]
                expected dollars, LLM calls and hours of a suite under a config; with RUN_DIR, beside what it took
  report RUN_DIR [RUN_DIR ...]
                tables (Markdown, LaTeX, CSV) and plots of runs beside published ones
  export RUN_DIR [RUN_DIR ...] format=sft|trajectories|preferences|turns
                datasets (JSONL, Hugging Face `datasets`-loadable) of verified kernels, or every turn labelled
  integrate RUN_DIR [RUN_DIR ...] recipe=NAME
                the runs' best kernels patched into a whole model, checked and timed end to end
  skill distill RUN_DIR [RUN_DIR ...]
                a skill document from the Judge's advice that led to verified speedups
  skill compare WITH_RUN WITHOUT_RUN (or their sweep folder)
                the paired with/without-skill difference, with intervals (docs/teaching.md)
  doctor        check the setup: GPU, nvcc, ncu, Triton, the sandbox, the models' keys, the caches
  cache info | cache clear [KIND ...]
                where the caches are and their sizes; empty them

`cudaforge SUBCOMMAND --help` says what one does, its keys and examples.

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


EVAL_COMPILED_ONLY = 3
"""``cudaforge eval``'s status for a candidate that compiled and was not run (no GPU): neither correct nor wrong."""


class _Exit:
    """The exit status the Hydra app sets for ``main`` to return."""

    code = 0
    refused = False
    """The app refused to start (a usage error found after Hydra made its directory): the directory goes."""
    run_dir: str | None = None


def _tasks_list(cfg: DictConfig) -> int:
    from cudaforge.tasks import load_suite

    tasks = load_suite(OmegaConf.to_object(cfg.suite))
    for task in tasks:
        print(f"{task.id}\tlevel {task.level}\t{task.name}")
    print(f"{len(tasks)} task{'' if len(tasks) == 1 else 's'}")
    return 0


def _tasks_audit(cfg: DictConfig) -> int:
    import time

    from cudaforge.tasks import load_suite
    from cudaforge.tasks.audit import audit_tasks, summary_line, write_report

    tasks = load_suite(OmegaConf.to_object(cfg.suite))
    audit_cfg = OmegaConf.to_object(cfg.audit)
    fail_on = audit_cfg.fail_on
    print(
        f"auditing {len(tasks)} tasks ({audit_cfg.batch_size} per child; findings that fail: "
        f"{', '.join(s.value for s in fail_on) or 'none'}) ...",
        flush=True,
    )
    started = time.monotonic()
    audits = audit_tasks(tasks, audit_cfg, on_result=lambda a: print(a.line(fail_on), flush=True))
    seconds = time.monotonic() - started
    print(summary_line(audits, fail_on, seconds))
    if cfg.output:
        write_report(cfg.output, audits, cfg.suite.name, fail_on, seconds)
        print(f"report: {cfg.output}")
    return 1 if any(a.fails(fail_on) for a in audits) else 0


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
    if result.status.value == "compiled":
        return EVAL_COMPILED_ONLY  # built, but nothing ran: a script must not read it as correct
    return 0 if result.status.value == "correct" else 1


def _save_plan(config: Any, n_tasks: int, run_dir: Path) -> None:
    """Write the run's ``plan.json`` (what ``cudaforge plan`` expects of it), for ``cudaforge plan RUN_DIR`` later."""
    from cudaforge.run import plan as planning

    try:
        device, count = planning.local_device()
        figures = (
            planning.measured_figures(config.plan.from_run)
            if config.plan.from_run
            else planning.default_figures(config.plan, device)
        )
        planning.save(run_dir, planning.make_plan(config, n_tasks, figures, config.plan.gpus or max(1, count)))
    except (OSError, ValueError) as exc:  # the plan is a convenience: the run goes on without it
        print(f"NOTE: no {planning.PLAN_FILE} written ({exc})", flush=True)


def _run(cfg: DictConfig) -> int:
    import time
    from pathlib import Path

    from hydra.core.hydra_config import HydraConfig

    from cudaforge.run.preflight import check_config, estimate_cost
    from cudaforge.run.runner import authors_refusal, problem_set_refusal
    from cudaforge.tasks import load_suite

    started = time.monotonic()
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    config = OmegaConf.to_object(cfg)
    tasks = load_suite(config.suite)
    refusal = problem_set_refusal(config.suite) or authors_refusal(config.agents)
    if refusal:
        print(f"cudaforge run: error: {refusal}", file=sys.stderr)
        _Exit.refused = True
        return 2
    problems = check_config(config, [t.id for t in tasks], run_dir=run_dir)  # before any paid or long work
    if problems:
        for problem in problems:
            print(f"cudaforge run: error: {problem.line()}", file=sys.stderr)
        _Exit.refused = True
        return 2
    from cudaforge.eval.verifier import cpu_scaled
    from cudaforge.run.demo import BANNER, DEMO_MODEL, install_demo
    from cudaforge.run.progress import RunProgress
    from cudaforge.run.runner import RunStateError, make_context, not_run_lines, run_suite
    from cudaforge.track.store import RunDirBusy
    from cudaforge.track.wandb_sink import make_tracker

    demo_roles = [role for role, llm in (("coder", config.coder), ("judge", config.judge)) if llm.model == DEMO_MODEL]
    if demo_roles:
        install_demo()
        who = "both agents" if len(demo_roles) == 2 else f"the {demo_roles[0]} only"
        print(f"{BANNER} ({who})", flush=True)
    from cudaforge.eval.evaluator import visible_gpus

    if config.campaign.engine.value == "local" and not visible_gpus(list(config.eval.devices or [])):
        import torch

        scaled = sum(cpu_scaled(t, torch.device("cpu")) for t in tasks)
        print(
            "no GPU: kernels are checked on the CPU without timing"
            + (f"; {scaled} tasks sized for a GPU use their 'small' inputs" if scaled else ""),
            flush=True,
        )
    from cudaforge.run.runner import plural

    print(
        f"run directory: {run_dir}\n{plural(len(tasks), 'task')}, strategy {config.strategy.name.value}, "
        f"coder {config.coder.model}, judge {config.judge.model}; {estimate_cost(config, len(tasks)).line()}",
        flush=True,
    )
    if config.campaign.engine.value == "ray":
        _save_plan(config, len(tasks), run_dir)
        return _run_on_ray(cfg, config, tasks, run_dir, started)
    try:
        ctx = make_context(config, run_dir)
    except (RunDirBusy, RunStateError) as exc:  # nothing of this run directory is touched: it may be another run's
        print(f"cudaforge run: error: {exc}", file=sys.stderr)
        return 2
    _save_plan(config, len(tasks), run_dir)
    hydra_cfg = HydraConfig.get()
    multirun = str(hydra_cfg.mode) == "RunMode.MULTIRUN"
    tracker = make_tracker(
        config.tracker,
        run_dir,
        OmegaConf.to_container(cfg, resolve=True),
        name=run_dir.name,
        group=Path(hydra_cfg.sweep.dir).name if multirun else None,
    )

    progress = RunProgress(len(tasks), lambda: ctx.ledger.totals().summary())

    def on_result(result) -> None:
        progress.on_result(result)
        source = ctx.store.task(result.task_id).candidate(result.best_candidate_hash) if result.correct else None
        tracker.log_task(result, source)

    def work() -> tuple[list, list[str]]:
        results = run_suite(ctx, tasks, on_event=progress.on_event, on_result=on_result)
        return results, not_run_lines(ctx.store, tasks)

    return _drive(work, progress, tracker, lambda: ctx.ledger.totals().summary(), started, ctx.store.results_path)


def _drive(
    work: Callable[[], tuple[list, list[str]]],
    progress: Any,
    tracker: Any,
    spent: Callable[[], str],
    started: float,
    path: Path,
) -> int:
    """Run a run's tasks (``work`` returns the results and the lines of tasks that failed), then its closing
    lines; the exit status: 0 when every task has a correct kernel, 1 when not (or a model's key was rejected), 2
    when the run could not start, 130 on Ctrl-C."""
    import time

    from cudaforge.run.campaign import CampaignError
    from cudaforge.run.runner import RunAborted, RunInterrupted, RunStateError
    from cudaforge.track.store import RunDirBusy

    try:
        results, failures = work()
    except (CampaignError, RunDirBusy, RunStateError) as exc:
        progress.close()
        print(f"cudaforge run: error: {exc}", file=sys.stderr)
        _Exit.refused = True
        return 2
    except RunInterrupted as exc:
        progress.close()
        print(f"\n{exc}", file=sys.stderr)
        return 130
    except RunAborted as exc:
        progress.close()
        print(f"\ncudaforge run: error: {exc}", file=sys.stderr)
        return 1
    progress.close()
    tracker.finish(results)
    for line in failures:
        print(f"not finished (the same command runs it again): {line}", file=sys.stderr)
    print("\nresults:")
    for r in results:
        best = f"{r.best_speedup:.3f}x" if r.best_speedup else ("correct, untimed" if r.correct else "-")
        print(f"{r.task_id}\tcorrect={r.correct}\tbest={best}\trounds={r.rounds}\t{r.minutes:.2f} min")
    correct = sum(r.correct for r in results)
    unfinished = f" | {len(failures)} not finished" if failures else ""
    print(
        f"{correct}/{len(results)} correct{unfinished} | LLM: {spent()} | wall time {time.monotonic() - started:.1f} s"
        f"\nresults: {path}"
    )
    return 0 if correct == len(results) and not failures else 1


def _run_on_ray(cfg: DictConfig, config: Any, tasks: list, run_dir: Path, started: float) -> int:
    """``cudaforge run campaign.engine=ray``: this process drives, the Ray cluster's workers run the tasks."""
    from cudaforge.llm.ledger import Ledger, sum_rows
    from cudaforge.run.campaign import CampaignError, connect, run_on_ray
    from cudaforge.run.progress import RunProgress
    from cudaforge.track.store import RunStore
    from cudaforge.track.wandb_sink import make_tracker

    try:
        started_here = connect(config)  # before anything is written: a refused campaign leaves nothing behind
    except CampaignError as exc:
        print(f"cudaforge run: error: {exc}", file=sys.stderr)
        _Exit.refused = True
        return 2

    ledger_path = run_dir / LEDGER_FILE
    spent = lambda: sum_rows(Ledger.read(ledger_path) if ledger_path.is_file() else []).summary()  # noqa: E731
    tracker = make_tracker(
        config.tracker, run_dir, OmegaConf.to_container(cfg, resolve=True), name=run_dir.name, group=None
    )
    progress = RunProgress(len(tasks), spent)

    def on_result(result) -> None:
        progress.on_result(result)
        source = (
            RunStore(run_dir).task(result.task_id).candidate(result.best_candidate_hash) if result.correct else None
        )
        tracker.log_task(result, source)

    say = lambda line: print(line, flush=True)  # noqa: E731
    return _drive(
        lambda: run_on_ray(config, tasks, run_dir, on_result=on_result, say=say, started_here=started_here),
        progress,
        tracker,
        spent,
        started,
        RunStore(run_dir).results_path,
    )


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
    source = path.read_text()
    if profiler.gpus:
        Evaluator(OmegaConf.to_object(cfg.eval)).precompile(source)  # the trusted side builds: the sandbox only reads
    result = profiler.profile(task, source)
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
        _Exit.refused = True
        return 2
    out = Path(cfg.output) if cfg.output else Path(HydraConfig.get().runtime.output_dir) / "baseline.jsonl"
    print(f"timing {len(tasks)} references on GPU {evaluator.gpus[0]} (eager and torch.compile) -> {out}", flush=True)

    def show(b) -> None:
        with out.open("a") as f:
            f.write(b.to_json() + "\n")
        times = "  ".join(
            f"{m} {s.median:.4f} ms [{s.ci_low:.4f}, {s.ci_high:.4f}]"
            for m in ("eager", "compile")
            if (s := getattr(b, m))
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


def _rescore(cfg: DictConfig) -> int:
    from hydra.core.hydra_config import HydraConfig

    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.run.rescore import rescore

    if not cfg.rescore.run:
        raise ValueError("say which run: cudaforge rescore RUN_DIR eval=PROTOCOL")
    if not (Path(cfg.rescore.run) / RESULTS_FILE).is_file():
        raise FileNotFoundError(f"{cfg.rescore.run}: not a run directory (no results.jsonl)")
    hydra_cfg = HydraConfig.get()
    protocol, out_dir = hydra_cfg.runtime.choices.get("eval", "default"), hydra_cfg.runtime.output_dir
    evaluator = Evaluator(OmegaConf.to_object(cfg.eval))
    where = f"GPU {', '.join(evaluator.gpus)}" if evaluator.gpus else "the CPU (no GPU: correctness only)"
    print(f"rescoring {cfg.rescore.run} under eval={protocol} on {where} -> {out_dir}", flush=True)
    try:
        summary = rescore(
            cfg.rescore.run,
            out_dir,
            evaluator,
            protocol=protocol,
            all_rounds=cfg.rescore.all_rounds,
            say=lambda line: print(line, flush=True),
        )
    finally:
        evaluator.close()
    for note in summary["notes"]:
        print(f"NOTE: {note}")
    print(
        f"{summary['kernels']} kernels rescored, {summary['changed']} changed verdict; "
        f"`cudaforge report {cfg.rescore.run} {out_dir}` sets the two side by side"
    )
    rows = Path(out_dir) / RESCORED_FILE
    crashed = [line for line in rows.read_text().splitlines() if '"crashed"' in line] if rows.is_file() else []
    return 1 if crashed else 0


def _run_config(run_dir: Path) -> Any:
    """A run directory's own config (``.hydra/config.yaml``) as a ``CudaforgeConfig`` object."""
    from cudaforge.config import CudaforgeConfig

    saved = RunDir(run_dir).config_path
    if not saved.is_file():
        raise FileNotFoundError(f"{run_dir}: its config (.hydra/config.yaml) is missing, so it cannot be planned")
    merged = OmegaConf.merge(OmegaConf.structured(CudaforgeConfig), OmegaConf.load(saved))
    return OmegaConf.to_object(merged)


def _plan(cfg: DictConfig) -> int:
    from cudaforge.run import plan as planning

    config = OmegaConf.to_object(cfg)
    device, count = planning.local_device()
    gpus = config.plan.gpus or max(1, count)
    if config.plan.run:
        run_dir = Path(config.plan.run)
        if not (run_dir / RESULTS_FILE).is_file():
            raise FileNotFoundError(f"{run_dir}: not a run directory (no results.jsonl)")
        plan = planning.load(run_dir)
        if plan is None:  # a run made before runs wrote their plan, or a merged campaign: plan it now
            from cudaforge.tasks.identity import read_problem_set

            run_config = _run_config(run_dir)
            n = len((read_problem_set(run_dir) or {}).get("tasks") or {}) or planning.measured(run_dir)["tasks"]
            plan = planning.make_plan(run_config, n, planning.default_figures(run_config.plan, device), gpus)
            print(f"NOTE: {run_dir} holds no {planning.PLAN_FILE}; planned now from its config")
        print(planning.explain(plan))
        print(planning.table(plan, planning.measured(run_dir)))
        return 0
    from cudaforge.tasks import load_suite

    tasks = load_suite(config.suite)
    figures = (
        planning.measured_figures(config.plan.from_run)
        if config.plan.from_run
        else planning.default_figures(config.plan, device)
    )
    plan = planning.make_plan(config, len(tasks), figures, gpus)
    print(planning.explain(plan))
    print(planning.table(plan))
    if cfg.output:
        Path(cfg.output).write_text(json.dumps(plan, indent=2))
    return 0


def _export(cfg: DictConfig) -> int:
    from cudaforge.teach import export_dataset

    result = export_dataset(OmegaConf.to_object(cfg.export))
    for notice in getattr(result, "notices", []):
        print(f"NOTE: {notice}", flush=True)
    print(f"{result.rows} {result.format} rows from {len(result.runs)} run(s) written to {result.out_dir}")
    return 0


def _integrate(cfg: DictConfig) -> int:
    import dataclasses

    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.run.integrate import evaluation_config, integrate, summary_lines

    config = OmegaConf.to_object(cfg)
    evaluator = Evaluator(evaluation_config(dataclasses.asdict(config.eval)))
    try:
        record = integrate(config.integrate.recipe, list(config.integrate.runs), evaluator, config.integrate.out_dir)
    finally:
        evaluator.close()
    print("\n".join(summary_lines(record)))
    print(f"written to {record['written'][0]} and {Path(record['written'][1]).name}")
    return 0 if record.get("correct") else 1


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
    effects, notes = skill_effect(
        with_run,
        without_run,
        failed_as=report.failed_as.value,
        bootstrap=report.bootstrap,
        confidence=report.confidence,
        seed=report.seed,
    )
    print(f"with the skill: {with_run}\nwithout: {without_run}\n\n{effect_table(effects, notes)}")
    if cfg.output:
        Path(cfg.output).write_text(json.dumps({"effects": [e.__dict__ for e in effects], "notes": notes}, indent=1))
    return 0


def _cache(rest: list[str]) -> int:
    """``cudaforge cache info`` / ``cudaforge cache clear [KIND ...]`` (no Hydra app: the default locations)."""
    from cudaforge.cache_admin import main_cache

    return main_cache(rest)


def _doctor(cfg: DictConfig) -> int:
    from cudaforge.doctor import run_checks
    from cudaforge.tasks import load_suite

    config = OmegaConf.to_object(cfg)
    tasks = load_suite(config.suite)
    print(
        f"cudaforge doctor: suite {config.suite.name} ({len(tasks)} tasks), coder {config.coder.model}, "
        f"judge {config.judge.model}",
        flush=True,
    )
    checks = run_checks(config, [t.id for t in tasks], say=lambda line: print(line, flush=True))
    blocking = [c for c in checks if c.blocking and not c.ok]
    print("nothing stops a run" if not blocking else f"{len(blocking)} problem(s) stop a run (lines marked x)")
    return 1 if blocking else 0


ACTIONS: dict[str, Callable[[DictConfig], int]] = {
    "doctor": _doctor,
    "run": _run,
    "report": _report,
    "rescore": _rescore,
    "plan": _plan,
    "baseline": _baseline,
    "tasks list": _tasks_list,
    "tasks audit": _tasks_audit,
    "eval": _eval,
    "profile": _profile,
    "export": _export,
    "integrate": _integrate,
    "skill distill": _skill_distill,
    "skill compare": _skill_compare,
}


# Hydra's flags that take a value; Hydra's parser wants every flag before the first override.
_FLAGS_WITH_VALUE = {
    "--cfg",
    "-c",
    "--package",
    "-p",
    "--info",
    "-i",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--experimental-rerun",
}


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


def _user_config_dirs(flags: list[str]) -> list[Path]:
    dirs = []
    for i, flag in enumerate(flags):
        if flag in ("--config-dir", "-cd") and i + 1 < len(flags):
            dirs.append(Path(flags[i + 1]).expanduser())
        elif flag.startswith("--config-dir="):
            dirs.append(Path(flag.split("=", 1)[1]).expanduser())
    return dirs


def _remove_if_empty(run_dir: str | None) -> None:
    """Remove a run directory that holds nothing but what Hydra wrote before the app refused to start."""
    import shutil

    if not run_dir or not Path(run_dir).is_dir():
        return
    left = [
        p
        for p in Path(run_dir).iterdir()
        if p.name not in (HYDRA_DIR, LOCK_FILE, PLAN_FILE) and not p.name.endswith(".log")
    ]
    if not left:
        shutil.rmtree(run_dir, ignore_errors=True)


def _merge(args: list[str]) -> int:
    from cudaforge.run.merge import MergeError, merge_runs
    from cudaforge.track.store import RunDirBusy, RunDirTooNew

    outs = [a.partition("=")[2] for a in args if a.startswith("out=")]
    other = [a for a in args if "=" in a and not a.startswith("out=")]
    shards = [a for a in args if "=" not in a]
    if len(outs) != 1 or other or not shards or any(a.startswith("-") for a in shards):
        print(
            "cudaforge merge: error: say SHARD_DIR [SHARD_DIR ...] out=DIR"
            + (f" (unknown: {' '.join(other)})" if other else ""),
            file=sys.stderr,
        )
        return 2
    try:
        record = merge_runs(outs[0], shards, say=lambda line: print(line, flush=True))
    except (MergeError, RunDirBusy, RunDirTooNew) as exc:
        print(f"cudaforge merge: error: {exc}", file=sys.stderr)
        return 2
    return 1 if record["unfinished"] else 0


def _repair(args: list[str]) -> int:
    from cudaforge.run.repair import repair
    from cudaforge.track.store import RunDirBusy

    if len(args) != 1 or args[0].startswith("-") or "=" in args[0]:
        print("cudaforge repair: error: say one run directory: cudaforge repair RUN_DIR", file=sys.stderr)
        return 2
    try:
        repair(args[0], say=lambda line: print(line, flush=True))
    except (ValueError, RunDirBusy) as exc:
        print(f"cudaforge repair: error: {exc}", file=sys.stderr)
        return 2
    print(f"repaired: resume with the same command and hydra.run.dir={args[0]}")
    return 0


def _expand_home(override: str) -> str:
    """``key=~/x`` with the home folder written out: a shell leaves ``~`` after ``=`` as it is, and Hydra's grammar
    refuses it in a value (``suite.root=~/KernelBench/KernelBench`` would fail with a lexer error)."""
    key, eq, value = override.partition("=")
    if eq and not key.startswith("~") and (value == "~" or value.startswith("~/")):
        return f"{key}={Path(value).expanduser()}"
    return override


def _launcher_problem(overrides: list[str]) -> str | None:
    """``hydra/launcher=X`` whose plugin is not installed: one line (Hydra would end in a traceback)."""
    import importlib

    import yaml

    for override in overrides:
        key, _, option = override.partition("=")
        if key.lstrip("+~") != "hydra/launcher" or not option or option == "basic":
            continue
        path = CONFIG_DIR / "hydra" / "launcher" / f"{option}.yaml"
        if not path.is_file():
            continue  # Hydra says an unknown option in one line
        target = str((yaml.safe_load(path.read_text()) or {}).get("_target_", ""))
        module = target.rpartition(".")[0]
        try:
            importlib.import_module(module)
        except ImportError:
            return (
                f"hydra/launcher={option} needs the Hydra plugin {module.split('.')[1] if '.' in module else module}"
                f", which this interpreter cannot import: pip install 'cudaforge[sweeps]' (docs/reproducing.md)"
            )
    return None


def _run_app(action: str, overrides: list[str]) -> int:
    from cudaforge.cli_checks import check_overrides, check_values

    register_configs()
    func = ACTIONS[action]
    flags, overrides = _split_flags(overrides)
    overrides = [_expand_home(o) for o in overrides]
    mappings = mapping_keys()  # key={a: b} set as written: ++ lets Hydra take names the schema cannot list
    overrides = [f"++{o}" if o.split("=", 1)[0] in mappings else o for o in overrides]
    launcher = _launcher_problem(overrides)
    if launcher:
        print(f"cudaforge {action}: error: {launcher}", file=sys.stderr)
        return 2
    checkable = not any(
        f in ("--cfg", "-c", "--info", "-i", "--help", "-h", "--hydra-help", "-m", "--multirun") for f in flags
    )  # a sweep's values are checked by Hydra, one job at a time
    if checkable:
        problem = check_overrides(overrides, CONFIG_DIR, _user_config_dirs(flags))
        if problem:
            print(f"cudaforge {action}: error: {problem}", file=sys.stderr)
            return 2
    _Exit.code, _Exit.refused, _Exit.run_dir = 0, False, None

    @hydra.main(config_path=str(CONFIG_DIR), config_name="cudaforge", version_base="1.3")
    def app(cfg: DictConfig) -> None:
        from hydra.core.hydra_config import HydraConfig

        from cudaforge.tasks.loader import TaskError

        _Exit.run_dir = HydraConfig.get().runtime.output_dir
        problems = check_values(cfg)
        if problems:
            print("\n".join(f"cudaforge {action}: error: {p}" for p in problems), file=sys.stderr)
            _Exit.code, _Exit.refused = max(_Exit.code, 2), True
            return
        try:
            code = func(cfg)
        except (TaskError, ValueError, FileNotFoundError) as exc:
            print(f"cudaforge {action}: error: {exc}", file=sys.stderr)
            code, _Exit.refused = 2, True
        _Exit.code = max(_Exit.code, code)  # a multirun: the worst of its jobs

    name = action.replace(" ", "_")
    # a run or a baseline keeps its directory (config, results, logs); the others write nothing
    quiet = [] if action in ("run", "baseline", "rescore") else _QUIET_HYDRA
    saved = sys.argv
    sys.argv = [f"cudaforge {action}", *flags, *quiet, f"hydra.job.name={name}", *overrides]
    # a named directory that already holds a run (a rescore resumed there): Hydra rewrites its .hydra/ before the
    # command can refuse, so what was there is put back when it does
    named = [o.split("=", 1)[1] for o in overrides if o.startswith("hydra.run.dir=")]
    kept = {p: p.read_bytes() for p in (Path(named[-1]) / HYDRA_DIR).glob("*.yaml")} if named else {}
    try:
        app()
    finally:
        sys.argv = saved
    if _Exit.refused and action in ("run", "baseline", "rescore"):
        for path, data in kept.items():
            path.write_bytes(data)
        _remove_if_empty(_Exit.run_dir)
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
    if command == "tasks" and rest and rest[0] in ("list", "audit", "diff", "pin"):
        command, rest = f"tasks {rest[0]}", rest[1:]
    if command == "skill" and rest and rest[0] in ("distill", "compare"):
        command, rest = f"skill {rest[0]}", rest[1:]
    if any(a in ("-h", "--help") for a in rest):
        from cudaforge.cli_checks import HELP

        if command in HELP:
            print(HELP[command])
            return 0
    if command == "cache":
        return _cache(rest)
    if command == "merge":
        return _merge(rest)
    if command == "repair":
        return _repair(rest)
    if command == "tasks diff":
        from cudaforge.tasks.diff import main_diff

        return main_diff(rest)
    if command == "tasks pin":
        from cudaforge.tasks.identity import main_pin

        return main_pin(rest)
    if command == "doctor" and rest[:1] and not rest[0].startswith("-") and "=" not in rest[0]:
        print(f"cudaforge doctor: takes only key=value overrides, not {rest[0]!r}", file=sys.stderr)
        return 2
    if command == "tasks":
        print(
            "cudaforge tasks: say `list`, `audit`, `diff` or `pin` (e.g. cudaforge tasks list suite=tiny)",
            file=sys.stderr,
        )
        return 2
    if command == "skill":
        print("cudaforge skill: say `distill` or `compare` (e.g. cudaforge skill distill RUN_DIR)", file=sys.stderr)
        return 2
    if command in ("export", "skill distill", "skill compare", "integrate"):
        from cudaforge.config import ExportConfig, IntegrateConfig, SkillConfig
        from cudaforge.teach.args import group_overrides

        group, schema = {"export": ("export", ExportConfig), "integrate": ("integrate", IntegrateConfig)}.get(
            command, ("skill", SkillConfig)
        )
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
    if command in ("plan", "rescore"):  # one run directory, given as a plain argument
        runs = [a for a in rest if not a.startswith("-") and "=" not in a]
        if len(runs) > 1:
            print(f"cudaforge {command}: error: one run directory at a time, not {len(runs)}", file=sys.stderr)
            return 2
        rest = [a for a in rest if a not in runs] + [f"{command}.run={Path(r).expanduser().resolve()}" for r in runs]
    if command not in ACTIONS:
        print(f"cudaforge: unknown subcommand {command!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return _run_app(command, rest)


if __name__ == "__main__":
    sys.exit(main())
