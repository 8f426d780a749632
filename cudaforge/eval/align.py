"""The CudaForge authors' alignment of weights (``eval.weights=authors``), as their harness does it.

Their ``compare_and_bench`` copies the reference's tensors into ``ModelNew`` before comparing
(``utils/compile_and_run.py``: ``try_align_params``). For a ``Model`` -> ``ModelNew`` pair it tries, in order:

1. a pair rule: when each side has exactly one 4-D weight parameter (a convolution), copy it as it is or with its
   first two dimensions swapped (a transposed convolution), then a single 1-D bias of the same shape; else the same for
   one 5-D weight; else a 5-D depthwise weight ``(C, 1, kD, kH, kW)`` into a 4-D ``(C, kD, kH, kW)``;
2. otherwise the generic rule: tensors of the same name (parameter or buffer) and shape; then, among what is left of
   the candidate's, a shape that exactly one tensor on each side has; then shape mappings (depthwise and pointwise
   weights with or without their unit dimensions, 5-D weights with the first two dimensions swapped).

So a ``ModelNew`` whose parameters have other names than the reference's still gets the reference's values, where
our ``copy_matching`` copies by name only. This module works on names, kinds and shapes (the candidate's come from
its worker) and returns what to load into each candidate tensor; it never runs candidate code.

The candidate's list is its worker's word, so two bounds that no honest ``ModelNew`` meets are ours, not the
authors': at most ``MAX_STATE_NAMES_PER_REFERENCE`` names per reference tensor (and 64 more) are read, and what is
loaded holds at most twice the reference's bytes (and 1 MiB); a tensor past that is not loaded (``over_budget``
in the counts). Without them, a reply listing many names of one weight's shape made the verifier fill an arena
with a copy per name, bounded only by the reply's size.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch

PLAIN_DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint8,
        torch.bool,
    )
}
"""The dtypes a candidate's tensor may be loaded in (the worker names them): anything else (a quantized dtype, or a
name ``getattr(torch, ...)`` would have imported) keeps the reference's own."""
MAX_STATE_NAMES_PER_REFERENCE = 4
"""Names of the candidate's state read per tensor of the reference's (the rest are not aligned)."""

Named = dict[str, tuple[str, Any]]
"""``name -> (kind, tensor or shape)``: kind ``param`` or ``buffer``."""


def _key(name: str, kind: str) -> str:
    return f"{kind}::{name}"


def map_shape(src: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor | None:
    """``src`` brought to ``shape`` by one of the authors' shape mappings, or None when none applies."""
    s, d = tuple(src.shape), tuple(shape)
    if len(s) == 4 and s[1] == 1 and s[3] == 1 and len(d) == 2 and (s[0], s[2]) == d:  # (C,1,Kh,1) -> (C,Kh)
        return src.reshape(d)
    if len(s) == 2 and len(d) == 4 and d[1] == 1 and d[3] == 1 and s == (d[0], d[2]):
        return src.reshape(d)
    if len(s) == 4 and s[1] == 1 and len(d) == 3 and (s[0], s[2], s[3]) == d:  # (C,1,Kh,Kw) -> (C,Kh,Kw)
        return src.squeeze(1)
    if len(s) == 3 and len(d) == 4 and d[1] == 1 and s == (d[0], d[2], d[3]):
        return src.unsqueeze(1)
    if len(s) == 4 and s[2] == 1 and s[3] == 1 and len(d) == 2 and s[:2] == d:  # (Out,In,1,1) -> (Out,In)
        return src.reshape(d)
    if len(s) == 2 and len(d) == 4 and d[2] == 1 and d[3] == 1 and s == d[:2]:
        return src.reshape(d)
    if len(s) == 5 and len(d) == 5 and s[0] == d[1] and s[1] == d[0] and s[2:] == d[2:]:  # first two dims swapped
        return src.permute(1, 0, 2, 3, 4)
    if len(s) == 5 and s[1] == 1 and len(d) == 4 and (s[0], *s[2:]) == d:  # (C,1,kD,kH,kW) -> (C,kD,kH,kW)
        return src.squeeze(1)
    if len(s) == 4 and len(d) == 5 and d[1] == 1 and s == (d[0], *d[2:]):
        return src.unsqueeze(1)
    return None


def _pick(named: Named, dims: int, *, shapes: bool) -> list[tuple[str, Any]]:
    """Parameters with ``weight`` in their name and ``dims`` dimensions (else any parameter with ``dims``)."""

    def ndim(v: Any) -> int:
        return len(v) if shapes else v.ndim

    params = [(n, v) for n, (k, v) in named.items() if k == "param" and ndim(v) == dims]
    return [(n, v) for n, v in params if "weight" in n] or params


def _pair(ref: Named, cand: Named) -> dict[str, torch.Tensor] | None:
    """The pair rule's copies, or None when it does not apply (the generic rule then runs)."""
    r4, c4 = _pick(ref, 4, shapes=False), _pick(cand, 4, shapes=True)
    if len(r4) == 1 and len(c4) == 1:
        (_, w), (name, shape) = r4[0], c4[0]
        shape = tuple(shape)
        value = (
            w
            if tuple(w.shape) == shape
            else (w.permute(1, 0, 2, 3) if (w.shape[1], w.shape[0], *w.shape[2:]) == shape else None)
        )
        if value is not None:
            out = {name: value}
            rb = [(n, v) for n, (k, v) in ref.items() if k == "param" and "bias" in n and v.ndim == 1]
            cb = [(n, v) for n, (k, v) in cand.items() if k == "param" and "bias" in n and len(v) == 1]
            if len(rb) == 1 and len(cb) == 1 and tuple(rb[0][1].shape) == tuple(cb[0][1]):
                out[cb[0][0]] = rb[0][1]
            return out
    r5, c5 = _pick(ref, 5, shapes=False), _pick(cand, 5, shapes=True)
    if len(r5) == 1 and len(c5) == 1:
        (_, w), (name, shape) = r5[0], c5[0]
        if tuple(w.shape) == tuple(shape):
            return {name: w}
        if (w.shape[1], w.shape[0], *w.shape[2:]) == tuple(shape):
            return {name: w.permute(1, 0, 2, 3, 4)}
    if len(r5) == 1:
        w = r5[0][1]
        c4 = _pick(cand, 4, shapes=True)
        if len(c4) == 1 and w.shape[1] == 1 and tuple(c4[0][1]) == (w.shape[0], *w.shape[2:]):
            return {c4[0][0]: w.squeeze(1)}
    return None


def _generic(ref: Named, cand: Named) -> tuple[dict[str, torch.Tensor], dict[str, int]]:
    out: dict[str, torch.Tensor] = {}
    ref_keyed = {_key(n, k): v for n, (k, v) in ref.items()}
    same = 0
    for name, (kind, shape) in cand.items():
        src = ref_keyed.get(_key(name, kind))
        if src is not None and tuple(src.shape) == tuple(shape):
            out[name], same = src, same + 1
    by_ref: dict[tuple[int, ...], list[torch.Tensor]] = {}
    for _, (_, v) in ref.items():
        by_ref.setdefault(tuple(v.shape), []).append(v)
    by_cand: dict[tuple[int, ...], list[str]] = {}
    for name, (_, shape) in cand.items():
        if name not in out:
            by_cand.setdefault(tuple(shape), []).append(name)
    unique = 0
    for shape, names in by_cand.items():
        if len(names) == 1 and len(by_ref.get(shape, [])) == 1:
            out[names[0]], unique = by_ref[shape][0], unique + 1
    mapped = skipped = 0
    for name, (_, shape) in cand.items():
        if name in out:
            continue
        value = next((m for _, (_, v) in ref.items() if (m := map_shape(v, tuple(shape))) is not None), None)
        if value is None:
            skipped += 1
        else:
            out[name], mapped = value, mapped + 1
    return out, {"copied_same_shape": same, "unique_shape_copied": unique, "mapped_shape": mapped, "skipped": skipped}


def authors_alignment(
    ref_model: torch.nn.Module, cand: dict[str, Any]
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """What to load into each of the candidate's tensors, and the rule's counts.

    ``cand``: the worker's ``state`` reply: ``{"state": {name: [shape, dtype]}, "params": [names]}``. Values are the
    reference's tensors, reshaped or permuted as the rule says, in the candidate's dtypes.
    """
    params = {n for n, _ in ref_model.named_parameters()}
    ref: Named = {
        n: ("param" if n in params else "buffer", v.detach())
        for n, v in ref_model.state_dict().items()
        if isinstance(v, torch.Tensor)
    }
    state = given if isinstance(given := cand.get("state"), dict) else {}
    cand_params = set(cand.get("params") or []) if isinstance(cand.get("params"), list) else set()
    named: Named = {}
    dtypes: dict[str, str] = {}
    for name, spec in itertools.islice(state.items(), MAX_STATE_NAMES_PER_REFERENCE * len(ref) + 64):
        if (
            isinstance(name, str)
            and isinstance(spec, list)
            and len(spec) == 2
            and isinstance(spec[0], list)
            and all(isinstance(d, int) and d >= 0 for d in spec[0])
            and len(spec[0]) <= 8
        ):
            named[name] = ("param" if name in cand_params else "buffer", tuple(spec[0]))
            dtypes[name] = str(spec[1])
    pair = _pair(ref, named)
    stats: dict[str, Any]
    if pair is not None:
        out, stats = pair, {"rule": "pair", "copied": len(pair)}
    else:
        out, counts = _generic(ref, named)
        stats = {"rule": "generic", **counts}
    converted = {}
    budget = 2 * sum(v.numel() * v.element_size() for _, v in ref.values()) + (1 << 20)
    for name, value in out.items():
        dtype = PLAIN_DTYPES.get(dtypes.get(name, ""), value.dtype)
        size = value.numel() * torch.empty((), dtype=dtype).element_size()
        if size > budget:  # more than the reference holds, twice over: not a copy of its weights
            stats["over_budget"] = stats.get("over_budget", 0) + 1
            continue
        budget -= size
        converted[name] = value.to(dtype).contiguous()
    return converted, stats
