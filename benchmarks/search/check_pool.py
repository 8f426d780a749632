"""``make_pool.py --check``: every kernel of a simulator pool evaluated by the real evaluator, its verdict against its kind.

An honest kernel must be correct, a wrong one must not be, a hack must be rejected by a guard. The evaluation settings
are those a ``cudaforge run`` composes by default (plus ``eval.device=cpu`` without a GPU, and ``overrides``);
verdicts go through ``PoolVerdicts``, into the simulator's verdict cache, so the runs after (``compare.py`` with the
same ``--eval-set``) reuse them.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def run_config(overrides: list[str] | None = None) -> Any:
    """The config ``cudaforge run`` composes by default, with ``overrides`` (``CudaforgeConfig``)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from cudaforge.config import register_configs
    from cudaforge.paths import CONFIG_DIR

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3", job_name="check_pool"):
            return OmegaConf.to_object(compose("cudaforge", overrides=list(overrides or [])))
    finally:
        GlobalHydra.instance().clear()


def device_overrides() -> list[str]:
    """``eval.device=cpu`` where no GPU is visible (a CPU run meant as one; ``compare.py`` sets it too, so that both
    find the same cached verdicts), else nothing."""
    from cudaforge.eval import visible_gpus

    return [] if visible_gpus([]) else ["eval.device=cpu"]


def problem(kind: str, status: str) -> str | None:
    """Why a verdict's status does not fit a kernel's kind (None: it fits)."""
    if kind == "honest" and status != "correct":
        return "an honest kernel that is not correct"
    if kind == "wrong" and status == "correct":
        return "a wrong kernel that is correct"
    if kind == "hack" and status != "rejected":
        return "a hack that is not rejected"
    return None


def check(
    pool_path: Path,
    names: list[str] | None = None,
    *,
    workers: int = 2,
    suite: str = "sim20",
    overrides: list[str] | None = None,
    cache_dir: Path | None = None,
) -> list[str]:
    """Evaluate the pool's kernels (of the tasks ``names``, or all) on ``suite``'s tasks; returns one line per kernel
    whose verdict is not its kind (empty: all fit), after printing each verdict."""
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.search.pool import PoolVerdicts, load_pool
    from cudaforge.search.simulator import verdict_dir
    from cudaforge.tasks import load_suite, selection

    pool = load_pool(pool_path)
    tasks = {t.id.rsplit("/", 1)[-1]: t for t in load_suite(selection(suite))}
    wanted = [s for s in pool if not names or s in names or s.split("_", 1)[-1] in names]
    missing = [s for s in wanted if s not in tasks]
    if missing:
        return [f"{s}: no such task in the {suite} suite" for s in missing]
    cfg = run_config(device_overrides() + list(overrides or []))
    jobs = [(tasks[s], k) for s in wanted for k in pool[s]]
    print(f"{len(jobs)} kernels of {len(wanted)} tasks, {workers} at a time", flush=True)
    with Evaluator(cfg.eval) as evaluator:
        verdicts = PoolVerdicts(evaluator, cache_dir or verdict_dir(), pool)

        def one(job: tuple[Any, Any]) -> str | None:
            task, kernel = job
            started = time.monotonic()
            result = verdicts.evaluate(task, kernel.source)
            status = result.status.value
            why = problem(kernel.kind, status)
            first = (result.message or "").strip().splitlines()[:1]
            print(
                f"{'BAD ' if why else 'ok  '}{task.name:<14} {kernel.name:<26} {kernel.kind:<6} -> {status:<10}"
                f" {time.monotonic() - started:5.1f} s" + (f"  {first[0][:100]}" if why and first else ""),
                flush=True,
            )
            return f"{task.id} {kernel.name} ({kernel.kind}): {why}, {status}" if why else None

        with ThreadPoolExecutor(max(1, workers)) as threads:
            found = list(threads.map(one, jobs))
    print(f"{verdicts.evaluated} evaluated, {len(jobs) - verdicts.evaluated} from the verdict cache")
    return [line for line in found if line]
