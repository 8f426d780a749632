"""Checks beyond the scored inputs (issue 52): hidden input distributions derived from ``get_inputs``, the
reference evaluated in fp64, and the error statistic that names a precision drop against it (needs torch).

A hidden distribution is a transform of freshly drawn inputs: every floating tensor is scaled, negated or shifted;
integer, index and boolean tensors, and everything that is not a tensor, are left alone. The verifier keeps a
distribution only where the reference itself stays defined under it (``degenerate`` says why not), so a kernel that
is wrong there is wrong, not merely different from a reference that broke. docs/checks.md ("Beyond the scored
inputs") says what each distribution is for and what it cannot see.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch

from cudaforge.tasks.runtime import flatten_outputs

HIDDEN_PREFIX = "hidden:"
"""A hidden distribution's name as a trial's variant (``hidden:negated``): what a diff and the agents see."""


def _scale(factor: float) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: x.mul_(factor)


def _offset(x: torch.Tensor) -> torch.Tensor:
    rms = float(x.double().pow(2).mean().sqrt()) if x.numel() else 0.0
    return x.add_(3.0 * (rms if rms > 0 and rms == rms else 1.0))


DISTRIBUTIONS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str]] = {
    "x3": (_scale(3.0), "floating inputs times 3: a result that only holds for small values (a clamp, a cut-off)"),
    "x0.01": (_scale(0.01), "floating inputs times 0.01: an output that ignores the inputs' scale"),
    "negated": (
        _scale(-1.0),
        "floating inputs negated: a kernel that assumes the signs its inputs were drawn with (a ReLU that returns "
        "its input on torch.rand's values)",
    ),
    "offset": (
        _offset,
        "floating inputs shifted by three times their own RMS: statistics that assume a zero mean (a variance taken "
        "as E[x^2] - E[x]^2 loses its digits)",
    ),
    "wide": (
        _scale(100.0),
        "floating inputs times 100: arithmetic that overflows fp32 unless written safely (a softmax or logsumexp "
        "without its max subtracted, squares of large values)",
    ),
}
"""Every hidden distribution by name: the transform of one floating tensor (in place, on a fresh draw) and why it is
checked."""

DEFAULT_DISTRIBUTIONS = ["x3", "x0.01", "negated", "offset", "wide"]


def unknown_distributions(names: list[str]) -> list[str]:
    """The names in ``names`` that are no hidden distribution."""
    return [n for n in names if n not in DISTRIBUTIONS]


def derive(inputs: list[Any], name: str) -> list[Any]:
    """``inputs`` (a fresh draw, changed in place) under the hidden distribution ``name``."""
    transform = DISTRIBUTIONS[name][0]
    return [transform(x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def widened(value: Any, dtype: torch.dtype = torch.float64) -> Any:
    """``value`` with its floating tensors (also inside lists and tuples) in ``dtype``."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(widened(v, dtype) for v in value)
    return value


def fp64_bytes(inputs: list[Any], output: Any) -> int:
    """What an fp64 evaluation needs beside the fp32 one: the floating inputs and outputs at twice their size."""
    tensors = [t for t in flatten_outputs(list(inputs)) + flatten_outputs(output) if isinstance(t, torch.Tensor)]
    return sum(2 * t.numel() * t.element_size() for t in tensors if t.is_floating_point())


def fp64_model(model: Any) -> Any:
    """A copy of the reference's model with its floating parameters and buffers in float64 (a model that is not a
    ``torch.nn.Module`` as it is)."""
    if not isinstance(model, torch.nn.Module):
        return model
    return copy.deepcopy(model).to(torch.float64)


def count_nonfinite(value: Any) -> int:
    """Non-finite elements over the floating tensors of an output."""
    return sum(
        int((~torch.isfinite(t)).sum())
        for t in flatten_outputs(value)
        if isinstance(t, torch.Tensor) and t.is_floating_point()
    )


def degenerate(
    ref_out: Any,
    wide_out: Any | None,
    *,
    atol: float,
    rtol: float,
    base_nonfinite: int = 0,
    fp64_trusted: bool = True,
) -> str:
    """Why the reference cannot judge a distribution ("" when it can): its output holds non-finite values where its
    output on the default inputs held none, or, with ``wide_out`` (the reference evaluated in fp64 on the same
    inputs) and ``fp64_trusted`` (the default inputs' fp32 and fp64 outputs agree), its fp32 output disagrees with
    its own fp64 evaluation beyond the task's tolerance."""
    bad = count_nonfinite(ref_out)
    if bad > base_nonfinite:
        return f"the reference's output holds {bad} non-finite values"
    if wide_out is None or not fp64_trusted:
        return ""
    gap = disagreement(ref_out, wide_out, atol=atol, rtol=rtol)
    if gap:
        return f"the reference disagrees with its own fp64 evaluation ({gap})"
    return ""


def disagreement(ref_out: Any, wide_out: Any, *, atol: float, rtol: float) -> str:
    """How an output differs from its fp64 evaluation beyond (atol, rtol), in a few words ("" when it does not)."""
    xs, ys = flatten_outputs(ref_out), flatten_outputs(wide_out)
    if len(xs) != len(ys):
        return f"{len(xs)} outputs against {len(ys)}"
    for x, y in zip(xs, ys):
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)) or not x.is_floating_point():
            continue
        if x.shape != y.shape:
            return f"shapes {list(x.shape)} and {list(y.shape)}"
        flat_x, flat_y = x.detach().reshape(-1), y.detach().reshape(-1)
        bad, worst = 0, 0.0
        for start in range(0, flat_x.numel(), CHUNK):  # in chunks: an output of gigabytes needs no fp64 copy whole
            a = flat_x[start : start + CHUNK].double()
            e = flat_y[start : start + CHUNK].to(device=a.device, dtype=torch.float64)
            close = torch.isclose(a, e, atol=atol, rtol=rtol, equal_nan=True)
            if not bool(close.all()):
                bad += int((~close).sum())
                worst = max(worst, float((a - e).abs().nan_to_num(nan=float("inf")).max()))
        if bad:
            return f"{bad} elements beyond atol {atol:g}, rtol {rtol:g}; max abs error {worst:.3g}"
    return ""


CHUNK = 1 << 24
"""Elements compared at once against the fp64 output (a few hundred MB of temporaries at most)."""


PRECISION_SAMPLE = 1 << 20
"""At most this many elements of an output enter the error statistic."""


def relative_error(value: Any, wide_out: Any) -> float | None:
    """The median absolute error of ``value`` against the fp64 output ``wide_out``, over the finite nonzero elements
    of its floating tensors, divided by the fp64 output's RMS (the worst output's); None when there is nothing to
    measure.
    Outputs larger than ``PRECISION_SAMPLE`` elements are sampled with a fixed stride."""
    worst: float | None = None
    for x, y in zip(flatten_outputs(value), flatten_outputs(wide_out)):
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)) or not x.is_floating_point():
            continue
        if x.shape != y.shape:
            continue
        a, e = x.detach().reshape(-1), y.detach().reshape(-1)
        if a.numel() > PRECISION_SAMPLE:
            step = a.numel() // PRECISION_SAMPLE + 1
            a, e = a[::step], e[::step]
        a, e = a.double(), e.to(device=a.device, dtype=torch.float64)
        keep = torch.isfinite(a) & torch.isfinite(e) & (e != 0)  # exact zeros (a ReLU's half) say nothing of precision
        if int(keep.sum()) < 16:
            continue
        a, e = a[keep], e[keep]
        scale = float(e.pow(2).mean().sqrt())
        if scale == 0:
            continue
        error = float((a - e).abs().median()) / scale
        worst = error if worst is None else max(worst, error)
    return worst


def error_floor(value: Any) -> float:
    """The least error the precision check compares against: a quarter of the unit roundoff of the output's widest
    floating dtype (an exact reference has no error of its own, and one rounding is no precision drop)."""
    dtypes = [t.dtype for t in flatten_outputs(value) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    eps = max((torch.finfo(d).eps for d in dtypes), default=torch.finfo(torch.float32).eps)
    return eps / 4


def precision_against_fp64(cand_out: Any, ref_out: Any, wide_out: Any, ratio: float) -> tuple[str, dict[str, Any]]:
    """The precision check: the candidate's error against the fp64 reference and the fp32 reference's own, and
    evidence when the first is more than ``ratio`` times the second (floored at ``error_floor``); ("", figures)
    otherwise."""
    cand = relative_error(cand_out, wide_out)
    ref = relative_error(ref_out, wide_out)
    if cand is None or ref is None:
        return "", {}
    floor = error_floor(ref_out)
    figures = {"candidate_error": cand, "reference_error": ref, "ratio": cand / max(ref, floor)}
    if cand > ratio * max(ref, floor):
        return (
            f"against an fp64 evaluation of the reference, the output's median error is {cand:.2g} of its RMS, "
            f"{cand / max(ref, floor):.0f}x the fp32 reference's own ({ref:.2g}); within the tolerance, but the "
            "kernel seems to compute in lower precision (fp16/bf16 casts, TF32 matmuls, an approximation)."
        ), figures
    return "", figures
