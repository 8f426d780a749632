"""Which verified kernels an SFT dataset may call positives (docs/teaching.md, "What counts as a positive").

``verified`` (``cudaforge.teach.runs``) says the evaluation ended ``correct`` with no rejecting finding. A positive
must also have been checked by every check of the default protocol and have passed them all:

- the run's evaluation protocol is at least as strict as ``eval=default`` on every setting that decides a verdict
  (``protocol_gaps``: a run under ``eval=cudaforge_authors`` reports its guards instead of rejecting, checks one
  trial, no hidden distribution ...);
- the kernel carries no finding that marks it hollow (``hollow_findings``): a finding of a guard whose default
  policy rejects (kept as a report by a protocol that does not enforce it), PyTorch compute in its forward
  (``torch_compute``: the kernel does not do the work), or a check's flag (``precision``, ``precision_fp64``,
  ``parameters_not_varied``);
- it passed its task's held-out shapes: only a task's best kernel is checked on them, so only it can be a positive,
  and only when it failed none (a task whose sizes give no held-out shape has none to fail).

Every other kernel keeps its labels in the ``turns`` and preference rows.
"""

from __future__ import annotations

from typing import Any

from cudaforge.eval import GUARDS, REJECT, EvalConfig, shapes_pass
from cudaforge.types import CHECK_FLAGS, EvalResult, TaskResult

HOLLOW_GUARDS = ("torch_compute",)
"""Report-only guards whose findings still mean the kernel did not do the work itself."""

_DEFAULT = EvalConfig()
_AT_LEAST = ("correctness_trials",)
_AT_MOST = ("atol_fp32", "rtol_fp32", "atol_half", "rtol_half")
_SAME = (
    "check_variants",
    "vary_parameters",
    "fp64_reference",
    "held_out_shapes",
    "poison_memory",
    "stricter_checks_decide",
    "guards_enforce",
    "compare_outputs",
    "equal_nan",
    "weights",
)


def protocol_gaps(config: dict[str, Any]) -> list[str]:
    """The settings of a run's ``eval`` config (``.hydra/config.yaml``) that are looser than the default protocol's,
    as ``key=value``; a run without a config has one gap (``no config``)."""
    if not config:
        return ["no config"]
    eval_cfg = config.get("eval") or {}
    gaps = []
    for key in _AT_LEAST:
        if key in eval_cfg and eval_cfg[key] < getattr(_DEFAULT, key):
            gaps.append(f"{key}={eval_cfg[key]}")
    for key in _AT_MOST:
        if key in eval_cfg and eval_cfg[key] > getattr(_DEFAULT, key):
            gaps.append(f"{key}={eval_cfg[key]}")
    for key in _SAME:
        default = getattr(_DEFAULT, key)
        default = getattr(default, "value", default)
        if key in eval_cfg and eval_cfg[key] != default:
            gaps.append(f"{key}={eval_cfg[key]}")
    hidden = eval_cfg.get("hidden_inputs")
    if hidden is not None and set(_DEFAULT.hidden_inputs) - set(hidden):
        gaps.append(f"hidden_inputs={list(hidden)}")
    return gaps


def hollow_findings(result: EvalResult) -> list[str]:
    """The guards of ``result``'s findings that mark a correct kernel hollow (module text)."""
    found = []
    for finding in result.guard_findings:
        name = str(finding.get("guard", ""))
        guard = GUARDS.get(name)
        if name in CHECK_FLAGS or name in HOLLOW_GUARDS:
            found.append(name)
        elif guard is not None and guard.field not in (None, "torch_ops") and _default_policy(guard.field) == REJECT:
            found.append(name)
    return sorted(set(found))


def _default_policy(field: str) -> str:
    value = getattr(_DEFAULT.guards, field, None)
    return str(getattr(value, "value", value))


def held_out_passed(task_result: TaskResult | None, candidate_hash: str | None) -> bool:
    """Whether a kernel passed its task's held-out shapes: the task's best kernel, which failed none of those
    checked (True as well when the task's sizes give none)."""
    if task_result is None or candidate_hash is None or candidate_hash != task_result.best_candidate_hash:
        return False
    record = task_result.held_out or {}
    if not record:
        return False  # never checked (the setting off, or a run made before it existed)
    passed = shapes_pass(record)
    if passed is None:  # no shape derived from the task's sizes: nothing to fail (a check that failed is not that)
        note = str(record.get("note") or "")
        return bool(note) and not note.startswith("the held-out check failed")
    return passed


def not_positive(
    result: EvalResult | None, config: dict[str, Any], task_result: TaskResult | None, candidate_hash: str | None
) -> list[str]:
    """Why a kernel is not an SFT positive (empty: it is one)."""
    from cudaforge.teach.runs import verified

    if not verified(result):
        return ["not verified"]
    assert result is not None
    why = [f"protocol: {gap}" for gap in protocol_gaps(config)]
    why += [f"finding: {name}" for name in hollow_findings(result)]
    if not held_out_passed(task_result, candidate_hash):
        why.append("held-out shapes: not passed (or not checked)")
    return why
