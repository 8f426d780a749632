"""A one-pass screen for "every element is close" on large GPU outputs (a Triton kernel).

``torch.isclose`` over a 1.6 GB output is a dozen elementwise passes (about 10 ms on an H200);
the evaluator compares every timed call's output, so that is a second per candidate. This
kernel reads both tensors once and counts the elements that are *not* close. It is only a
screen, and a conservative one: it tests ``|a - e| <= (atol + rtol * |e|) * (1 - 2**-20)``
(plus equal values and NaN against NaN, as ``isclose(equal_nan=True)``), so it never calls
close what ``torch.isclose`` would not; anything it flags, or any tensor it does not handle,
goes to the full comparison (``cudaforge.eval.correctness``), which decides and explains.

Handled: contiguous floating-point tensors (fp32, fp16, bf16; compared in fp32) of the same
shape, dtype and device, on a GPU (or, for the tests, on the CPU in Triton's interpreter), with
at least ``MIN_ELEMENTS`` elements. Without Triton the screen is simply not used.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import torch

MIN_ELEMENTS = 1 << 20
"""Below this the full comparison is as fast as a kernel launch."""
BLOCK = 4096
SAFETY = 1.0 - 2.0**-20
"""The tolerance is shrunk by this factor, so 1-ulp differences in how it is computed never make the screen
lenient."""
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _kernel() -> Any:
    from cudaforge.eval._fastclose_kernel import count_not_close

    return count_not_close


def screen(expected: torch.Tensor, actual: torch.Tensor, atol: float, rtol: float, *,
           cpu_interpreter: bool = False) -> bool | None:
    """True when every element of ``actual`` is close to ``expected``; None when the screen cannot tell
    (elements flagged, or tensors it does not handle): then the full comparison must run.

    CPU tensors are screened only with ``cpu_interpreter`` under ``TRITON_INTERPRET=1`` (the tests)."""
    interpret = cpu_interpreter and os.environ.get("TRITON_INTERPRET") == "1"
    if not (expected.is_cuda or interpret) or expected.device != actual.device:
        return None
    if expected.dtype not in _DTYPES or actual.dtype != expected.dtype or actual.shape != expected.shape:
        return None
    if expected.numel() < MIN_ELEMENTS or not (expected.is_contiguous() and actual.is_contiguous()):
        return None
    if atol < 0 or rtol < 0:
        return None
    try:
        kernel = _kernel()
    except ImportError:
        return None
    n = expected.numel()
    blocks = (n + BLOCK - 1) // BLOCK
    counts = torch.empty(blocks, dtype=torch.int32, device=expected.device)
    with torch.cuda.device(expected.device) if expected.is_cuda else contextlib.nullcontext():
        kernel[(blocks,)](actual.detach(), expected.detach(), counts, n, float(atol), float(rtol), SAFETY, BLOCK=BLOCK)
    return True if not bool(counts.any()) else None
