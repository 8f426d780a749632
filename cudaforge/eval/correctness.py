"""Compare a candidate's outputs with the reference's and explain the difference.

``compare`` returns None when every output matches within tolerance, else a
``CorrectnessDiff`` the Judge can read: shapes and dtypes of both, max absolute and relative
error, how many elements mismatch, the worst few with both values, and where the mismatches
are (everywhere, only a head or tail of the flattened output, only some rows).
"""

from __future__ import annotations

from typing import Any

import torch

from cudaforge.eval.fastclose import screen
from cudaforge.tasks.runtime import flatten_outputs
from cudaforge.types import CorrectnessDiff, Mismatch

WORST_SHOWN = 5


def _dtype_name(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return str(value.dtype).replace("torch.", "")
    return type(value).__name__


def _shape(value: Any) -> list[int]:
    return list(value.shape) if isinstance(value, torch.Tensor) else []


def describe_region(bad: torch.Tensor) -> str:
    """Say where the True entries of a boolean mismatch mask lie."""
    flat = bad.reshape(-1)
    total = flat.numel()
    idx = torch.nonzero(flat).reshape(-1)
    if idx.numel() == 0:
        return "no mismatches"
    first, last = int(idx[0]), int(idx[-1])
    fraction = idx.numel() / total
    if fraction > 0.9:
        return "everywhere"
    if first >= total // 2 and last == total - 1:
        return f"only in the tail, from flat index {first} of {total} (a bounds or remainder bug?)"
    if first == 0 and last < total // 2:
        return f"only in the head, up to flat index {last} of {total}"
    if bad.dim() >= 2:
        rows = bad.reshape(bad.shape[0], -1).any(dim=1)
        n_rows = int(rows.sum())
        if n_rows < bad.shape[0]:
            row_idx = torch.nonzero(rows).reshape(-1).tolist()
            shown = ", ".join(map(str, row_idx[:8])) + (" ..." if n_rows > 8 else "")
            return f"in {n_rows} of {bad.shape[0]} rows along dim 0 (rows {shown})"
        cols = bad.reshape(-1, bad.shape[-1]).any(dim=0)
        n_cols = int(cols.sum())
        if n_cols < bad.shape[-1]:
            return f"in {n_cols} of {bad.shape[-1]} positions along the last dim, in every row"
    return f"scattered ({idx.numel()} of {total} elements, flat indices {first} to {last})"


def compare(
    expected: Any, actual: Any, *, atol: float, rtol: float, trial: int, variant: str, equal_nan: bool = True
) -> CorrectnessDiff | None:
    """None if ``actual`` matches ``expected`` (a tensor or a tuple of them), else the diff. With ``equal_nan``
    False a NaN never matches (``torch.allclose``'s default)."""
    exp_list, act_list = flatten_outputs(expected), flatten_outputs(actual)
    base: dict[str, Any] = dict(trial=trial, variant=variant, atol=atol, rtol=rtol)
    if len(exp_list) != len(act_list):
        return CorrectnessDiff(**base, message=f"expected {len(exp_list)} outputs, got {len(act_list)}")
    for position, (exp, act) in enumerate(zip(exp_list, act_list)):
        label = f"output {position}: " if len(exp_list) > 1 else ""
        info: dict[str, Any] = dict(
            expected_shape=_shape(exp),
            actual_shape=_shape(act),
            expected_dtype=_dtype_name(exp),
            actual_dtype=_dtype_name(act),
        )
        if not isinstance(exp, torch.Tensor):
            if exp != act:
                return CorrectnessDiff(**base, **info, message=f"{label}expected {exp!r}, got {act!r}")
            continue
        if not isinstance(act, torch.Tensor):
            return CorrectnessDiff(**base, **info, message=f"{label}expected a tensor, got {type(act).__name__}")
        if exp.shape != act.shape:
            return CorrectnessDiff(**base, **info, message=f"{label}shape mismatch")
        if exp.dtype != act.dtype:
            return CorrectnessDiff(**base, **info, message=f"{label}dtype mismatch")
        diff = _compare_tensors(exp, act, atol=atol, rtol=rtol, equal_nan=equal_nan)
        if diff is not None:
            diff.update(info)
            diff["message"] = label + diff["message"]
            return CorrectnessDiff(**base, **diff)
    return None


def _compare_tensors(
    exp: torch.Tensor, act: torch.Tensor, *, atol: float, rtol: float, equal_nan: bool = True
) -> dict[str, Any] | None:
    # Large GPU outputs first go through a one-pass screen (cudaforge.eval.fastclose): when it finds
    # every element close, torch.isclose would too (the screen counts NaN against NaN as close, so it is
    # only used with equal_nan). Otherwise, compare where the outputs live (gigabytes do not travel to the
    # host), in fp32 or wider; only the worst few values are read back.
    if equal_nan and screen(exp, act, atol, rtol):
        return None
    wide = torch.float64 if exp.dtype == torch.float64 else torch.float32
    e = exp.detach().to(wide)
    a = act.detach().to(device=e.device, dtype=wide)
    if not exp.is_floating_point() and not exp.is_complex():
        bad = e != a
    else:
        close = torch.isclose(a, e, atol=atol, rtol=rtol, equal_nan=equal_nan)
        bad = ~close
    if not bad.any():
        return None
    abs_err = (a - e).abs()
    abs_err = torch.where(torch.isnan(abs_err), torch.full_like(abs_err, float("inf")), abs_err)
    rel_err = abs_err / e.abs().clamp_min(torch.finfo(wide).tiny)
    nonfinite = int((~torch.isfinite(a) & torch.isfinite(e)).sum())
    masked = torch.where(bad, abs_err, torch.zeros_like(abs_err))
    worst = torch.topk(masked.reshape(-1), k=min(WORST_SHOWN, int(bad.sum()))).indices
    mismatches = [
        Mismatch(
            index=[int(i) for i in torch.unravel_index(torch.tensor(flat), e.shape)] if e.dim() else [],
            expected=float(e.reshape(-1)[flat]),
            actual=float(a.reshape(-1)[flat]),
        )
        for flat in worst.tolist()
    ]
    count = int(bad.sum())
    message = "values differ"
    if nonfinite:
        message = f"{nonfinite} NaN/Inf values where the reference is finite"
    return {
        "max_abs_error": float(abs_err.max()),
        "max_rel_error": float(rel_err[bad].max()),
        "mean_abs_error": float((a - e).abs().mean()),
        "mismatch_count": count,
        "mismatch_fraction": count / max(1, e.numel()),
        "worst": mismatches,
        "region": describe_region(bad),
        "message": message,
    }


def first_tensor(value: Any) -> torch.Tensor | None:
    """``value`` when it is a tensor, else the first tensor in it (tuples and lists, depth first), else None."""
    for item in flatten_outputs(value):
        if isinstance(item, torch.Tensor):
            return item
    return None


def compare_first(
    expected: Any, actual: Any, *, atol: float, rtol: float, trial: int, variant: str, equal_nan: bool = False
) -> CorrectnessDiff | None:
    """The CudaForge authors' check (``eval.compare_outputs=first``): only the first tensor of each output, both
    contiguous, the candidate's cast to the reference's dtype, ``torch.allclose(atol, rtol)`` (without
    ``equal_nan`` by default, so a NaN fails; shapes that broadcast are compared as allclose broadcasts them, shapes
    that do not are a mismatch). None when it passes, else the diff, with the max and mean absolute error their
    message gives (and the usual details where the shapes are equal)."""
    base: dict[str, Any] = dict(trial=trial, variant=variant, atol=atol, rtol=rtol)
    exp, act = first_tensor(expected), first_tensor(actual)
    if exp is None:
        return compare(expected, actual, atol=atol, rtol=rtol, trial=trial, variant=variant, equal_nan=equal_nan)
    info: dict[str, Any] = dict(
        expected_shape=_shape(exp),
        actual_shape=_shape(act),
        expected_dtype=_dtype_name(exp),
        actual_dtype=_dtype_name(act),
    )
    if act is None:
        return CorrectnessDiff(**base, **info, message=f"expected a tensor, got {type(actual).__name__}")
    e = exp.detach().contiguous()
    a = act.detach().to(device=e.device, dtype=e.dtype).contiguous()
    try:
        if torch.allclose(e, a, atol=atol, rtol=rtol, equal_nan=equal_nan):
            return None
        err = (a.to(torch.float64) - e.to(torch.float64)).abs()
    except RuntimeError as exc:  # shapes that do not broadcast
        return CorrectnessDiff(**base, **info, message=f"the outputs cannot be compared: {str(exc)[:200]}")
    if e.shape == a.shape:
        diff = _compare_tensors(e, a, atol=atol, rtol=rtol, equal_nan=equal_nan)
        if diff is not None:
            diff["message"] = f"{diff['message']} (torch.allclose; mean absolute error {float(err.mean()):.3g})"
            diff["mean_abs_error"] = float(err.mean())
            return CorrectnessDiff(**base, **info, **diff)
    return CorrectnessDiff(
        **base,
        **info,
        max_abs_error=float(err.max()),
        mean_abs_error=float(err.mean()),
        message=(
            f"outputs are not close (torch.allclose, atol={atol:g}, rtol={rtol:g}): max absolute error "
            f"{float(err.max()):.3g}, mean absolute error {float(err.mean()):.3g}"
        ),
    )
