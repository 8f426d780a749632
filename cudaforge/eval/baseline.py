"""``cudaforge baseline``: time a suite's references on this GPU, eager and under torch.compile.

Each task runs in an isolated child on one GPU, with the evaluator's timing protocol (TF32
off, inputs drawn on the device from the evaluation seed, warm-up, L2 flush before every
call, CUDA events plus a full device synchronisation, median with a bootstrap interval) and
the GPU fingerprint. Without a GPU nothing is timed and the result says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cudaforge.eval.settings import EvalConfig
from cudaforge.proc.isolation import run_isolated
from cudaforge.types import Record, Task, TimingStats
from cudaforge.vendors import pinned

MODES = ("eager", "compile")


@dataclass
class Baseline(Record):
    """A task's reference timings on one GPU."""

    task_id: str
    status: str
    """``ok``, ``unavailable`` (no GPU), ``error``, ``timeout`` or ``crashed``."""
    eager: TimingStats | None = None
    compile: TimingStats | None = None
    compile_mode: str = ""
    message: str = ""
    fingerprint: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def ms(self, mode: str) -> float | None:
        """The median time of ``mode`` (``eager`` or ``compile``), or None."""
        stats = getattr(self, mode)
        return stats.median if stats else None


def time_reference(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Child entry: time ``payload['task']``'s reference eagerly and compiled."""
    import torch

    from cudaforge.eval.fingerprint import environment_fingerprint
    from cudaforge.eval.timing import time_one
    from cudaforge.tasks.runtime import build_model, load_module, make_inputs, strict_fp32

    strict_fp32()
    task, cfg = Task.from_dict(payload["task"]), EvalConfig.from_dict(payload["eval"])
    device = torch.device("cuda")
    module = load_module(task.source, "cudaforge_reference")
    model = build_model(module.Model, list(module.get_init_inputs()), cfg.seed, device)
    inputs = make_inputs(module, seed=cfg.seed * 7919, device=device)
    out: dict[str, Any] = {"task_id": task.id, "status": "ok", "compile_mode": cfg.compile_mode}
    out["fingerprint"] = environment_fingerprint(0)

    from cudaforge.hardware.gpu_lock import gpu_lock

    for mode in MODES:
        progress(mode)
        fn = model if mode == "eager" else torch.compile(model, mode=cfg.compile_mode)
        # the GPU's lock, as the verifier's timing holds it: nothing else times on this GPU meanwhile, and
        # torch.compile's autotuning benchmarks disturb no other timing
        with gpu_lock(pinned() or "0"), torch.no_grad():
            try:
                times = time_one(
                    fn,
                    trials=cfg.timing_trials,
                    warmup=cfg.warmup,
                    flush_l2=cfg.flush_l2,
                    device=device,
                    args=inputs,
                    lead_us=cfg.timing_lead_us,
                )
            except Exception as exc:  # noqa: BLE001 - a failing torch.compile is a result
                out["message"] = f"{mode}: {type(exc).__name__}: {exc}"[:1000]
                continue
        out[mode] = times.stats().to_dict()
        out["fingerprint"]["timing_lead_us"] = times.lead_us  # as in an EvalResult's fingerprint
    return out


def time_suite(
    tasks: list[Task],
    eval_cfg: EvalConfig,
    gpu: str | None,
    on_result: Callable[[Baseline], None] | None = None,
    lock_dir: str | None = None,
) -> list[Baseline]:
    """Time every task's reference on physical GPU ``gpu`` (None: nothing is timed), each call under the GPU's lock
    (``lock_dir``: the lock files' folder, shared with the evaluator and the profiler; None: the default)."""
    results = []
    for task in tasks:
        started = time.monotonic()
        if gpu is None:
            result = Baseline(task.id, "unavailable", message="no GPU: baselines are GPU timings")
        else:
            outcome = run_isolated(
                "cudaforge.eval.baseline:time_reference",
                {"task": task.to_dict(), "eval": eval_cfg.to_dict()},
                timeouts={"start": eval_cfg.static_timeout_s},
                default_timeout=eval_cfg.timing_timeout_s,
                gpu=gpu,
                env={"CUDAFORGE_LOCK_DIR": lock_dir} if lock_dir else None,
            )
            if outcome.status == "ok" and outcome.result:
                result = Baseline.from_dict(outcome.result)
            else:
                message = outcome.error.strip().splitlines()[-1] if outcome.error else outcome.status
                result = Baseline(task.id, outcome.status, message=message)
        result.seconds = time.monotonic() - started
        results.append(result)
        if on_result:
            on_result(result)
    return results
