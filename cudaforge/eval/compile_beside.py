"""torch.compile timed beside eager (``eval.compile_beside``): how a task's best kernel compares with what PyTorch's own
compiler makes of the reference, in the same run.

After the loop, on a GPU, the task's reference is timed eagerly and under ``torch.compile(mode=eval.compile_beside_mode)``
(default ``max-autotune``) in one isolated child, with the evaluator's timing protocol (``baseline.time_reference``,
what ``cudaforge baseline`` runs). The pair is cached per task source, GPU model, torch version, mode and timing
settings (``<build cache>/baselines/``), so a task costs its compile once per GPU, not once per run.

The kernel's speedup over torch.compile is its speedup over eager (measured in its own evaluation, as every speedup)
divided by compile's speedup over eager (both measured in the baseline's one session): a ratio of ratios, each taken
within one session, so the drift between the two sessions cancels. ``TaskResult.compile_beside`` keeps both and
``cudaforge report`` tables fast_p and the geometric mean over torch.compile beside the eager ones.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cudaforge.eval.baseline import Baseline, time_suite
from cudaforge.eval.settings import EvalConfig
from cudaforge.proc.files import write_atomic
from cudaforge.types import Task

CACHE_DIR = "baselines"
"""The folder of cached baseline pairs inside the build cache."""

TIMING_KEYS = ("timing_trials", "warmup", "flush_l2", "timing_lead_us", "seed")
"""The timing settings a cached pair was measured under (a change measures it again)."""

COMPARABLE = {"tf32": "off", "speedup_statistic": "median", "no_grad": True}
"""The protocol settings the pair is measured under (``baseline.time_reference``: strict fp32, medians, no autograd).
Under any other value the kernel's speedup over eager is not the same kind of ratio, so nothing is measured."""


def _torch_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "unknown"


def cache_key(task: Task, gpu_name: str, mode: str, cfg: EvalConfig) -> str:
    """What a cached pair stands for: the reference's source, the GPU model, torch, the mode and the timing settings."""
    plain = cfg.to_dict()
    identity = {
        "task": task.source_hash,
        "gpu": gpu_name,
        "torch": _torch_version(),
        "mode": mode,
        "timing": {k: plain[k] for k in TIMING_KEYS},
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:32]


def summary(baseline: Baseline, mode: str, gpu_name: str, cached: bool) -> dict[str, Any]:
    """The record kept in ``TaskResult.compile_beside``."""
    eager, compiled = baseline.ms("eager"), baseline.ms("compile")
    ratio = eager / compiled if eager and compiled else None
    return {
        "status": baseline.status if ratio else ("error" if baseline.status == "ok" else baseline.status),
        "mode": mode,
        "gpu": gpu_name,
        "eager_ms": eager,
        "compile_ms": compiled,
        "compile_over_eager": ratio,
        "cached": cached,
        "message": baseline.message[:500],
    }


def not_comparable(cfg: EvalConfig) -> str:
    """Why the protocol's speedups cannot be set beside the pair (``COMPARABLE``), or ""."""
    plain = cfg.to_dict()
    other = [f"eval.{k}={plain[k]}" for k, v in COMPARABLE.items() if plain[k] != v]
    return (
        (
            f"{', '.join(other)}: the torch.compile pair is timed in strict fp32, by medians, without autograd, so it "
            "is not comparable with this protocol's speedups"
        )
        if other
        else ""
    )


def compile_beside(
    task: Task, gpu: str, gpu_name: str, cfg: EvalConfig, cache_root: Path, lock_dir: str | None = None
) -> dict[str, Any]:
    """The reference's eager and compiled times on physical GPU ``gpu`` (model ``gpu_name``), from the cache when this
    task, GPU model, torch, mode and timing were measured before; a failed measurement is returned, never cached.
    ``lock_dir``: the GPU locks' folder the evaluator uses."""
    mode = str(cfg.compile_beside_mode or "max-autotune")
    why = not_comparable(cfg)
    if why:
        return {
            "status": "not_comparable",
            "mode": mode,
            "gpu": gpu_name,
            "eager_ms": None,
            "compile_ms": None,
            "compile_over_eager": None,
            "cached": False,
            "message": why,
        }
    key = cache_key(task, gpu_name, mode, cfg)
    path = Path(cache_root) / CACHE_DIR / f"{key}.json"
    try:
        stored = Baseline.from_dict(json.loads(path.read_text()))
        if stored.ms("eager") and stored.ms("compile"):
            return summary(stored, mode, gpu_name, cached=True)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    measured = time_suite([task], cfg.replace(compile_mode=mode), gpu, lock_dir=lock_dir)[0]
    if measured.ms("eager") and measured.ms("compile"):
        write_atomic(path, json.dumps(measured.to_dict()))
    return summary(measured, mode, gpu_name, cached=False)
