"""What one evaluation measured before its candidate existed that the next evaluation of the same task, on the same
GPU under the same settings, may use as it is (the ``Evaluator`` keeps it; ``verifier.start.before_candidate``
reads it). No torch here: the evaluator's process imports it.

Such figures can only be made larger by what else runs at the time (a slower reference alone, a dearer exchange
path), and larger figures loosen the guards that read them. So the ``Evaluator`` keeps only figures measured while
it ran nothing else (no other evaluation, no build), both of them, through an arena in GPU memory; and they stand
for ``BEFORE_MAX_AGE_S`` from the moment they were measured."""

from __future__ import annotations

import time
from typing import Any, TypeGuard

BEFORE_KEYS = ("reference_solo_ms", "timing_crosscheck_exchange_ms")
"""What ``verifier.start.before_candidate`` measures: both depend on the task, the GPU and the settings alone."""

BEFORE_MAX_AGE_S = 600.0
"""How long an earlier evaluation's ``before_candidate`` figures stand in for a new measurement."""

MAX_MS = 1e6
"""No figure of a real measurement is larger (the timing's timeout is far shorter)."""


def _number(value: Any, upper: float) -> TypeGuard[float]:
    """A number in [0, upper) (not a bool, not NaN; an integer too large for a float is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return 0 <= float(value) < upper
    except OverflowError:
        return False


def _figure(value: Any) -> bool:
    return _number(value, MAX_MS)


def known_before(known: Any, now: float | None = None) -> dict[str, Any] | None:
    """The figures of ``known`` (an earlier evaluation's :func:`kept_before`, of the same task on the same GPU under
    the same settings, passed by the ``Evaluator``) with their age and source, when it is well formed and at most
    ``BEFORE_MAX_AGE_S`` old, else None (measure)."""
    if not isinstance(known, dict) or not isinstance(known.get("values"), dict):
        return None
    values, at = known["values"], known.get("measured_at")
    if set(values) != set(BEFORE_KEYS) or not all(_figure(v) for v in values.values()):
        return None
    if not values["reference_solo_ms"] > 0 or not _number(at, 1e11):
        return None
    age = (time.time() if now is None else now) - float(at)
    if not 0 <= age <= BEFORE_MAX_AGE_S:
        return None
    source = known.get("from")
    return {
        "values": dict(values),
        "age_s": round(age, 1),
        "from": source if isinstance(source, str) and source.isalnum() and len(source) <= 64 else None,
    }


def kept_before(fingerprint: dict[str, Any], candidate_hash: str) -> dict[str, Any] | None:
    """What an evaluation measured before its candidate, for the ``Evaluator`` to pass to the next evaluation of
    the same task on the same GPU: None when it reused earlier figures, measured only some of them (the GPU was
    busy, or its memory could not hold the exchange's batch), or crossed through host memory."""
    if fingerprint.get("measured_before_reused") or fingerprint.get("timing_crosscheck_exchange_arena") != "device":
        return None
    kept = {
        "values": {k: fingerprint.get(k) for k in BEFORE_KEYS},
        "measured_at": fingerprint.get("measured_before_at"),
        "from": candidate_hash,
    }
    return kept if known_before(kept) is not None else None


def reference_decisions(checks: dict[str, Any], known: dict[str, Any] | None) -> dict[str, Any]:
    """What an evaluation's checks (``EvalResult.checks``) decided of its task's reference, merged over ``known``:
    ``hidden`` (each hidden distribution judged: "" when the reference can judge it, else why not), ``fp64``
    (``{"trusted", "base_nonfinite"}``: whether the reference's fp32 output on the default inputs agrees with its fp64
    evaluation, and its non-finite elements there) and ``parameters`` (``{"degenerate": why or ""}`` once the
    reference's varied parameters were checked). Empty when nothing was."""
    out: dict[str, Any] = {k: dict(v) for k, v in (known or {}).items() if isinstance(v, dict)}
    hidden = (checks or {}).get("hidden") or {}
    decided = hidden.get("decided") if isinstance(hidden, dict) else None
    if isinstance(decided, dict):
        out.setdefault("hidden", {}).update({str(k): str(v) for k, v in decided.items()})
    fp64 = (checks or {}).get("fp64") or {}
    reference = fp64.get("reference") if isinstance(fp64, dict) else None
    if isinstance(reference, dict):
        out["fp64"] = dict(reference)
    params = (checks or {}).get("parameters") or {}
    if isinstance(params, dict) and "checked" in params:
        out["parameters"] = {"degenerate": str(params.get("dropped", ""))}
    return out
