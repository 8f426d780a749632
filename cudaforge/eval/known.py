"""What one evaluation measured before its candidate existed that the next evaluation of the same task, on the same
GPU under the same settings, may use as it is (the ``Evaluator`` keeps it; ``verifier.start.before_candidate``
reads it). No torch here: the evaluator's process imports it."""

from __future__ import annotations

import math
import time
from typing import Any

BEFORE_KEYS = ("reference_solo_ms", "timing_crosscheck_exchange_ms")
"""What ``verifier.start.before_candidate`` measures: both depend on the task, the GPU and the settings alone."""

BEFORE_MAX_AGE_S = 600.0
"""How long an earlier evaluation's ``before_candidate`` figures stand in for a new measurement."""


def known_before(known: Any, now: float | None = None) -> dict[str, Any] | None:
    """The figures of ``known`` (an earlier evaluation's :func:`kept_before`, of the same task on the same GPU under
    the same settings, passed by the ``Evaluator``) with their age and source, when it is well formed and at most
    ``BEFORE_MAX_AGE_S`` old, else None (measure)."""
    if not isinstance(known, dict) or not isinstance(known.get("values"), dict):
        return None
    values, at = known["values"], known.get("measured_at")
    if "reference_solo_ms" not in values or set(values) - set(BEFORE_KEYS):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values.values()):
        return None
    if values["reference_solo_ms"] <= 0 or any(v < 0 for v in values.values()):
        return None
    age = (time.time() if now is None else now) - at if isinstance(at, (int, float)) else math.inf
    if not 0 <= age <= BEFORE_MAX_AGE_S:
        return None
    source = known.get("from")
    return {
        "values": dict(values),
        "age_s": round(age, 1),
        "from": source if isinstance(source, str) and source.isalnum() and len(source) <= 64 else None,
    }


def kept_before(fingerprint: dict[str, Any], candidate_hash: str) -> dict[str, Any] | None:
    """What an evaluation measured before its candidate (None when it reused earlier figures or measured nothing),
    for the ``Evaluator`` to pass to the next evaluation of the same task on the same GPU."""
    if fingerprint.get("measured_before_reused") or "reference_solo_ms" not in fingerprint:
        return None
    kept = {
        "values": {k: fingerprint[k] for k in BEFORE_KEYS if k in fingerprint},
        "measured_at": time.time(),
        "from": candidate_hash,
    }
    return kept if known_before(kept) is not None else None
