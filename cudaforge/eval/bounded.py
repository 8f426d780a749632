"""Text of unbounded size cut to a bounded one, head and tail kept, before it is stored or passed on.

A compile log, a worker's message, an LLM reply or a candidate source can be as large as whoever wrote it
wants (a compile that printed 200 MB of warnings made a correct kernel's result too large to read). Whatever
the evaluator puts in a result, and whatever a run keeps in its directory or its graph state, goes through
:func:`cap_text` (one string) or :func:`cap_strings` (every string of a JSON-like value); a candidate source over
its limit is refused whole (:func:`source_size_problem`), never cut (a cut source is another program). Stdlib
only (and :mod:`cudaforge.proc.text`), so any layer from ``eval`` up may use it.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

from cudaforge.proc.text import plain_text

TEXT_LIMIT = 128 << 10
"""Characters a capped text keeps by default: its first and its last 64 Ki, less the line that marks the cut."""
_MARK = 160
"""Characters kept free for the line that marks a cut (it needs fewer)."""


def cap_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` when it has at most ``limit`` characters; else its beginning and its end, with a line between them
    that says how many characters were cut, in at most ``limit`` characters (so capping twice cuts once). Either way
    made :func:`plain_text` (what is capped is about to be stored)."""
    text = plain_text(text)
    if len(text) <= limit:
        return text
    keep = max(0, limit - _MARK)
    head, tail = keep - keep // 2, keep // 2
    cut = len(text) - head - tail
    mark = f"\n[... {cut:,} characters cut here: the first {head:,} and the last {tail:,} are kept ...]\n"
    return text[:head] + mark + text[len(text) - tail :]


def cap_strings(value: Any, limit: int = TEXT_LIMIT) -> Any:
    """``value`` (dicts, lists, tuples, scalars: a record's ``to_dict``) with every string in it, dict keys
    included, capped by :func:`cap_text`."""
    if isinstance(value, str):
        return cap_text(value, limit)
    if isinstance(value, dict):
        return {cap_strings(k, limit): cap_strings(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [cap_strings(v, limit) for v in value]
    return value


def source_size_problem(source: str, max_bytes: int) -> str | None:
    """One line for the Coder when ``source`` has more than ``max_bytes`` bytes of UTF-8, else None (what it costs
    is bounded by the limit, not by the source)."""
    if len(source) <= max_bytes and len(source.encode("utf-8", "surrogatepass")) <= max_bytes:
        return None
    return (
        f"the candidate source has more than {max_bytes:,} bytes (eval.max_source_bytes), so it was neither "
        "analysed nor run; KernelBench kernels need well under 100 KB: keep ModelNew and its kernels, and drop "
        "generated tables, embedded data and repeated code"
    )


def finite_number(value: Any, top: float = 1e15) -> TypeGuard[float]:
    """A finite, non-negative JSON number below ``top`` in an untrusted reply (a huge integer never reaches
    ``math.isfinite``, which would raise ``OverflowError``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):
        return 0 <= value < top
    return math.isfinite(value) and 0 <= value < top
