"""Scripted models: deterministic stand-ins for an LLM, for tests and offline demos.

A script is installed under a name and called as model ``scripted/<name>`` through the
real ``litellm.completion`` path (the ``scripted`` provider lives in
``cudaforge.llm.provider``). A script is either a list of entries consumed in order or a
callable ``(messages) -> entry``. An entry is:

- a string: the reply text (``""`` is an empty reply);
- ``{"text": "...", "reasoning_tokens": N}``: a reply that reports reasoning tokens;
- ``{"error": KIND, "message": "..."}``: the call raises the provider error of that kind,
  one of ``ERROR_KINDS`` (``rate_limit``, ``timeout``, ``server_error`` ... ).

Usage is counted deterministically: whitespace-separated words of the prompt and reply.
This module does not import litellm.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Entry = str | dict[str, Any]
"""One scripted reply: text, ``{"text", "reasoning_tokens"}`` or ``{"error", "message"}``."""

ERROR_KINDS = ("rate_limit", "timeout", "server_error", "connection", "auth", "bad_request", "context_window")
"""Provider errors a script can raise; the first four are retried by the client."""

RATE_LIMIT: dict[str, Any] = {"error": "rate_limit"}
"""Entry: the provider answers 429."""
TIMEOUT: dict[str, Any] = {"error": "timeout"}
"""Entry: the call times out."""
SERVER_ERROR: dict[str, Any] = {"error": "server_error"}
"""Entry: the provider answers 500."""

DEMO_MODEL = "scripted/demo"
"""The model name of the demo transcript's replies (``cudaforge.run.demo``): a run, export or report that names
it was made by no language model."""


def _check_entry(entry: Entry) -> Entry:
    """Validate one entry at install time, so a bad script fails before any call."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and "error" in entry:
        if entry["error"] not in ERROR_KINDS:
            raise ValueError(f"scripted error kind {entry['error']!r} is not one of {ERROR_KINDS}")
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("text"), str):
        return entry
    raise ValueError(f"a scripted entry is a string, {{'text': ...}} or {{'error': kind}}, not {entry!r}")


def count_words(text: str) -> int:
    """The scripted model's token count: whitespace-separated words."""
    return len(text.split())


class Script:
    """A named sequence of replies (or a reply function), consumed thread-safely."""

    def __init__(self, name: str, replies: Sequence[Entry] | Callable[[list[dict]], Entry]) -> None:
        self.name = name
        """The name in ``scripted/<name>``."""
        self._replies = replies if callable(replies) else [_check_entry(e) for e in replies]
        self._lock = threading.Lock()
        self.calls: list[list[dict]] = []
        """The messages of every call received, in order (failed calls included)."""

    def next(self, messages: list[dict]) -> Entry:
        """The entry answering this call; raises ``LookupError`` when the list is used up. A reply function is
        called outside the script's lock, so calls from several threads are answered at once (as a provider's are);
        it keeps its own state thread-safe."""
        with self._lock:
            index = len(self.calls)
            self.calls.append([dict(m) for m in messages])
            if not callable(self._replies):
                if index >= len(self._replies):
                    raise LookupError(
                        f"script {self.name!r} is used up: all {len(self._replies)} replies were consumed"
                    )
                return self._replies[index]
        return _check_entry(self._replies(messages))

    @property
    def remaining(self) -> int | None:
        """Entries not yet consumed (None for a reply function)."""
        with self._lock:
            return None if callable(self._replies) else len(self._replies) - len(self.calls)


_SCRIPTS: dict[str, Script] = {}
_REGISTRY_LOCK = threading.Lock()


def install_script(name: str, replies: Sequence[Entry] | Callable[[list[dict]], Entry]) -> Script:
    """Install (or replace) the script answering model ``scripted/<name>``; returns it."""
    script = Script(name, replies)
    with _REGISTRY_LOCK:
        _SCRIPTS[name] = script
    return script


def remove_script(name: str) -> None:
    """Uninstall a script (no error if it is not installed)."""
    with _REGISTRY_LOCK:
        _SCRIPTS.pop(name, None)


def get_script(name: str) -> Script:
    """The installed script of that name; ``KeyError`` naming the installed ones otherwise."""
    with _REGISTRY_LOCK:
        if name not in _SCRIPTS:
            raise KeyError(f"no script named {name!r} is installed (installed: {sorted(_SCRIPTS)}); use install_script")
        return _SCRIPTS[name]


def load_script(path: str | Path) -> list[Entry]:
    """Entries from a YAML or JSON file holding a list, or a mapping with a ``replies`` list."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    if isinstance(data, dict):
        data = data.get("replies")
    if not isinstance(data, list):
        raise ValueError(f"{path}: a script file holds a list of replies or a mapping with a 'replies' list")
    return [_check_entry(e) for e in data]
