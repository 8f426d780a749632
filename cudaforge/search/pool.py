"""The simulator's pool: real kernel sources per task, and their verdicts from the real evaluator, cached by source.

A pool file (``cudaforge/resources/simulator/tiny_pool.yaml`` for the ``tiny`` suite) lists, per task (the last part
of its id), kernels of three kinds: ``honest`` (correct, each with a ``speedup`` it declares), ``wrong`` and
``hack`` (what the integrity guards reject). ``PoolVerdicts`` wraps the run's evaluator: the first evaluation of a
source is the evaluator's own, kept in a cache folder by task, evaluation settings and source hash, so a simulation
evaluates each pool kernel once, whatever the number of runs, seeds and strategies (docs/simulator.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from cudaforge.paths import RESOURCES
from cudaforge.proc.files import write_atomic
from cudaforge.types import EvalResult, SpeedupStats, Task, source_hash

POOLS = RESOURCES / "simulator"
"""The packaged pools' folder."""
TINY_POOL = POOLS / "tiny_pool.yaml"
"""The packaged pool of the ``tiny`` suite's three tasks (the simulator's default)."""
SIM20_POOL = POOLS / "sim20_pool.yaml"
"""The packaged pool of the ``sim20`` suite's 20 tasks (``benchmarks/search/make_pool.py`` writes it)."""
KINDS = ("honest", "wrong", "hack")
"""A pool kernel's kinds."""
DECLARED = "declared by the simulator's pool"
"""The baseline a declared speedup names (``SpeedupStats.baseline``), where the evaluator timed nothing."""


@dataclass(frozen=True)
class PoolKernel:
    """One kernel of a task's pool."""

    name: str
    kind: str
    source: str
    speedup: float | None = None
    """The speedup an honest kernel declares (used only where the evaluator cannot time: no GPU)."""
    note: str = ""

    @property
    def digest(self) -> str:
        """The source's hash (``cudaforge.types.source_hash``)."""
        return source_hash(self.source)


def task_key(task_id: str) -> str:
    """A task's name in a pool: the last part of its id (``tiny/level1/1_ReLU`` -> ``1_ReLU``)."""
    return task_id.rsplit("/", 1)[-1]


def load_pool(path: Path = TINY_POOL) -> dict[str, list[PoolKernel]]:
    """A pool file's kernels by task; a kernel of unknown kind, or an honest one with no speedup, is an error."""
    data = yaml.safe_load(Path(path).read_text()) or {}
    pool: dict[str, list[PoolKernel]] = {}
    for task, entries in (data.get("tasks") or {}).items():
        kernels = [PoolKernel(**{k: v for k, v in e.items() if k in PoolKernel.__dataclass_fields__}) for e in entries]
        for kernel in kernels:
            if kernel.kind not in KINDS or (kernel.kind == "honest" and kernel.speedup is None):
                raise ValueError(f"{path}: {task}/{kernel.name}: a kind of {KINDS}, honest ones with a speedup")
        pool[str(task)] = kernels
    return pool


NOT_IN_VERDICT = ("build_cache_dir", "held_out_shapes", "held_out_decides", "held_out_max_input_mb")
"""Evaluation settings a verdict does not depend on: where builds are kept, and the held-out check after the loop
(its evaluations are the evaluator's own, never cached)."""


def settings_key(settings: Any) -> str:
    """What of an evaluator's settings a verdict depends on, hashed: every field but ``NOT_IN_VERDICT``."""
    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        fields = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
        settings = {key: value for key, value in fields.items() if key not in NOT_IN_VERDICT}
    return hashlib.sha256(repr(settings).encode()).hexdigest()[:16]


class PoolVerdicts:
    """An evaluator that evaluates each source once per task and evaluation settings, and reuses the verdict after.

    ``inner`` is the run's evaluator (``cudaforge.eval.evaluator.Evaluator``, or one standing for it); ``cache_dir``
    keeps one JSON file per verdict. A correct verdict without a timed speedup (no GPU) gets the pool kernel's
    declared one, with ``baseline`` saying so (``DECLARED``)."""

    def __init__(self, inner: Any, cache_dir: Path, pool: dict[str, list[PoolKernel]]):
        self.inner, self.cache_dir, self.pool = inner, Path(cache_dir), pool
        self.settings = settings_key(getattr(inner, "cfg", None))
        self.evaluated = 0
        """Evaluations this object asked its evaluator for (a cached verdict is not one)."""
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # the runner asks an evaluator for its GPUs and build settings
        return getattr(self.inner, name)

    def _path(self, task: Task, source: str) -> Path:
        key = hashlib.sha256(f"{task.id}\0{task.source_hash}\0{self.settings}\0{source}".encode()).hexdigest()
        return self.cache_dir / f"{key[:32]}.json"

    def evaluate(self, task: Task, source: str, **options: Any) -> EvalResult:
        """The cached verdict of ``source`` on ``task``, or the evaluator's, then cached; an evaluation with options
        (the held-out shapes' ``changes`` ...) is the evaluator's, not cached."""
        if options:
            return cast(EvalResult, self.inner.evaluate(task, source, **options))
        path = self._path(task, source)
        if path.is_file():
            result = EvalResult.from_dict(json.loads(path.read_text()))
        else:
            result = cast(EvalResult, self.inner.evaluate(task, source))
            with self.lock:
                self.evaluated += 1
            write_atomic(path, json.dumps(result.to_dict()))  # runs side by side share the folder
        return self._declared(task, source, result)

    def prime(self, task: Task, workers: int = 4) -> list[EvalResult]:
        """Evaluate the task's whole pool now, ``workers`` at a time (verdicts already cached are not evaluated
        again); returns the verdicts in the pool's order."""
        from concurrent.futures import ThreadPoolExecutor

        kernels = self.pool.get(task_key(task.id), [])
        with ThreadPoolExecutor(max(1, workers)) as threads:
            return list(threads.map(lambda kernel: self.evaluate(task, kernel.source), kernels))

    def _declared(self, task: Task, source: str, result: EvalResult) -> EvalResult:
        if not result.correct or result.speedup is not None:
            return result
        kernel = next((k for k in self.pool.get(task_key(task.id), []) if k.source == source), None)
        if kernel is None or kernel.speedup is None:
            return result
        s = float(kernel.speedup)
        result.speedup = SpeedupStats(median=s, ci_low=s, ci_high=s, baseline=DECLARED)
        result.message += f"\n(speedup {s:.2f}x {DECLARED}: this evaluator timed nothing)"
        return result
