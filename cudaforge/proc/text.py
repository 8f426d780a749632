"""Text that came from a child or a sandbox, made safe to write, hash and send on (stdlib only).

JSON lets a lone surrogate through (``"\\ud800"`` decodes to one): a candidate's error message carrying one
reached a result, and writing that result or hashing a prompt made of it raised ``UnicodeEncodeError`` far from
where it came in. Every place that decodes what a child or a sandbox wrote (the worker's channel, a child's result
file, the static child's answer) reads it with :func:`loads_plain`, and :func:`cudaforge.eval.bounded.cap_text`
makes what it caps :func:`plain_text`.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape of a surrogate (``\\ud800``-``\\udfff``): the only way one gets into what ``json.loads`` returns
from UTF-8 bytes (which cannot hold one)."""


def loads_plain(data: bytes) -> Any:
    """``json.loads`` of UTF-8 bytes a child or a sandbox wrote, with :func:`plain_strings` applied only when the
    text holds a surrogate escape (rebuilding every list and dict of a 16 MiB message doubled its peak memory). Raises
    what ``json.loads`` and decoding raise."""
    value = json.loads(data.decode("utf-8"))
    return plain_strings(value) if _SURROGATE_ESCAPE.search(data) else value


def plain_text(text: str) -> str:
    """``text`` as Unicode that UTF-8 can write: each lone surrogate (JSON's ``"\\ud800"`` decodes to one, and a
    candidate's message may carry it) becomes U+FFFD. A text written, hashed or sent to a model raises on one."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def plain_strings(value: Any) -> Any:
    """``value`` (what an untrusted JSON text decoded to) with every string in it, dict keys included, made
    :func:`plain_text` (lists and dicts rebuilt). Recursion follows the nesting, which the JSON decoder bounds."""
    if isinstance(value, str):
        return plain_text(value)
    if isinstance(value, dict):
        return {plain_text(k) if isinstance(k, str) else k: plain_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_strings(v) for v in value]
    return value
