"""Which precision a speedup was measured under, and what precision alone would give (issue 34).

PyTorch lets fp32 matmuls and convolutions run in TF32 (``torch.backends.cuda.matmul.allow_tf32``,
``torch.backends.cudnn.allow_tf32``) and half-precision matmuls reduce in reduced precision; a reference timed one way
and a kernel timed another can differ 2x on the same GPU for no reason the kernel earns. Every result therefore names
its reference's precision policy (``policy_record``), and the verifier runs a *precision probe*: the reference itself
under TF32 and in bf16, each checked against the strict-fp32 reference with the task's own tolerance, and timed alone.
``speedups`` turns those times into the speedup over strict fp32, the speedup over the fastest precision the
tolerance allows, and a flag when the candidate's win over strict fp32 is gone against that precision (the probe
alone reproduces it). Pure except ``numerics``, ``policy_record`` and ``bf16_call``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

POLICIES = ("strict_fp32", "torch_default", "tf32", "bf16")
"""``strict_fp32``: no TF32 anywhere (our default, ``eval.tf32=off``); ``torch_default``: PyTorch's defaults (cuDNN
convolutions in TF32, matmuls not; ``eval.tf32=torch_default``, what KernelBench's harness runs); ``tf32``: TF32 in
matmuls and convolutions; ``bf16``: the reference's model and floating inputs cast to bfloat16."""

FLAGS = {"strict_fp32": (False, False), "torch_default": (False, True), "tf32": (True, True)}
"""(matmul TF32, cuDNN TF32) of each flag policy."""


def policy_name(tf32_mode: str) -> str:
    """The policy an ``eval.tf32`` value runs the reference under."""
    return {"off": "strict_fp32", "on": "tf32"}.get(tf32_mode, "torch_default")


@contextmanager
def numerics(policy: str) -> Iterator[None]:
    """TF32 flags of ``policy`` (one of ``FLAGS``) for the block; the previous flags afterwards."""
    import torch

    matmul, cudnn = FLAGS[policy]
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def policy_record(tf32_mode: str, dtypes: list[str]) -> dict[str, Any]:
    """The reference's precision as it ran: the policy's name, every flag that changes fp32 and half-precision math,
    and the dtypes of the reference's outputs."""
    import torch

    matmul = torch.backends.cuda.matmul
    return {
        "policy": policy_name(tf32_mode),
        "matmul_tf32": bool(matmul.allow_tf32),
        "cudnn_tf32": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "fp16_reduced_precision_reduction": bool(matmul.allow_fp16_reduced_precision_reduction),
        "bf16_reduced_precision_reduction": bool(matmul.allow_bf16_reduced_precision_reduction),
        "output_dtypes": sorted(set(dtypes)),
    }


def _cast(value: Any, dtype: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def bf16_model(model: Any) -> Any:
    """A copy of the reference's model with its floating parameters and buffers in bfloat16."""
    import torch

    return copy.deepcopy(model).to(torch.bfloat16)


def bf16_call(model_bf16: Any, inputs: list[Any], like: Any) -> Any:
    """``model_bf16`` on ``inputs`` cast to bfloat16; its floating outputs cast back to the dtypes of ``like``."""
    import torch

    out = model_bf16(*_cast(list(inputs), torch.bfloat16))
    return _cast_like(out, like)


def _cast_like(value: Any, like: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor) and isinstance(like, torch.Tensor):
        return value.to(like.dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)) and isinstance(like, (list, tuple)) and len(value) == len(like):
        return type(value)(_cast_like(v, w) for v, w in zip(value, like))
    return value


def speedups(speedup: float, main: str, solo_ms: dict[str, float], allowed: dict[str, bool]) -> dict[str, Any]:
    """Speedups of a candidate over each precision of its reference.

    ``speedup``: the measured one, over the reference under ``main``; ``solo_ms``: the reference timed alone under
    each policy (``main`` among them); ``allowed``: which policies passed the task's tolerance (``main`` and
    ``strict_fp32`` always do). Returns ``{"over": {policy: speedup}, "over_strict_fp32", "best_allowed",
    "over_best_allowed", "probe_reproduces_win"}``; the last is True when the candidate beats strict fp32 but not the
    fastest precision the tolerance allows.
    """
    base = solo_ms.get(main)
    if not base or base <= 0:
        raise ValueError(f"no solo time of the main policy {main!r}")
    over = {p: speedup * ms / base for p, ms in solo_ms.items() if ms and ms > 0}
    ok = {p for p in over if allowed.get(p) or p in (main, "strict_fp32")}
    best = min(ok, key=lambda p: (solo_ms[p], p != main))  # a tie goes to the policy measured
    strict = over.get("strict_fp32", speedup if main == "strict_fp32" else None)
    return {
        "over": {p: round(v, 4) for p, v in over.items()},
        "over_strict_fp32": strict,
        "best_allowed": best,
        "over_best_allowed": over[best],
        "probe_reproduces_win": bool(strict is not None and strict > 1.0 and over[best] <= 1.0),
    }


PROBE_KEYS = ("reference_solo_ms", "within_tolerance", "same_bits_as_main", "mismatch")
"""What a probe measured, all of it the reference's alone: kept by the evaluator for the task's later candidates."""


def probe_tuple(main: str, record: dict[str, Any]) -> tuple[str, dict[str, float], dict[str, bool]]:
    """(main policy, solo time of every policy, within tolerance) from a probe's record, for ``speedups``. A policy
    with the main policy's bits has its time; with nothing timed (every policy the same bits) the main one is 1."""
    solo = dict(record["reference_solo_ms"])
    base = solo.get(main, 1.0)
    return (
        main,
        {main: base, **solo, **{name: base for name in record["same_bits_as_main"]}},
        {**record["within_tolerance"], main: True},
    )


def kept_probe(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a result's precision record that a later candidate of the same task can reuse, or None where no
    probe was measured (off, failed, or not reached)."""
    if not isinstance(record, dict) or any(k not in record for k in PROBE_KEYS) or "policy" not in record:
        return None
    return {"policy": record["policy"], **{k: copy.deepcopy(record[k]) for k in PROBE_KEYS}}


def reusable_probe(known: Any, main: str) -> dict[str, Any] | None:
    """``known`` (from ``kept_probe``) when it was measured under ``main`` and is well formed, else None (measure)."""
    import math

    if not isinstance(known, dict) or known.get("policy") != main:
        return None
    solo, allowed = known.get("reference_solo_ms"), known.get("within_tolerance")
    same, mismatch = known.get("same_bits_as_main"), known.get("mismatch")
    if not (
        isinstance(solo, dict) and isinstance(allowed, dict) and isinstance(same, list) and isinstance(mismatch, dict)
    ):
        return None
    if not all(
        p in POLICIES and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
        for p, v in solo.items()
    ):
        return None
    if (
        not all(p in POLICIES and isinstance(v, bool) for p, v in allowed.items())
        or not all(p in POLICIES for p in same)
        or not all(isinstance(v, str) for v in mismatch.values())
    ):
        return None
    reused = {k: copy.deepcopy(known[k]) for k in PROBE_KEYS}
    source = known.get("probe_from")
    if isinstance(source, str) and source.isalnum() and len(source) <= 64:
        reused["probe_from"] = source  # the candidate whose evaluation measured it
    return reused
