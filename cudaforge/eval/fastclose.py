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


def _kernels() -> tuple[Any, Any]:
    from cudaforge.eval._fastclose_kernel import count_not_close, count_unequal

    return count_not_close, count_unequal


def _any_counted(kernel: Any, like: torch.Tensor, n: int, *args: Any) -> bool:
    """Launch ``kernel`` (one program per ``BLOCK`` of ``n`` elements, each storing its count) on ``like``'s device;
    whether any count is not zero."""
    blocks = (n + BLOCK - 1) // BLOCK
    counts = torch.empty(blocks, dtype=torch.int32, device=like.device)
    with torch.cuda.device(like.device) if like.is_cuda else contextlib.nullcontext():
        kernel[(blocks,)](*args[:2], counts, n, *args[2:], BLOCK=BLOCK)
    return bool(counts.any())


def screen(
    expected: torch.Tensor, actual: torch.Tensor, atol: float, rtol: float, *, cpu_interpreter: bool = False
) -> bool | None:
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
        kernel = _kernels()[0]
    except ImportError:
        return None
    pair = (actual.detach(), expected.detach())
    return None if _any_counted(kernel, expected, expected.numel(), *pair, float(atol), float(rtol), SAFETY) else True


_WORDS = (torch.int32, torch.int64)


def same_words(a: torch.Tensor, b: torch.Tensor, *, cpu_interpreter: bool = False) -> bool | None:
    """Whether two 1-D integer tensors (``int32`` or ``int64`` words: the bits of whatever they view) are equal word
    for word, in one pass that reads each once (``torch.equal`` also writes a mask and reduces it); None when it
    cannot tell (tensors it does not handle, no Triton): then
    ``torch.equal`` must. Exact either way: True and False are both decisions.

    CPU tensors only with ``cpu_interpreter`` under ``TRITON_INTERPRET=1`` (the tests)."""
    interpret = cpu_interpreter and os.environ.get("TRITON_INTERPRET") == "1"
    if not (a.is_cuda or interpret) or a.device != b.device or a.dtype not in _WORDS or b.dtype != a.dtype:
        return None
    if a.dim() != 1 or a.shape != b.shape or a.numel() < MIN_ELEMENTS or not (a.is_contiguous() and b.is_contiguous()):
        return None
    try:
        kernel = _kernels()[1]
    except ImportError:
        return None
    return not _any_counted(kernel, a, a.numel(), a, b)


def warm(device: torch.device) -> bool:
    """Pay, in a process that is about to serve a candidate, what Triton costs once per process on its first
    launch: hashing its own library for the cache key (``triton_key``, about 0.3 s on an H200 node), the lazy
    import of its Gluon front end, loading the driver stub, looking up a kernel and building its launcher. One
    launch of the screen on a few elements does all of it; True when it ran. Needs a CUDA context (call it where
    creating one is allowed: under the GPU's lock)."""
    if device.type != "cuda":
        return False
    try:
        close, unequal = _kernels()
        a = torch.zeros(BLOCK, device=device)
        counts = torch.empty(1, dtype=torch.int32, device=device)
        with torch.cuda.device(device):
            close[(1,)](a, a, counts, BLOCK, 0.0, 0.0, SAFETY, BLOCK=BLOCK)
            for words in _WORDS:
                w = a.view(torch.int32).to(words)
                for n in (BLOCK, BLOCK - 1):  # a count of words divisible by 16, and one not (Triton specialises)
                    unequal[(1,)](w, w, counts, n, BLOCK=BLOCK)
                unequal[(1,)](w[1:], w[1:], counts, BLOCK - 1, BLOCK=BLOCK)  # pointers not 16-byte aligned
        torch.cuda.synchronize(device)
        return True
    except Exception:  # noqa: BLE001 - without Triton (or a broken one) nothing is warmed, nothing fails
        return False


def warm_host() -> None:
    """The part of ``warm`` that needs no GPU context, for a process that will launch Triton kernels later:
    Triton's cache key over its own library (``triton_key``, cached per process), the platform key and the Gluon
    import. Never raises."""
    try:
        from triton.runtime import build, cache

        cache.triton_key()
        build.platform_key()
        import triton.experimental.gluon  # noqa: F401 - imported lazily by Triton's first specialisation
    except Exception:  # noqa: BLE001 - another Triton version, or none: the first launch pays instead
        pass
