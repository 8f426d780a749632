"""A task's best kernel checked on held-out shapes after the loop (``eval.held_out_shapes``).

The shapes come from ``cudaforge/tasks/held_out.py``: the task's own file with its top-level sizes changed (a
non-power-of-two ``odd`` shape, a ``large`` one with the batch doubled), each checked first on torch's ``meta`` device
so that only shapes the reference accepts are kept. Each is then an ordinary evaluation by the trusted evaluator, of
a task whose source is the changed file and that declares no input variants: the same sandbox, guards and (on a GPU)
timing as every round, with two correctness trials and no hidden input distribution (``SHAPE_CHANGES``). On a CPU
(nothing timed) the shapes are evaluated side by side, each in its own workers; on a GPU one after the other. The
Coder and the Judge never see these shapes or their verdicts; the run directory keeps them in
``TaskResult.held_out`` and ``cudaforge report`` tables them beside the main figures.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cudaforge.proc.isolation import run_isolated
from cudaforge.tasks.held_out import HeldOutShape, choose, proposals, shape_signature
from cudaforge.types import EvalResult, Task

CHILD_ENTRY = "cudaforge.tasks.held_out_child:check_shapes"
CHECK_TIMEOUT_S = 180.0
"""The meta-device check of one task's shapes (the child's imports included)."""

SCORED = "scored"
PRECISION_FLAGS = ("precision", "precision_fp64")
"""Findings that fail a held-out shape as a wrong output does (``shapes_pass``)."""
SHAPE_CHANGES: dict[str, Any] = {"hidden_inputs": [], "correctness_trials": 2}
"""A held-out shape is evaluated as every round is, but without the hidden input distributions and with two plain
trials: it asks whether the kernel holds at another shape; the distributions and the repeated trials of the scored
shape have asked the rest."""


def held_out_shapes(task: Task) -> tuple[list[HeldOutShape], str]:
    """The held-out shapes the reference accepts, and, when there are none, why (one line)."""
    shapes = proposals(task.source)
    if not shapes:
        return [], "the task sets no size at top level (a `name = <int>` that get_inputs reads), so no shape is derived"
    items = [{"name": SCORED, "source": task.source}] + [{"name": s.name, "source": s.source} for s in shapes]
    outcome = run_isolated(CHILD_ENTRY, {"shapes": items}, timeouts={}, default_timeout=CHECK_TIMEOUT_S)
    if outcome.status != "ok" or not outcome.result:
        last = (outcome.error.strip().splitlines() or [outcome.status])[-1]
        return [], f"the shapes could not be checked on the meta device ({outcome.status}: {last[:200]})"
    found: dict[str, Any] = outcome.result["shapes"]
    scored = found.get(SCORED) or {}
    if not scored.get("ok"):
        return [], (
            f"the reference does not run on torch's meta device ({scored.get('error', '?')}), so no shape "
            "could be checked ahead"
        )
    for shape in shapes:
        shape.meta = found.get(shape.name) or {}
    chosen = choose(shapes, {name: bool(info.get("ok")) for name, info in found.items()}, shape_signature(scored))
    if not chosen:
        refused = "; ".join(
            f"{s.name}: {s.meta.get('error') or 'the same input and output shapes as scored'}" for s in shapes[:2]
        )
        return [], f"no held-out shape changes what the reference computes on, or it refused them ({refused})"
    return chosen, ""


def derived_task(task: Task, shape: HeldOutShape) -> Task:
    """The task at one held-out shape: its changed source, its tolerances, no input variants."""
    return Task(
        id=f"{task.id}#held_out/{shape.name}",
        suite=task.suite,
        level=task.level,
        problem_id=task.problem_id,
        name=task.name,
        source=shape.source,
        path=task.path,
        atol=task.atol,
        rtol=task.rtol,
        input_variants=[],
    )


def _row(shape: HeldOutShape, result: EvalResult | None, skipped: str = "") -> dict[str, Any]:
    row: dict[str, Any] = {
        "shape": shape.name,
        "sizes": dict(shape.sizes),
        "why": shape.why,
        "inputs": shape.meta.get("inputs"),
        "input_bytes": shape.meta.get("input_bytes"),
    }
    if result is None:
        return {**row, "status": "skipped", "correct": None, "message": skipped}
    speedup = result.speedup
    flags = sorted({str(f.get("guard")) for f in result.guard_findings if f.get("guard") in PRECISION_FLAGS})
    return {
        **row,
        "status": result.status.value,
        "correct": result.correct,
        "flags": flags,
        "speedup": speedup.median if speedup else None,
        "speedup_ci": [speedup.ci_low, speedup.ci_high] if speedup else None,
        "precision": speedup.precision if speedup else "",
        "candidate_ms": result.candidate_timing.median if result.candidate_timing else None,
        "reference_ms": result.reference_timing.median if result.reference_timing else None,
        "message": (result.message or "").strip().splitlines()[0][:300] if result.message else "",
        "seconds": round(result.seconds, 3),
    }


def check_held_out(evaluator: Any, task: Task, source: str, *, max_input_bytes: int) -> dict[str, Any]:
    """Evaluate ``source`` (the task's best kernel) on each held-out shape; returns ``{"shapes": [row, ...], "note":
    why there are none (or ""), "seconds"}``. A shape whose inputs exceed ``max_input_bytes`` is listed as skipped."""
    started = time.monotonic()
    shapes, note = held_out_shapes(task)

    def row(shape: HeldOutShape) -> dict[str, Any]:
        size = int(shape.meta.get("input_bytes") or 0)
        if size > max_input_bytes:
            limit = f"{max_input_bytes / 2**20:.0f} MiB"
            return _row(shape, None, f"inputs of {size / 2**20:.0f} MiB exceed the limit of {limit} here")
        return _row(shape, evaluator.evaluate(derived_task(task, shape), source, changes=SHAPE_CHANGES))

    side_by_side = len(shapes) > 1 and not getattr(evaluator, "gpus", None)  # a CPU evaluator times nothing
    if side_by_side:
        with ThreadPoolExecutor(max_workers=len(shapes)) as pool:
            rows = list(pool.map(row, shapes))
    else:
        rows = [row(shape) for shape in shapes]
    return {"shapes": rows, "note": note, "seconds": round(time.monotonic() - started, 3)}


def shapes_pass(record: dict[str, Any]) -> bool | None:
    """Whether a kernel passed every held-out shape it was checked on (``check_held_out``'s record): correct there,
    and without a precision finding (an error many times the reference's own at that shape is a wrong result that
    the tolerance let through); None when no shape was checked (none derived, or every one skipped)."""
    rows = [r for r in (record or {}).get("shapes", []) if r.get("status") != "skipped"]
    if not rows:
        return None
    return all(bool(r.get("correct")) and not r.get("flags") for r in rows)


DECIDE_TRIES = 3
"""With ``eval.held_out_decides``, the most correct kernels of a task checked on its held-out shapes, the best first."""


def decide(
    evaluator: Any, task: Task, kernels: list[tuple[str, str]], *, max_input_bytes: int
) -> tuple[int | None, list[dict[str, Any]]]:
    """``eval.held_out_decides``: the first of ``kernels`` (``(hash, source)``, the best first, at most
    ``DECIDE_TRIES``) that passes every held-out shape, or that has none to fail (its index, or None when each
    failed one), and each one's record (``check_held_out``'s, with its ``candidate_hash``)."""
    records = []
    for index, (digest, source) in enumerate(kernels[:DECIDE_TRIES]):
        record = {**check_held_out(evaluator, task, source, max_input_bytes=max_input_bytes), "candidate_hash": digest}
        records.append(record)
        if shapes_pass(record) is not False:
            return index, records
    return None, records
