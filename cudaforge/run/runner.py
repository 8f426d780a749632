"""``cudaforge run``: the Coder/Judge loop over a suite, recorded in the run directory.

Everything a run needs is built here from the config and passed to the graph: the LLM
clients (one per role, sharing the response cache and the ledger), the agents, the
evaluator, the profiler and the task stores. A run directory that already holds results is
resumed: finished tasks are skipped, unfinished ones continue from their last checkpoint,
and LLM calls already made are answered by the cache (nothing is paid twice).

Before the first task the run directory gets ``problem_set.json``, the selected problems' identity (a git
commit of the suite's checkout, or content hashes: ``cudaforge/tasks/identity.py``); a resume on a problem set
with another digest says so in one warning line and records both.

Missing or rejected credentials (``LLMAuthError``) stop the whole run with ``RunAborted``
instead of failing every task in turn; the task that hit them records no result, so the
same command resumes it once the key is set.

An outage of the model's provider (``LLMUnavailable``: calls still failing after the client's retries) is not the
kernel's failure: the task records no result, one line in ``not_run.jsonl`` says why, and a resume runs it again from
its last checkpoint. A circuit breaker (``cudaforge/run/outage.py``) pauses the run when several tasks in a row stop
so, and stops it (``RunAborted``) when the provider stays down through every pause. A GPU that stops answering during
an evaluation (``GpuUnavailable``) leaves its task unfinished the same way and stops the run.

Any other exception out of a task is an internal error: a bug of cudaforge's own code, neither the kernel's failure
nor the infrastructure's. The task stops unfinished the same way (``not_run.jsonl``, reason ``internal_error``; its
traceback in the task's ``internal_error.txt``) and the other tasks go on, as they do in a Ray campaign; after
``INTERNAL_ERRORS_IN_A_ROW`` such tasks in a row with none finished between, the run stops (``RunAborted``), since
every task would likely fail the same way.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudaforge.agents.coder import Coder
from cudaforge.agents.judge import Judge, judge_metric_names
from cudaforge.agents.skills import read_skills
from cudaforge.agents.templates import PromptLibrary, PromptTemplateError
from cudaforge.eval import Evaluator
from cudaforge.graph.loop import Budgets, LoopServices, run_task
from cudaforge.graph.strategies import Strategy
from cudaforge.hardware.specs import named_gpu_sheet
from cudaforge.llm.cache import ResponseCache
from cudaforge.llm.client import Backoff, LLMClient
from cudaforge.llm.errors import LLMAuthError, LLMUnavailable
from cudaforge.llm.ledger import Ledger
from cudaforge.run.outage import OutageBreaker, ProviderDown
from cudaforge.tasks.identity import PROBLEM_SET_FILE, difference_text, problem_set
from cudaforge.track.store import (
    CHECKPOINTS_FILE,
    INTERNAL_ERROR_FILE,
    INTERRUPTED_DIR,
    LEDGER_FILE,
    LLM_CACHE_FILE,
    TASK_FILE,
    RunDir,
    RunStore,
)
from cudaforge.types import GpuUnavailable, RoundRecord, SandboxUnavailable, Task, TaskResult

INTERNAL_ERRORS_IN_A_ROW = 3
"""Tasks in a row that end on an internal error, with no task finished between, before the run stops."""
TRACEBACK_CHARS_MAX = 64_000
"""The most of a traceback kept in a task's ``internal_error.txt`` (its last characters)."""


def _value(x: Any) -> Any:
    return getattr(x, "value", x)


class LedgerSpend:
    """Per-task dollars and tokens from the shared ledger (the graph's ``Spends`` seam)."""

    def __init__(self, ledger: Ledger):
        self.ledger = ledger

    def task_totals(self, task_id: str) -> dict[str, float]:
        """Dollars (priced calls), unpriced calls and tokens of one task so far.

        ``cost_usd`` is a number here (0 when every call was unpriced) because the graph compares it with
        ``strategy.max_dollars``, which can only count priced calls; ``task_cost`` gives the honest figure.
        """
        t = self.ledger.totals(task_id=task_id)
        return {
            "cost_usd": t.cost_usd or 0.0,
            "unpriced_calls": t.unpriced_calls,
            "tokens_in": t.prompt_tokens,
            "tokens_out": t.completion_tokens,
        }

    def round_cost(self, task_id: str, round: int) -> float:
        """Dollars of the priced calls made for one round of a task (its Coder's, and its Judge's on it)."""
        return self.ledger.totals(task_id=task_id, round=round).cost_usd or 0.0

    def task_cost(self, task_id: str) -> float | None:
        """Dollars of one task's priced calls; None when it made calls and every one was unpriced."""
        t = self.ledger.totals(task_id=task_id)
        return t.cost_usd if t.unpriced_calls else (t.cost_usd or 0.0)


@dataclass
class RunContext:
    """The shared services of one run."""

    cfg: Any
    store: RunStore
    ledger: Ledger
    coder: Coder
    judge: Judge
    evaluator: Any
    profiler: Any
    gpu_spec: dict[str, Any] | None
    checkpointer: Any


def _seed(cfg: Any) -> int:
    """The run's sampling seed (0 in a config made before seeds)."""
    return int(getattr(cfg, "seed", 0) or 0)


def _client(llm_cfg: Any, role: str, cache: ResponseCache, ledger: Ledger, seed: int = 0) -> LLMClient:
    backoff = Backoff(llm_cfg.retry_base_delay_s, llm_cfg.retry_max_delay_s)
    return LLMClient(llm_cfg, role=role, cache=cache, ledger=ledger, backoff=backoff, seed=seed)


def _checkpointer(path: Path) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))


def local_gpu_name(gpu: str | int | None = None) -> str | None:
    """The model name of GPU ``gpu`` (a physical id; None: the first GPU this process may use), through the vendor
    seam (``H200`` for ``NVIDIA H200``; no torch, no CUDA context in the parent); None without one."""
    from cudaforge.vendors import current

    try:
        vendor = current()
        devices = [gpu] if gpu is not None else vendor.visible_devices()
        name = vendor.model_name(devices[0]) if devices else None
    except Exception:  # noqa: BLE001 - no GPU, no name
        return None
    if not name or name.startswith("gpu-"):  # the seam's stand-in when NVML cannot name it
        return None
    return name.removeprefix("NVIDIA ").strip()


def authors_prompts(agents: Any) -> Any:
    """The authors' prompts (``agents.template_set=cudaforge_authors``); ``PromptTemplateError`` says what is missing."""
    from cudaforge.agents.authors import AuthorsPrompts

    return AuthorsPrompts(agents.authors_root, agents.authors_gpu or local_gpu_name())


def authors_refusal(agents: Any) -> str | None:
    """Why ``agents=cudaforge_authors`` cannot run (no checkout, not one, a GPU key missing), or None."""
    if _value(agents.template_set) != "cudaforge_authors":
        return None
    try:
        authors_prompts(agents)
    except PromptTemplateError as exc:
        return str(exc)
    return None


def make_context(cfg: Any, run_dir: Path, *, evaluator: Any = None, profiler: Any = None) -> RunContext:
    """Build the run's services from a ``CudaforgeConfig`` (object form)."""
    store = RunStore(run_dir)
    store.claim()  # RunDirBusy when another run is in this directory
    store.write_schema()  # RunDirTooNew when a newer cudaforge made it
    ledger = Ledger(run_dir / LEDGER_FILE)
    cache_path = Path(cfg.llm_cache.path) if cfg.llm_cache.path else run_dir / LLM_CACHE_FILE
    check_sqlite(
        cache_path, "the run's recorded LLM replies: moved aside, the calls they answered are made (and paid for) again"
    )
    check_sqlite(
        run_dir / CHECKPOINTS_FILE,
        "the loop's checkpoints: moved aside, unfinished tasks start again "
        "from their first round (finished ones stay in results.jsonl)",
    )
    cache = ResponseCache(cache_path, _value(cfg.llm_cache.mode))
    agents = cfg.agents  # the template set, the Judge's metrics and the spec sheet the prompts show
    prompts = (
        authors_prompts(agents)
        if _value(agents.template_set) == "cudaforge_authors"
        else PromptLibrary(templates=dict(cfg.strategy.templates) or None, template_set=_value(agents.template_set))
    )
    if hasattr(prompts, "describe"):
        described = prompts.describe()
        store.write_prompts(described)
        if described.get("warning"):
            print(f"cudaforge run: warning: {described['warning']}", file=sys.stderr, flush=True)
    backend = _value(cfg.strategy.backend)
    coder = Coder(
        _client(cfg.coder, "coder", cache, ledger, seed=_seed(cfg)),
        prompts,
        backend=backend,
        max_follow_ups=cfg.strategy.max_follow_ups,
        skills=read_skills(getattr(cfg.coder, "skills", None) or []),
    )
    judge = Judge(
        _client(cfg.judge, "judge", cache, ledger, seed=_seed(cfg)),
        prompts,
        max_follow_ups=cfg.strategy.max_follow_ups,
        metric_names=judge_metric_names(
            _value(agents.judge_metrics),
            Strategy.from_config(cfg.strategy).metric_set or _value(cfg.profile.metric_set),
            list(cfg.profile.metrics),
        ),
    )
    # one set of GPU locks for evaluator and profiler; a candidate whose evaluation died with the run is not re-run
    evaluator = evaluator or Evaluator(
        cfg.eval, lock_dir=cfg.profile.lock_dir, interrupted_dir=run_dir / INTERRUPTED_DIR
    )
    gpus = getattr(evaluator, "gpus", [])
    if profiler is None and cfg.profile.enabled:
        from cudaforge.profile import Profiler

        build = evaluator.build_settings().to_dict() if hasattr(evaluator, "build_settings") else None
        profiler = Profiler(cfg.profile, cfg.profile.cache_dir, cfg.profile.lock_dir, build=build, gpus=gpus)
    gpu_spec: dict[str, Any] | None
    if agents.gpu_spec != "local":
        gpu_spec = named_gpu_sheet(agents.gpu_spec)
    else:
        gpu_spec = profiler.gpu_spec(gpus[0]) if gpus and hasattr(profiler, "gpu_spec") else None
    return RunContext(
        cfg=cfg,
        store=store,
        ledger=ledger,
        coder=coder,
        judge=judge,
        evaluator=evaluator,
        profiler=profiler,
        gpu_spec=gpu_spec,
        checkpointer=_checkpointer(run_dir / CHECKPOINTS_FILE),
    )


def run_one(
    ctx: RunContext, task: Task, on_event: Callable[[dict[str, Any]], None] | None = None, queued_s: float = 0.0
) -> TaskResult:
    """Run (or resume) the loop on one task and record its result (``queued_s``: time it waited to start)."""
    cfg = ctx.cfg
    strategy = Strategy.from_config(cfg.strategy)
    task_store = ctx.store.task(task.id)
    task_store.write_json(None, TASK_FILE, {**task.to_dict(), "source_hash": task.source_hash})
    spend = LedgerSpend(ctx.ledger)
    services = LoopServices(
        task=task,
        coder=ctx.coder,
        judge=ctx.judge,
        evaluator=ctx.evaluator,
        store=task_store,
        ledger=spend,
        strategy=strategy,
        budgets=Budgets(
            cfg.strategy.max_rounds,
            cfg.strategy.max_dollars,
            cfg.strategy.max_minutes,
            getattr(cfg.strategy, "max_evaluations", None),
            strategy.nodes_per_round(),
        ),
        profiler=ctx.profiler if cfg.profile.enabled else None,
        metric_set=strategy.metric_set or _value(cfg.profile.metric_set),
        gpu_spec=ctx.gpu_spec,
        memory_rounds=cfg.strategy.memory_rounds,
        on_event=on_event or (lambda event: None),
        profile_best=_value(getattr(cfg.strategy, "profiled_kernel", "latest")) == "best",
    )
    result = run_task(services, ctx.checkpointer, thread_id=task.id)
    _held_out(ctx, task, task_store, result)
    _compile_beside(ctx, task, result)
    result.cost_usd = spend.task_cost(task.id)  # None, not the budget's 0, when nothing was priced
    result.time_split["queue"] = result.time_split.get("queue", 0.0) + queued_s
    ctx.store.append_result(result)
    return result


def _held_out(ctx: RunContext, task: Task, task_store: Any, result: TaskResult) -> None:
    """The best kernel checked on held-out shapes (``eval.held_out_shapes``), after the loop: its seconds are kept in
    ``time_split["held_out"]``, outside the task's minutes."""
    if not (getattr(ctx.cfg.eval, "held_out_shapes", False) and result.correct and result.best_candidate_hash):
        return
    source = task_store.candidate(result.best_candidate_hash)
    if source is None:
        return
    from cudaforge.eval import CPU_INPUT_BYTES, check_held_out

    limit = int(ctx.cfg.eval.held_out_max_input_mb) << 20
    if not getattr(ctx.evaluator, "gpus", None):
        limit = min(limit, CPU_INPUT_BYTES)  # inputs sized for a CPU evaluation
    started = time.monotonic()
    try:
        if getattr(ctx.cfg.eval, "held_out_decides", False):
            _held_out_decides(ctx, task, task_store, result, source, limit)
        else:
            result.held_out = check_held_out(ctx.evaluator, task, source, max_input_bytes=limit)
    except GpuUnavailable:
        raise  # the machine's failure: the task stays unfinished and runs again (docs/campaigns.md)
    except Exception as exc:  # noqa: BLE001 - an aside of the run: its failure never costs the task its result
        result.held_out = {
            "shapes": [],
            "note": f"the held-out check failed: {type(exc).__name__}: {exc}"[:500],
            "seconds": round(time.monotonic() - started, 3),
        }
    result.time_split["held_out"] = result.held_out["seconds"]


def _held_out_decides(ctx: RunContext, task: Task, task_store: Any, result: TaskResult, best: str, limit: int) -> None:
    """``eval.held_out_decides``: the task's correct kernels, the best first, checked on the held-out shapes until one
    passes; it becomes the task's best kernel, and when none does the task is not correct. ``result.held_out`` keeps
    the chosen kernel's record, with ``decided``, the scored verdict (``scored_correct``, ``scored_best_round``) and
    the kernels that failed (``failed``)."""
    from cudaforge.eval import decide

    scored_round = result.best_round
    others = sorted(
        (r for r in result.history if r.status == "correct" and r.candidate_hash != result.best_candidate_hash),
        key=lambda r: (-(r.speedup or 0.0), -r.round),
    )
    rounds: dict[str | None, RoundRecord | None] = {result.best_candidate_hash: None}
    kernels = [(str(result.best_candidate_hash), best)]
    for record in others:
        source = task_store.candidate(record.candidate_hash) if record.candidate_hash not in rounds else None
        if source is not None:
            rounds[record.candidate_hash] = record
            kernels.append((str(record.candidate_hash), source))
    chosen, records = decide(ctx.evaluator, task, kernels, max_input_bytes=limit)
    failed = [{"candidate_hash": r["candidate_hash"], "shapes": r["shapes"]} for r in records if r is not None]
    if chosen is None:
        result.held_out = {**records[0], "failed": failed}
        result.correct = False
    else:
        result.held_out = {**records[chosen], "failed": failed[:chosen]}
        picked = rounds[kernels[chosen][0]]
        if picked is not None:
            result.best_round, result.best_candidate_hash = picked.round, picked.candidate_hash
            result.best_speedup, result.best_speedup_ci = picked.speedup, picked.speedup_ci
            result.best_candidate_ms = result.best_reference_ms = None
            result.best_measurement = {}
    result.held_out.update(decided=True, scored_correct=True, scored_best_round=scored_round)
    result.held_out["seconds"] = round(sum(float(r.get("seconds") or 0) for r in records), 3)


def _compile_beside(ctx: RunContext, task: Task, result: TaskResult) -> None:
    """The reference timed under torch.compile beside eager (``eval.compile_beside``) for a task with a timed correct
    kernel, on the evaluator's first GPU; its seconds are kept in ``time_split["compile_beside"]``."""
    cfg = ctx.cfg.eval
    gpus = getattr(ctx.evaluator, "gpus", None)
    if not (getattr(cfg, "compile_beside", False) and gpus and result.correct and result.best_speedup):
        return
    if str(getattr(cfg.baseline, "value", cfg.baseline)) == "compile":
        return  # the speedups are over torch.compile already
    from cudaforge.eval import time_compile_beside as compile_beside

    started = time.monotonic()
    name = local_gpu_name(gpus[0]) or f"gpu-{gpus[0]}"  # an unnamed GPU: its id stands for it (cached per id)
    try:
        result.compile_beside = compile_beside(
            task, gpus[0], name, ctx.evaluator.cfg, ctx.evaluator.build_cache, lock_dir=ctx.evaluator.lock_dir
        )
    except Exception as exc:  # noqa: BLE001 - an aside of the run: its failure never costs the task its result
        result.compile_beside = {"status": "error", "message": f"{type(exc).__name__}: {exc}"[:500]}
    result.time_split["compile_beside"] = round(time.monotonic() - started, 3)


def pin_of(suite: Any) -> dict[str, Any] | None:
    """The suite's pin status (``cudaforge.tasks.identity.pin_status``), None when it pins nothing."""
    from cudaforge.tasks.identity import pin_status
    from cudaforge.tasks.suite import load_all

    expected = getattr(suite, "expected_problem_set", None)
    if not expected:
        return None
    return pin_status(load_all(suite), list(suite.levels or []), expected, bool(suite.allow_other_problem_set))


def problem_set_refusal(suite: Any) -> str | None:
    """Why a run on ``suite`` may not start (another problem set than its pin, or a malformed pin), or None."""
    from cudaforge.tasks.identity import pin_refusal

    try:
        status = pin_of(suite)
    except ValueError as exc:
        return str(exc)
    return pin_refusal(status) if status else None


def record_problem_set(
    store: RunStore, tasks: list[Task], root: str | None, pin: dict[str, Any] | None = None
) -> str | None:
    """Write the run's ``problem_set.json`` when it has none (with ``pin``, the suite's pin status); on a resume
    whose problem set has another digest than the last one recorded, append the new one under ``changed_on_resume``
    and return a warning line."""
    current = problem_set(tasks, root)
    if pin:
        current["pin"] = pin
    recorded = store.problem_set()
    if recorded is None:
        store.write_problem_set(current)
        return None
    last = (recorded.get("changed_on_resume") or [recorded])[-1]
    if last.get("digest") == current["digest"]:
        return None
    recorded.setdefault("changed_on_resume", []).append(current)
    store.write_problem_set(recorded)
    return (
        f"warning: this run directory's problem set changed: {last.get('version')} -> {current['version']}, "
        f"{difference_text(last, current)}; both are recorded in {store.root / PROBLEM_SET_FILE}"
    )


def run_suite(
    ctx: RunContext,
    tasks: list[Task],
    *,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
) -> list[TaskResult]:
    """Run every task not finished yet in this run directory; returns all results, in task order.

    Raises ``RunInterrupted`` on Ctrl-C and ``RunAborted`` when a model's credentials are missing or rejected, the
    provider stays down, a GPU is lost, or ``INTERNAL_ERRORS_IN_A_ROW`` tasks in a row end on an internal error; no new
    task starts after any of them. A task that ends on one internal error is recorded as not run (``internal_error``)
    and the others go on.
    """
    done, todo = _resume(ctx, tasks)
    lock = threading.Lock()
    stopping = threading.Event()
    internal = [0]  # tasks in a row that ended on an internal error
    submitted = time.monotonic()
    breaker = _breaker(ctx)

    def one(task: Task) -> None:
        if stopping.is_set():
            return  # interrupted before this task started: it stays for the resume
        try:
            breaker.before_task()
        except ProviderDown:
            stopping.set()
            raise
        if stopping.is_set():
            return
        try:
            result = run_one(ctx, task, on_event, queued_s=time.monotonic() - submitted)
        except LLMAuthError:
            stopping.set()  # now, before this worker takes the next task
            raise
        except GpuUnavailable as exc:  # the machine, not the kernel: no result; every later task fails alike
            reason = "sandbox_unavailable" if isinstance(exc, SandboxUnavailable) else "gpu_unavailable"
            ctx.store.record_not_run(task.id, reason, str(exc))
            stopping.set()
            raise
        except LLMUnavailable as exc:  # the provider, not the kernel: no result, the resume runs it again
            ctx.store.record_not_run(task.id, "llm_unavailable", str(exc))
            if on_event:
                on_event({"event": "not_run", "task_id": task.id, "reason": "llm_unavailable", "message": str(exc)})
            breaker.failed(str(exc))
            return
        except PromptTemplateError:
            stopping.set()  # the user's own template: every task would fail the same way; one line says why
            raise
        except Exception as exc:  # noqa: BLE001 - cudaforge's own bug: this task stops unfinished, the run goes on
            try:
                line = internal_error(ctx.store, task, exc)
            except BaseException:
                stopping.set()  # the record itself failed (a full disk?): no task starts after this one
                raise
            print(f"cudaforge run: {line}", file=sys.stderr, flush=True)
            if on_event:
                on_event({"event": "not_run", "task_id": task.id, "reason": "internal_error", "message": line})
            with lock:
                internal[0] += 1
                if internal[0] >= INTERNAL_ERRORS_IN_A_ROW:
                    stopping.set()
                    raise RunAborted(
                        f"run stopped: {internal[0]} tasks in a row ended on an internal error of cudaforge, not of "
                        f"their kernels (last: {line})",
                        cause=exc,
                    ) from exc
            return
        breaker.finished()
        with lock:
            internal[0] = 0
            done[task.id] = result
            if on_result:
                on_result(result)

    pool = ThreadPoolExecutor(max_workers=max(1, ctx.cfg.concurrency))
    futures = [pool.submit(one, t) for t in todo]

    def stop() -> str:
        """No new task starts; the tasks in flight end at their next step boundary or with the process.

        Every finished step is checkpointed, so the same command with the same run directory resumes
        where this one stopped. Returns that hint.
        """
        stopping.set()
        breaker.stop()
        pool.shutdown(wait=False, cancel_futures=True)
        return (
            f"{len(done)}/{len(tasks)} tasks finished; resume with the same command and hydra.run.dir={ctx.store.root}"
        )

    _wait_all(futures, stop)
    pool.shutdown()
    try:
        (ctx.store.root / INTERRUPTED_DIR).rmdir()  # kept only while it holds a marker of an evaluation that died
    except OSError:
        pass
    return [done[t.id] for t in tasks if t.id in done]


def _breaker(ctx: RunContext) -> OutageBreaker:
    """The run's breaker for a provider that fails task after task (``campaign.outage_*``), saying on stderr."""
    c = ctx.cfg.campaign
    return OutageBreaker(
        c.outage_trip_after,
        c.outage_pause_s,
        c.outage_max_pauses,
        say=lambda line: print(line, file=sys.stderr, flush=True),
    )


def _resume(ctx: RunContext, tasks: list[Task]) -> tuple[dict[str, TaskResult], list[Task]]:
    """The run directory made ready for ``tasks`` (torn records quarantined, the problem set recorded, each warning
    said in one line): (the results finished earlier by task id, the tasks still to run)."""
    try:
        pin = pin_of(ctx.cfg.suite)
    except ValueError:
        pin = None  # `cudaforge run` refused it before; an API caller gets the record without it
    for warning in [*ctx.store.quarantine(), record_problem_set(ctx.store, tasks, ctx.cfg.suite.root, pin)]:
        if warning:
            print(f"cudaforge run: {warning}", file=sys.stderr, flush=True)
    done = {r.task_id: r for r in ctx.store.results()}
    todo = [t for t in tasks if t.id not in done]
    if done:
        print(
            f"cudaforge run: resuming {ctx.store.root}: {plural(len(done), 'task')} of {len(tasks)} finished "
            f"earlier, {plural(len(todo), 'task')} to run",
            file=sys.stderr,
            flush=True,
        )
    return done, todo


def _wait_all(futures: list[Any], stop: Callable[[], str]) -> None:
    """Every task's end, in the order they end; the first that ends the run (credentials, the provider down, a lost
    GPU, internal errors in a row, Ctrl-C, anything else) calls ``stop()`` and is raised as the run's end."""
    try:
        for future in as_completed(futures):
            future.result()
    except LLMAuthError as exc:
        raise RunAborted(f"run stopped: {exc} ({stop()})", cause=exc) from exc
    except (ProviderDown, GpuUnavailable) as exc:
        raise RunAborted(f"run stopped: {exc} ({stop()})", cause=exc) from exc
    except RunAborted as exc:  # internal errors in a row
        raise RunAborted(f"{exc} ({stop()})", cause=exc.cause) from exc
    except KeyboardInterrupt:
        raise RunInterrupted(f"interrupted: {stop()}") from None
    except BaseException:
        stop()  # anything else that ends the run (a user's template, a record that could not be written): no task
        raise  # starts after it


def internal_error(store: RunStore, task: Task, exc: BaseException) -> str:
    """Record that ``task`` stopped on an internal error (its traceback in the task's ``internal_error.txt``, a row in
    ``not_run.jsonl``); returns the one line that says so."""
    text = "".join(traceback.format_exception(exc))[-TRACEBACK_CHARS_MAX:]
    where = store.task(task.id).write_text(None, INTERNAL_ERROR_FILE, text)
    first = (str(exc).splitlines() or [""])[0][:300]
    line = (
        f"{task.id} stopped on an internal error of cudaforge, not of its kernels ({type(exc).__name__}: {first}); "
        f"traceback in {where}. Please report it; the same command runs the task again"
    )
    store.record_not_run(task.id, "internal_error", line)
    return line


def plural(n: int, word: str) -> str:
    """``1 task``, ``3 tasks``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def not_run_lines(store: RunStore, tasks: list[Task]) -> list[str]:
    """One line per task of ``tasks`` that stopped for the infrastructure and has no result (the same command runs
    it again)."""
    rows = RunDir(store.root).not_run()
    return [
        f"{t.id}: not run ({rows[t.id]['reason']}): {str(rows[t.id]['message'])[:300]}" for t in tasks if t.id in rows
    ]


class RunStateError(RuntimeError):
    """A file of the run directory that a resume needs cannot be read; one line says which and what to do."""


def check_sqlite(path: Path, what: str) -> None:
    """``RunStateError`` when ``path`` exists but is not a readable SQLite database (a crash or a disk fault can
    leave one): the message names the file, what it holds, and the command that repairs the run directory."""
    from cudaforge.run.repair import sqlite_problem

    problem = sqlite_problem(path)
    if problem:
        raise RunStateError(
            f"{path} is not a readable SQLite database ({problem}). It holds {what}; "
            f"`cudaforge repair {path.parent}` moves it aside and rebuilds what the run's own records "
            "hold, or restore it from a copy"
        )


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C: the run stopped cleanly and can be resumed."""


class RunAborted(RuntimeError):
    """The run cannot go on (no usable credentials for a model, the provider down, a GPU lost, internal errors in a
    row); one line says why and how to resume."""

    def __init__(self, message: str, *, cause: Exception) -> None:
        super().__init__(message)
        self.cause = cause
        """The error that stopped the run (an ``LLMAuthError``, ``ProviderDown``, ``GpuUnavailable``, or the last
        internal error)."""
