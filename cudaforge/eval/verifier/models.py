"""The two models of an evaluation: the reference's, built here, and the candidate's, built in the worker, with
their constant tensors varied alike (``eval.vary_parameters``, ``cudaforge.eval.params``) where that is sound."""

from __future__ import annotations

from typing import Any

import torch

from cudaforge.eval.bounded import cap_text
from cudaforge.eval.hidden import degenerate, disagreement
from cudaforge.eval.params import covers, describe_keys, varied_constants
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.verifier.candidate import Candidate
from cudaforge.eval.verifier.common import Guards, clone_inputs, sync, tolerance
from cudaforge.eval.verifier.correctness import Wide
from cudaforge.tasks.runtime import build_model, grad_mode, make_inputs
from cudaforge.types import EvalResult, Task

MAX_KEYS_READ = 4096
"""The most varied keys read from the worker's reply (each a short string)."""


def _build(
    ref_module: Any, init: list[Any], cfg: EvalConfig, device: torch.device, vary: bool
) -> tuple[Any, list[str]]:
    with varied_constants(cfg.seed if vary else None) as variation:
        model = build_model(ref_module.Model, init, cfg.seed, device)
    return model, (list(variation.keys) if variation is not None else [])


def reference_model(
    task: Task,
    ref_module: Any,
    init: list[Any],
    cfg: EvalConfig,
    device: torch.device,
    result: EvalResult,
    base: str,
    known: dict[str, Any] | None = None,
) -> tuple[Any, list[str]]:
    """The reference's model, and the keys of the constant tensors it varied (empty when none were, or when the
    reference degenerates with them: non-finite outputs, or an fp32 output beyond the tolerance of its fp64
    evaluation on the ``base`` inputs of the first trial; ``result.checks["parameters"]`` says which). ``known``:
    an earlier evaluation's decision (``cudaforge.eval.known.reference_decisions``), taken as it is."""
    model, keys = _build(ref_module, init, cfg, device, bool(cfg.vary_parameters))
    record: dict[str, Any] = {"varied": len(keys)}
    result.checks["parameters"] = record
    if not keys:
        if not cfg.vary_parameters:
            record["note"] = "eval.vary_parameters=false"
        return model, keys
    record["tensors"] = describe_keys(keys)
    earlier = (known or {}).get("parameters")
    if isinstance(earlier, dict) and isinstance(earlier.get("degenerate"), str):
        reason = earlier["degenerate"]
    else:
        reason = _degenerates(task, ref_module, model, cfg, device, base)
        record["checked"] = True
    if reason:
        record.update(varied=0, dropped=cap_text(reason, 400))
        model, _ = _build(ref_module, init, cfg, device, False)
        return model, []
    return model, keys


def _degenerates(task: Task, ref_module: Any, model: Any, cfg: EvalConfig, device: torch.device, base: str) -> str:
    """Why the reference with varied constants cannot judge (""): compared with itself built as it is, on the first
    trial's inputs."""
    inputs = make_inputs(ref_module, seed=cfg.seed * 1000, variant=base, device=device)
    try:
        with grad_mode(True):
            out = model(*clone_inputs(inputs))
        sync(device)
    except Exception as exc:  # noqa: BLE001 - the reference's own failure with these values
        return f"the reference raised {type(exc).__name__} with varied parameters: {str(exc)[:200]}"
    atol, rtol = tolerance(task, out, cfg)
    fp64 = Wide(model, cfg)
    wide = fp64(inputs, out)  # None: not made (too large, or the reference does not run in fp64)
    sync(device)
    reason = degenerate(out, None, atol=atol, rtol=rtol)
    if not reason and wide is not None:
        gap = fp64.compare(disagreement, out, wide, atol, rtol)
        reason = f"the reference disagrees with its own fp64 evaluation ({gap})" if gap else ""
    return f"with varied parameters, {reason}" if reason else ""


def candidate_model(
    cand: Candidate,
    encoded_init: Any,
    ref_module: Any,
    init: list[Any],
    ref_model: Any,
    keys: list[str],
    cfg: EvalConfig,
    device: torch.device,
    guard: Guards,
) -> Any:
    """Build ModelNew in the worker, its constants varied as the reference's were (``keys``); when its varied keys
    do not cover the reference's, both are built again as they are and a ``parameters_not_varied`` finding says
    which tensors could not be matched. Returns the reference's model to evaluate against."""
    message: dict[str, Any] = {"op": "model", "init": encoded_init, "seed": cfg.seed}
    if not keys:
        cand._request(message)
        return ref_model
    reply = cand._request({**message, "vary_seed": cfg.seed, "vary_keys": keys})
    got = reply.get("varied")
    theirs = [k for k in got[:MAX_KEYS_READ] if isinstance(k, str) and len(k) < 512] if isinstance(got, list) else []
    missing = covers(theirs, keys)
    record = guard.result.checks.setdefault("parameters", {})
    if not missing:
        record["candidate_matched"] = True
        return ref_model
    cand._request(message)
    guard.add(
        [
            guard.policies.found(
                "parameters_not_varied",
                f"the reference's constant tensors {describe_keys(missing)} were given seeded values as they were "
                "built, but ModelNew built no tensor of the same name, shape and value to receive them: both models "
                "were evaluated with their initial values, which hide a kernel that ignores them. Register the "
                "task's parameters and buffers under their names in ModelNew (folding them in __init__ is fine).",
            )
        ]
    )
    record.update(candidate_matched=False, varied=0, unmatched=describe_keys(missing))
    model, _ = _build(ref_module, init, cfg, device, False)
    return model
