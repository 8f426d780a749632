"""What every phase of the verifier shares: its limits, the failure that ends an evaluation, the guards' findings,
the phase records, and the comparison of outputs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from cudaforge.eval.bounded import finite_number
from cudaforge.eval.correctness import compare, compare_first
from cudaforge.eval.guards.policy import Policies, rejection_message, rejections
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.worker.exchange import tensor_bytes
from cudaforge.tasks.runtime import default_tolerance, flatten_outputs
from cudaforge.types import CorrectnessDiff, EvalResult, EvalStatus, Phase, PhaseRecord, Task

REFERENCE_MODULE = "cudaforge_reference"
PROFILED_CALLS = 3
PRECISION_TRIALS = 6  # timed calls of the reference under each precision of the probe
CROSSCHECK_ROUNDS = 2  # batches per side of the timing cross-check; each side keeps its fastest
CROSSCHECK_RETRIES = 1  # times the cross-check measures again (CROSSCHECK_ROUNDS more batches) before it fires
"""Forwards the profiler-share guard runs under torch.profiler (GPU)."""
SOLO_TRIALS = 10
"""Timed calls of the reference alone, before any candidate code exists (the reference_slowdown baseline)."""
PROFILE_DIR_ENV = "CUDAFORGE_PROFILE_DIR"
"""A folder (set in the evaluator's environment, for benchmarks): each evaluation of this process writes a
``cProfile`` dump of its trusted side there (``verifier-<pid>-<ns>.prof``) and its timed series
(``series-<pid>-<ns>.json``: every kept trial's times, as ``Timing.dump_series`` writes them). Unset, nothing is
written."""


class Failure(Exception):
    """Ends the evaluation with a status and a message for the Judge."""

    def __init__(self, status: EvalStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Guards:
    """The guard policies of this evaluation and the findings so far (they end up in the result)."""

    def __init__(self, cfg: EvalConfig, result: EvalResult) -> None:
        self.policies = Policies(cfg)
        self.result = result

    def add(self, findings: list[dict[str, str]]) -> None:
        """Keep ``findings``; end the evaluation as ``rejected`` when one of them rejects."""
        self.result.guard_findings.extend(findings)
        if rejections(findings):
            raise Failure(EvalStatus.REJECTED, rejection_message(findings))

    def fire(self, guard: str, evidence: str) -> None:
        """A guard with a policy fired: reject or report as the policy says (a report only the first time)."""
        if any(f["guard"] == guard for f in self.result.guard_findings):
            return
        self.add([self.policies.found(guard, evidence)])

    def incorrect(self, guard: str, evidence: str, message: str) -> None:
        """A wrong output, explained by ``guard``: ``incorrect`` with the evidence (a report if guards are off)."""
        if guard:
            self.result.guard_findings.append(self.policies.found(guard, evidence))
            message += f"\n{guard}: {evidence}"
        raise Failure(EvalStatus.INCORRECT, message)


class Recorder:
    """Phase records with their durations; each phase is announced to the parent."""

    def __init__(self, progress: Callable[[str], None]) -> None:
        self.progress = progress
        self.phases: list[PhaseRecord] = []

    def start(self, phase: Phase) -> float:
        self.progress(phase.value)
        return time.perf_counter()

    def end(self, phase: Phase, started: float, status: str = "ok", message: str = "") -> None:
        self.phases.append(PhaseRecord(phase, status, time.perf_counter() - started, message))


def clone_inputs(inputs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def clone_output(value: Any, depth: int = 0) -> Any:
    """A reference output that no later write into the arena can change (it may be a view of its inputs)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)) and depth < 8:
        return type(value)(clone_output(v, depth + 1) for v in value)
    return value


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def tolerance(task: Task, output: Any, cfg: EvalConfig) -> tuple[float, float]:
    tensors = [t for t in flatten_outputs(output) if isinstance(t, torch.Tensor)]
    dtype = tensors[0].dtype if tensors else torch.float32
    atol, rtol = default_tolerance(dtype, cfg.atol_fp32, cfg.rtol_fp32, cfg.atol_half, cfg.rtol_half)
    return (task.atol if task.atol is not None else atol, task.rtol if task.rtol is not None else rtol)


def compare_outputs(
    cfg: EvalConfig, expected: Any, actual: Any, *, atol: float, rtol: float, trial: int, variant: str
) -> CorrectnessDiff | None:
    """The comparison of ``eval.compare_outputs``: every output (our protocol) or the first tensor by
    ``torch.allclose`` (the CudaForge authors'), with ``eval.equal_nan``; None or the diff."""
    check = compare_first if cfg.compare_outputs.value == "first" else compare
    return check(expected, actual, atol=atol, rtol=rtol, trial=trial, variant=variant, equal_nan=cfg.equal_nan)


def structure(cfg: EvalConfig, expected: Any, actual: Any) -> str | None:
    """``structure_problem``, except under ``compare_outputs=first`` (only the first tensor counts there)."""
    return None if cfg.compare_outputs.value == "first" else structure_problem(expected, actual)


def shapes_of(values: list[Any]) -> str:
    return ", ".join("x".join(map(str, t.shape)) for t in values if isinstance(t, torch.Tensor))


def structure_problem(expected: Any, actual: Any) -> str | None:
    """Evidence when the candidate's result is not shaped like the reference's: a tensor where the reference
    returns one, a tuple or list of the same length where it returns one (nested alike)."""
    if isinstance(expected, torch.Tensor):
        if isinstance(actual, torch.Tensor):
            return None
        what = f"a {type(actual).__name__}" + (f" of {len(actual)}" if isinstance(actual, (list, tuple)) else "")
        return f"the reference returns a tensor; ModelNew.forward returned {what}. Return the tensor itself."
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            got = f"a {type(actual).__name__}" + (f" of {len(actual)}" if isinstance(actual, (list, tuple)) else "")
            return (
                f"the reference returns a {type(expected).__name__} of {len(expected)}; ModelNew.forward "
                f"returned {got}."
            )
        for exp, act in zip(expected, actual):
            problem = structure_problem(exp, act)
            if problem:
                return problem
    return None


def facts_problem(facts: Any, device: torch.device) -> str | None:
    """Evidence from the worker's account of its outputs (class, layout, device) for the output_type guard."""
    if not isinstance(facts, list):
        return None
    for i, fact in enumerate(facts):
        if not isinstance(fact, dict):
            continue
        label = f"output {i}" if len(facts) > 1 else "the output"
        if fact.get("plain") is False:
            return (
                f"{label} is a {str(fact.get('cls'))[:80]}, a subclass of torch.Tensor, not a plain torch.Tensor: a "
                "subclass can defer the work until the result is read, outside the timed call. Return the computed "
                "tensor itself."
            )
        if fact.get("layout") not in (None, "torch.strided"):
            return f"{label} has layout {str(fact.get('layout'))[:40]}; the reference returns a dense (strided) tensor."
        if fact.get("device") not in (None, device.type):
            return f"{label} is on {str(fact.get('device'))[:20]}, not on the evaluation device {device}: compute it there."
        if fact.get("storage") is False:
            return f"{label} has no storage behind it."
    return None


def output_budget(value: Any) -> int:
    return 2 * tensor_bytes(value) + (1 << 16)


def same_bits(a: Any, b: Any) -> bool:
    """Whether two outputs hold the same tensors bit for bit (same structure, shapes and dtypes)."""
    xs, ys = flatten_outputs(a), flatten_outputs(b)
    return len(xs) == len(ys) and all(
        isinstance(x, torch.Tensor)
        and isinstance(y, torch.Tensor)
        and x.shape == y.shape
        and x.dtype == y.dtype
        and torch.equal(x, y)
        for x, y in zip(xs, ys)
    )


def finite_or_none(value: Any) -> float | None:
    """A finite, non-negative number of the worker's reply as a float, else None (a huge JSON integer included: it
    never reaches ``math.isfinite``, which would raise)."""
    return float(value) if finite_number(value) else None
