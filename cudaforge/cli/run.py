"""``cudaforge run``: the Coder/Judge loop over a suite, locally or over a Ray cluster."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import Exit, run_app
from cudaforge.track.store import LEDGER_FILE

if TYPE_CHECKING:
    from cudaforge.config import CudaforgeConfig

HELP = """usage: cudaforge run [key=value ...]

Runs the Coder/Judge loop over a suite: for each task the Coder writes a kernel, the evaluator checks and times
it, the profiler measures it, the Judge says what to fix or optimise next, until the round or dollar budget ends.
Writes a run directory (results.jsonl, every round's sources, logs, LLM cache) and prints each task's best result.
Before any paid or long work it checks the models' keys and servers, the demo or replay coverage of the tasks,
and prints the most the run can cost. Defaults: the demo models on suite=tiny (offline, no key needed).

examples:
  cudaforge run                                          # offline demo: 3 tiny tasks on the CPU
  cudaforge run suite=main coder=openai_o3 judge=openai_o3 strategy.max_dollars=1
  cudaforge run experiment=cudaforge_table1 suite.root=~/KernelBench/KernelBench suite.first_n=5

config groups: suite, coder, judge, strategy, eval, profile, tracker, experiment
keys: strategy.max_rounds, strategy.max_dollars, strategy.max_minutes, concurrency, suite.levels, suite.first_n
exit status: 0 every task correct, 1 it ran and some task has no correct kernel or was not run (the provider
unreachable, a GPU lost, an internal error: the same command runs it again), 2 a usage error (nothing written),
130 interrupted (resume with the same command and hydra.run.dir=RUN_DIR). With -m, the highest status of its jobs.
See docs/configuration.md."""


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


class _Tee:
    """A text stream that writes to the terminal's stream and to the run's log, both as they come."""

    def __init__(self, stream: Any, log: Any) -> None:
        self.stream, self.log = stream, log

    def write(self, text: str) -> int:
        self.log.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.log.flush()
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno ... of the terminal's stream
        return getattr(self.stream, name)


def on_event(event: dict[str, Any], progress: Any, tracker: Any) -> None:
    """A step of the loop: to the terminal, and a round that ended to the tracker as well (W&B logs it then)."""
    progress.on_event(event)
    if event.get("event") == "round_done":
        tracker.log_round(event)


def _run(cfg: DictConfig) -> int:
    """``cudaforge run``, with every line it prints (standard output and errors) also in the run's ``run.log``."""
    from hydra.core.hydra_config import HydraConfig

    path = Path(HydraConfig.get().runtime.output_dir) / "run.log"
    with path.open("a", encoding="utf-8", errors="replace") as log:
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Tee(out, log), _Tee(err, log)
        try:
            return _run_body(cfg)
        finally:
            sys.stdout, sys.stderr = out, err


def _run_body(cfg: DictConfig) -> int:
    import time

    from hydra.core.hydra_config import HydraConfig

    from cudaforge.run.preflight import check_config, check_fit, check_sandbox, estimate_cost
    from cudaforge.run.runner import authors_refusal, problem_set_refusal
    from cudaforge.search.simulator import pool_problems
    from cudaforge.tasks import load_suite

    started = time.monotonic()
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    config = cast("CudaforgeConfig", OmegaConf.to_object(cfg))  # the schema Hydra composed it on
    tasks = load_suite(config.suite)
    refusal = problem_set_refusal(config.suite) or authors_refusal(config.agents)
    if refusal:
        print(f"cudaforge run: error: {refusal}", file=sys.stderr)
        Exit.refused = True
        return 2
    problems = check_config(config, [t.id for t in tasks], run_dir=run_dir)  # before any paid or long work
    problems += pool_problems(config, [t.id for t in tasks])  # coder=simulator: its pool covers the tasks
    if config.campaign.engine.value == "local":  # on Ray the workers evaluate, on their own machines
        problems += check_sandbox(config.eval)  # cudaforge doctor's verdict too: nothing spent where it fails
        problems += check_fit(config, len(tasks))  # the same: nothing paid for that this machine cannot measure
    if problems:
        for problem in problems:
            print(f"cudaforge run: error: {problem.line()}", file=sys.stderr)
        Exit.refused = True
        return 2
    from cudaforge.eval import cpu_scaled
    from cudaforge.llm.scripted import DEMO_MODEL
    from cudaforge.run.demo import BANNER, install_demo
    from cudaforge.run.progress import RunProgress
    from cudaforge.run.runner import RunStateError, make_context, not_run_lines, run_suite
    from cudaforge.track.store import RunDirBusy
    from cudaforge.track.wandb_sink import make_tracker

    demo_roles = [role for role, llm in (("coder", config.coder), ("judge", config.judge)) if llm.model == DEMO_MODEL]
    if demo_roles:
        install_demo()
        who = "both agents" if len(demo_roles) == 2 else f"the {demo_roles[0]} only"
        print(f"{BANNER} ({who})", flush=True)
    from cudaforge.eval import visible_gpus

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
        f"run directory: {run_dir}\n{plural(len(tasks), 'task')}, strategy {config.strategy.name}, "
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
    from cudaforge.search.simulator import BANNER as SIMULATOR_BANNER
    from cudaforge.search.simulator import simulate

    if simulate(config, ctx):  # coder=simulator: kernels from a pool, their verdicts cached (docs/simulator.md)
        print(SIMULATOR_BANNER, flush=True)
    _save_plan(config, len(tasks), run_dir)
    hydra_cfg = HydraConfig.get()
    multirun = str(hydra_cfg.mode) == "RunMode.MULTIRUN"
    tracker = make_tracker(
        config.tracker,
        run_dir,
        cast("dict[str, Any]", OmegaConf.to_container(cfg, resolve=True)),  # a DictConfig: a dict of str keys
        name=run_dir.name,
        group=Path(hydra_cfg.sweep.dir).name if multirun else None,
    )

    progress = RunProgress(len(tasks), lambda: ctx.ledger.totals().summary())

    def on_result(result) -> None:
        progress.on_result(result)
        source = ctx.store.task(result.task_id).candidate(result.best_candidate_hash) if result.correct else None
        tracker.log_task(result, source)

    def work() -> tuple[list, list[str]]:
        results = run_suite(ctx, tasks, on_event=lambda e: on_event(e, progress, tracker), on_result=on_result)
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
        Exit.refused = True
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
    dropped = f" | replies not used: {progress.dropped_line()}" if progress.dropped else ""
    print(
        f"{correct}/{len(results)} correct{unfinished}{dropped} | LLM: {spent()} | wall time "
        f"{time.monotonic() - started:.1f} s\nresults: {path}"
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
        Exit.refused = True
        return 2

    ledger_path = run_dir / LEDGER_FILE
    spent = lambda: sum_rows(Ledger.read(ledger_path) if ledger_path.is_file() else []).summary()  # noqa: E731
    tracker = make_tracker(
        config.tracker,
        run_dir,
        cast("dict[str, Any]", OmegaConf.to_container(cfg, resolve=True)),  # a DictConfig: a dict of str keys
        name=run_dir.name,
        group=None,
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


def main(args: list[str]) -> int:
    return run_app("run", _run, args)
