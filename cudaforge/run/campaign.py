"""One run spread over a Ray cluster (``campaign.engine=ray``): the driver owns the run directory, workers run tasks.

Each task is a Ray task that asks for ``campaign.gpus_per_task`` GPUs (Ray sets ``CUDA_VISIBLE_DEVICES`` for it)
and runs the ordinary loop on that one task, in a run directory of its own on the worker
(``campaign.work_dir/<task>``). When the task finishes, the worker sends it back as a *pack*: the task's result and
folder (the shard/merge contract of ``cudaforge.run.merge``), its ledger lines and its recorded LLM replies. The
driver adds the pack to the run directory exactly as ``cudaforge merge`` adds a shard's task, so a Ray run, a
merged set of shards and a run made in one place are the same kind of directory.

Faults: a task whose node or worker process is lost is run again by Ray (``campaign.max_retries``), elsewhere if
need be; it resumes from its checkpoint and replays its paid LLM calls when ``campaign.work_dir`` is on storage the
new node shares (or it lands on the same node), and starts over otherwise. A task that fails in its own code (a
rejected API key stops the campaign; anything else is reported) is never retried by Ray. The driver resumes like any
run: the same command skips every task already in ``results.jsonl``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cudaforge import languages
from cudaforge.run.merge import (
    MergeError,
    add_cache_rows,
    add_ledger_lines,
    add_pack,
    cache_rows,
    ledger_lines,
    task_pack,
)
from cudaforge.track.store import LEDGER_FILE, LLM_CACHE_FILE, RunDir, RunStore, task_slug
from cudaforge.types import Task, TaskResult

FORWARDED_ENV = (
    "LITELLM_LOCAL_MODEL_COST_MAP",
    "WANDB_MODE",
    "CUDAFORGE_BUILD_CACHE",
    *(lang.interpret_env for lang in languages.languages() if lang.interpret_env),
)
"""Environment variables the driver passes to its workers (API keys are not: set them on the nodes, or in Ray's
``runtime_env`` of your cluster, so that they never travel through Ray's object store)."""


class CampaignError(RuntimeError):
    """The campaign cannot start (Ray missing or unreachable); one line says why."""


class TaskNotRun(RuntimeError):
    """A worker's task stopped for the infrastructure (the provider unreachable, its GPU lost) or on an internal error
    of cudaforge: no result, the driver records it in ``not_run.jsonl`` and a resume runs it again."""


class TaskAborted(RuntimeError):
    """A worker's task stopped the campaign (a model's key was rejected): the driver stops every other task."""


def work_root(config: Any, run_dir: Path) -> Path:
    """Where workers keep each task's own run directory."""
    if config.campaign.work_dir:
        return Path(config.campaign.work_dir).expanduser()
    key = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "cudaforge-campaign" / f"{run_dir.name}-{key}"


def run_task_remote(config: Any, task: Task, root: str) -> dict[str, Any]:
    """Worker side: run one task in its own run directory under ``root`` (resuming it if it is there) and return
    its pack: ``result``, ``files`` (the task's folder), ``ledger`` (its calls' lines), ``cache`` (its replies)."""
    from cudaforge.llm.scripted import DEMO_MODEL
    from cudaforge.run.demo import install_demo
    from cudaforge.run.runner import RunAborted, make_context, run_suite

    if DEMO_MODEL in (config.coder.model, config.judge.model):
        install_demo()  # the offline demo's scripted model lives in the process that calls it
    run_dir = Path(root) / task_slug(task.id)
    ctx = make_context(config, run_dir)
    try:
        run_suite(ctx, [task])
    except RunAborted as exc:
        from cudaforge.types import GpuUnavailable, SandboxUnavailable

        if isinstance(exc.cause, GpuUnavailable):  # this node's GPU or sandbox, not the campaign: the task is not run
            reason = "sandbox_unavailable" if isinstance(exc.cause, SandboxUnavailable) else "gpu_unavailable"
            raise TaskNotRun(f"{reason}: {exc.cause}") from None
        raise TaskAborted(str(exc)) from None  # a plain exception travels back through Ray intact
    finally:
        ctx.evaluator.close()
        ctx.ledger.close()
        ctx.checkpointer.conn.close()
        ctx.store.release()
    result = next((r for r in RunStore(run_dir).results() if r.task_id == task.id), None)
    if result is None:
        row = RunDir(run_dir).not_run().get(task.id) or {"reason": "unknown", "message": "no result"}
        raise TaskNotRun(f"{row['reason']}: {row['message']}")
    cache = Path(config.llm_cache.path) if config.llm_cache.path else run_dir / LLM_CACHE_FILE
    pack = task_pack(RunStore(run_dir), result)
    pack["ledger"] = ledger_lines(run_dir / LEDGER_FILE)
    pack["cache"] = cache_rows(cache) if not config.llm_cache.path else []  # a shared cache needs no copy
    return pack


def add_task_pack(store: RunStore, pack: dict[str, Any], done: set[str], cache_path: Path) -> TaskResult | None:
    """Driver side: a worker's pack into the run directory (its calls and replies first, its result last)."""
    add_ledger_lines(store.root / LEDGER_FILE, pack.get("ledger", []))
    add_cache_rows(cache_path, [tuple(row) for row in pack.get("cache", [])])
    return add_pack(store, pack, done)


def connect(config: Any) -> bool:
    """Connect this process to the Ray cluster ``campaign.address`` (null: start a Ray instance here) and check that
    a task can be placed there; returns True when this process started Ray (and should shut it down).
    ``CampaignError`` names what is wrong: Ray not installed, no cluster at the address, GPUs asked of a cluster
    without them."""
    try:
        import ray
    except ImportError:
        raise CampaignError(
            "campaign.engine=ray needs Ray on this machine and every node: pip install 'cudaforge[ray]'"
        ) from None
    c = config.campaign
    started_here = not ray.is_initialized()
    try:
        ray.init(
            address=c.address,
            log_to_driver=False,
            ignore_reinit_error=True,
            include_dashboard=False,
            runtime_env={"env_vars": {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}},
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise CampaignError(f"campaign.address={c.address}: cannot reach a Ray cluster ({exc})") from None
    if (c.gpus_per_task or 0) > 0 and not ray.cluster_resources().get("GPU"):
        if started_here:
            ray.shutdown()
        raise CampaignError(f"campaign.gpus_per_task={c.gpus_per_task:g} but the Ray cluster has no GPU")
    return started_here


def run_on_ray(
    config: Any,
    tasks: list[Task],
    run_dir: Path,
    *,
    on_result: Callable[[TaskResult], None],
    say: Callable[[str], None],
    started_here: bool,
) -> tuple[list[TaskResult], list[str]]:
    """Run every unfinished task of ``tasks`` on the Ray cluster ``connect`` reached; returns the results (task
    order) and one line per task that failed (it stays unfinished: the same command runs it again).
    ``RunAborted`` when a model's key is rejected, ``RunInterrupted`` on Ctrl-C (the tasks in flight are cancelled),
    ``RunDirBusy`` or ``RunStateError`` when the run directory is another run's or its response cache is corrupt.
    Ray is shut down at the end when ``started_here``."""
    import ray

    from cudaforge.run.runner import RunAborted, RunInterrupted, check_sqlite, record_problem_set

    store = RunStore(run_dir)
    cache_path = Path(config.llm_cache.path) if config.llm_cache.path else run_dir / LLM_CACHE_FILE
    c = config.campaign
    try:
        resources = ray.cluster_resources()
        gpus = float(resources.get("GPU", 0))
        per_task = c.gpus_per_task if c.gpus_per_task is not None else (1.0 if gpus else 0.0)
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        store.claim()  # RunDirBusy when another run is in this directory
        store.write_schema()  # RunDirTooNew when a newer cudaforge made it
        check_sqlite(
            cache_path,
            "the run's recorded LLM replies: moved aside, the calls they answered are made (and paid for) again",
        )
        for warning in [*store.quarantine(), record_problem_set(store, tasks, config.suite.root)]:
            if warning:
                say(f"cudaforge run: {warning}")
        done = {r.task_id for r in store.results()}
        todo = [t for t in tasks if t.id not in done]
        root = work_root(config, run_dir)
        say(
            f"campaign on Ray ({c.address or 'a local instance'}): {nodes} node(s), {gpus:g} GPU(s), "
            f"{float(resources.get('CPU', 0)):g} CPU(s); {len(todo)} tasks to run ({per_task:g} GPU and "
            f"{c.cpus_per_task:g} CPU each), {len(done)} already finished; workers keep tasks under {root}"
        )
        remote = ray.remote(run_task_remote).options(
            num_gpus=per_task, num_cpus=c.cpus_per_task, max_retries=c.max_retries, retry_exceptions=False
        )
        pending = {remote.remote(config, task, str(root)): task for task in todo}
        failures: list[str] = []
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                task = pending.pop(ready[0])
                try:
                    pack = ray.get(ready[0])
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, TaskAborted):
                        for ref in pending:
                            ray.cancel(ref, force=True)
                        raise RunAborted(
                            f"run stopped: {cause} ({len(done)}/{len(tasks)} tasks finished; resume "
                            "with the same command)",
                            cause=cause,
                        ) from None
                    if isinstance(cause, TaskNotRun):
                        reason, _, message = str(cause).partition(": ")
                        store.record_not_run(task.id, reason, message)
                        failures.append(f"{task.id}: not run ({cause})")
                        continue
                    failures.append(f"{task.id}: {type(cause or exc).__name__}: {str(cause or exc).splitlines()[0]}")
                    continue
                except ray.exceptions.RayError as exc:  # its node or worker was lost more often than retried
                    failures.append(f"{task.id}: {type(exc).__name__}: lost {c.max_retries + 1} times")
                    continue
                try:
                    result = add_task_pack(store, pack, done, cache_path)
                except (MergeError, ValueError, KeyError, TypeError) as exc:  # a pack that is not one: not added
                    failures.append(f"{task.id}: its worker sent back no usable task ({type(exc).__name__}: {exc})")
                    continue
                if result is not None:
                    on_result(result)
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise RunInterrupted(
                f"interrupted: {len(done)}/{len(tasks)} tasks finished; resume with the same "
                f"command and hydra.run.dir={run_dir}"
            ) from None
    finally:
        if started_here:
            ray.shutdown()
    results = {r.task_id: r for r in store.results()}
    return [results[t.id] for t in tasks if t.id in results], failures
