"""``ast.parse`` that several threads may call at once.

CPython 3.11 keeps the AST constructor's recursion counter in the interpreter's state, not the thread's, so two
threads parsing at the same moment can make one of them fail with ``SystemError: AST constructor recursion depth
mismatch``. In CI a legitimate candidate was judged ``invalid`` that way while another evaluation's thread parsed
a source; with ``concurrency`` > 1, the agents' reply parsing, the static guards and the task loader all parse in
threads. Every parse of ours goes through one lock here (and a mismatch caused by a parse outside it is retried).
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()
_ATTEMPTS = 3


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, one thread at a time. Raises what ``ast.parse`` raises (``SyntaxError``,
    ``RecursionError``, ``ValueError``...)."""
    with _LOCK:
        for attempt in range(_ATTEMPTS):
            try:
                return ast.parse(source, filename=filename)
            except SystemError as exc:
                if "recursion depth mismatch" not in str(exc) or attempt == _ATTEMPTS - 1:
                    raise
    raise AssertionError("unreachable")  # pragma: no cover
