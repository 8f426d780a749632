"""The fixed schema of each exported dataset, checked on every row written.

A schema maps a column to a type: ``"string"``, ``"int64"``, ``"float64"``, ``"bool"``, ``["string"]`` (a
list of strings), ``[{...}]`` (a list of structs) or ``{...}`` (a struct). Every row has every column;
any scalar may be null. Rows that conform load with ``datasets.load_dataset("json", data_files=...)``
into one consistent table, and the same schema goes into the dataset card (``README.md``) in Hugging
Face's ``dataset_info.features`` notation, so ``datasets.load_dataset(EXPORT_DIR)`` types every column
even where the first rows hold nulls.
"""

from __future__ import annotations

import math
from typing import Any

SCALARS = ("string", "int64", "float64", "bool")

MESSAGE = {"role": "string", "content": "string"}
"""A chat message."""

PROVENANCE = {
    "run": "string",
    "run_dir": "string",
    "task_id": "string",
    "round": "int64",
    "coder_model": "string",
    "judge_model": "string",
    "strategy": "string",
    "suite": "string",
    "config_hash": "string",
    "candidate_hash": "string",
    "normalized_hash": "string",
}
"""Where a row (or one side of a pair) came from; ``round`` is null for a whole trajectory (a search's path: its leaf)."""

VERSIONS = {
    "torch": "string",
    "torch_cuda": "string",
    "triton": "string",
    "nvcc": "string",
    "driver": "string",
    "python": "string",
}
"""Software versions the evaluator recorded (its fingerprint)."""

MEASUREMENT = {
    "status": "string",
    "verified": "bool",
    "hacked": "bool",
    "speedup": "float64",
    "speedup_ci_low": "float64",
    "speedup_ci_high": "float64",
    "reference_ms": "float64",
    "candidate_ms": "float64",
    "baseline": "string",
    "gpu": "string",
    "device": "string",
}
"""What the evaluator found about one candidate (speedups null when untimed)."""

SFT = {
    "id": "string",
    "task_id": "string",
    "task_name": "string",
    "level": "int64",
    "messages": [MESSAGE],
    "prompt": [MESSAGE],
    "completion": [MESSAGE],
    "source": "string",
    "timed": "bool",
    "speedup": "float64",
    "speedup_ci_low": "float64",
    "speedup_ci_high": "float64",
    "reference_ms": "float64",
    "candidate_ms": "float64",
    "baseline": "string",
    "gpu": "string",
    "device": "string",
    "versions": VERSIONS,
    "trials_passed": "int64",
    "trials_total": "int64",
    "guard_notes": ["string"],
    "provenance": PROVENANCE,
}

ROUND = {
    "round": "int64",
    "coder_mode": "string",
    "coder_messages": [MESSAGE],
    "candidate_hash": "string",
    "reused_evaluation": "bool",
    "eval": MEASUREMENT,
    "eval_summary": "string",
    "judge_mode": "string",
    "judge_messages": [MESSAGE],
    "judge_feedback": "string",
    "reward": "float64",
}

TRAJECTORIES = {
    "id": "string",
    "task_id": "string",
    "task_name": "string",
    "level": "int64",
    "messages": [MESSAGE],
    "rounds": [ROUND],
    "rewards": ["float64"],
    "final_reward": "float64",
    "best_reward": "float64",
    "best_speedup": "float64",
    "solved": "bool",
    "versions": VERSIONS,
    "provenance": PROVENANCE,
}

SIDE = {"source": "string", "eval": MEASUREMENT, "reward": "float64", "provenance": PROVENANCE}

PREFERENCES = {
    "id": "string",
    "task_id": "string",
    "task_name": "string",
    "level": "int64",
    "prompt": [MESSAGE],
    "chosen": [MESSAGE],
    "rejected": [MESSAGE],
    "reason": "string",
    "chosen_info": SIDE,
    "rejected_info": SIDE,
}

FINDING = {"guard": "string", "verdict": "string", "evidence": "string"}
"""One integrity-guard finding (``reject`` findings make a candidate a hack)."""

PRECISION = {
    "reference": "string",
    "over_strict_fp32": "float64",
    "best_allowed": "string",
    "over_best_allowed": "float64",
    "probe_reproduces_win": "bool",
    "launch_inclusive": "float64",
    "timing_clean": "bool",
}
"""How a speedup was measured (``EvalResult.measurement``): the reference's precision and the precision probe."""

METRIC = {"name": "string", "value": "float64", "unit": "string", "text": "string"}
"""One profiler metric the Judge read (``value`` and ``unit``, or ``text`` for a non-numeric one)."""

TURNS = {
    "id": "string",
    "task_id": "string",
    "task_name": "string",
    "level": "int64",
    "round": "int64",
    "role": "string",
    "mode": "string",
    "messages": [MESSAGE],
    "completion": [MESSAGE],
    "label": "string",
    "verified": "bool",
    "hacked": "bool",
    "guard_findings": [FINDING],
    "precision": PRECISION,
    "eval": MEASUREMENT,
    "eval_summary": "string",
    "profile_metrics": [METRIC],
    "feedback": "string",
    "reward": "float64",
    "held_out_correct": "bool",
    "positive": "bool",
    "not_positive": ["string"],
    "provenance": PROVENANCE,
}
"""One agent turn: a Coder reply and the evaluator's verdict on its kernel, or a Judge reply and the verdict and
profiler metrics it read."""

SCHEMAS: dict[str, dict[str, Any]] = {
    "sft": SFT,
    "trajectories": TRAJECTORIES,
    "preferences": PREFERENCES,
    "turns": TURNS,
}
"""Format name -> schema."""


class SchemaError(ValueError):
    """A row does not fit its schema."""


def conform(value: Any, schema: Any, where: str = "row") -> Any:
    """``value`` checked against ``schema`` (ints widened to float64, non-finite floats to null); SchemaError
    names the first mismatch."""
    if isinstance(schema, str):
        if value is None:
            return None
        if schema == "string" and isinstance(value, str):
            return value
        if schema == "bool" and isinstance(value, bool):
            return value
        if schema == "int64" and isinstance(value, int) and not isinstance(value, bool):
            return value
        if schema == "float64" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) if math.isfinite(value) else None
        raise SchemaError(f"{where}: expected {schema}, got {type(value).__name__} {value!r:.80}")
    if isinstance(schema, list):
        if not isinstance(value, list):
            raise SchemaError(f"{where}: expected a list, got {type(value).__name__}")
        return [conform(v, schema[0], f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        raise SchemaError(f"{where}: expected a struct, got {type(value).__name__}")
    if set(value) != set(schema):
        missing, extra = sorted(set(schema) - set(value)), sorted(set(value) - set(schema))
        raise SchemaError(f"{where}: keys differ from the schema (missing {missing}, extra {extra})")
    return {key: conform(value[key], schema[key], f"{where}.{key}") for key in schema}


def _features(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Hugging Face's card notation (``dataset_info.features``) of a struct schema."""
    out: list[dict[str, Any]] = []
    for name, kind in schema.items():
        if isinstance(kind, str):
            out.append({"name": name, "dtype": kind})
        elif isinstance(kind, list) and isinstance(kind[0], str):
            out.append({"name": name, "sequence": kind[0]})
        elif isinstance(kind, list):
            out.append({"name": name, "list": _features(kind[0])})
        else:
            out.append({"name": name, "struct": _features(kind)})
    return out


def features(fmt: str) -> list[dict[str, Any]]:
    """The card notation of one format's schema."""
    return _features(SCHEMAS[fmt])
