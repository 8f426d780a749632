"""Record/replay: a SQLite response cache keyed by the full request.

The key is the sha256 of the canonical JSON of everything that shapes a reply (model,
messages, sampling parameters, api_base, sample index); the value is the reply text
exactly as received, with its usage and cost. Modes:

- ``off``: no cache; every call reaches the provider.
- ``read_write``: a hit is served from the cache, a miss is called and stored (recording).
- ``replay_only``: a hit is served, a miss is an error (``ReplayMiss``); nothing reaches
  the network and litellm is never imported on this path.

This module imports only the standard library.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudaforge.llm.ledger import Usage

REQUEST_SCHEMA = 1
"""Version of the request layout hashed into keys; bump it when the layout changes."""

TASK_IN_PROMPT = re.compile(r"task `([^`]+)`")
"""How the agents' prompt templates name the task (``task `tiny/level1/1_ReLU```); group 1 is its id."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    finish_reason TEXT,
    usage TEXT NOT NULL,
    cost_usd REAL,
    priced INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    created REAL NOT NULL
)
"""


class CacheMode(str, enum.Enum):
    """How the response cache is used."""

    off = "off"
    read_write = "read_write"
    replay_only = "replay_only"


def canonical_json(value: Any) -> str:
    """The one JSON text of a value: sorted keys, no spaces, unicode kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: dict[str, Any]) -> str:
    """The cache key of a request: sha256 (hex) of its canonical JSON."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


@dataclass
class CachedReply:
    """One stored reply."""

    text: str
    """The reply text, byte for byte as first received."""
    usage: Usage
    """Token counts of the recorded call."""
    finish_reason: str | None = None
    """Why the model stopped (``stop``, ``length``, ...), as reported."""
    cost_usd: float | None = None
    """Dollar cost of the recorded call (None: unpriced)."""
    priced: bool = False
    """Whether the recorded call was priced."""
    latency_s: float = 0.0
    """Seconds the recorded call took."""


class ResponseCache:
    """A SQLite file of replies, safe to share between threads (and processes, via WAL)."""

    def __init__(self, path: str | Path, mode: CacheMode | str = CacheMode.read_write) -> None:
        self.path = Path(path)
        """The SQLite file."""
        self.mode = CacheMode(mode)
        """``off``, ``read_write`` or ``replay_only``."""
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if self.mode is CacheMode.off:
            return
        if self.mode is CacheMode.replay_only and not self.path.exists():
            raise FileNotFoundError(f"replay_only: no recorded response cache at {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    def get(self, key: str) -> CachedReply | None:
        """The stored reply for a key, or None (always None when the mode is ``off``)."""
        if self._db is None:
            return None
        with self._lock:
            row = self._db.execute(
                "SELECT text, finish_reason, usage, cost_usd, priced, latency_s FROM replies WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        text, finish_reason, usage, cost_usd, priced, latency_s = row
        return CachedReply(text, Usage.from_dict(json.loads(usage)), finish_reason, cost_usd, bool(priced), latency_s)

    def put(self, key: str, request: dict[str, Any], reply: CachedReply) -> CachedReply:
        """Store a reply unless the key already has one; return the stored reply.

        Two threads racing on the same request both get the first stored text, so a
        recorded run and its replay see the same replies. No-op unless ``read_write``.
        """
        if self._db is None or self.mode is not CacheMode.read_write:
            return reply
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    canonical_json(request),
                    reply.text,
                    reply.finish_reason,
                    reply.usage.to_json(),
                    reply.cost_usd,
                    int(reply.priced),
                    reply.latency_s,
                    time.time(),
                ),
            )
            self._db.commit()
        return self.get(key) or reply

    def request(self, key: str) -> dict[str, Any] | None:
        """The full recorded request of a key (for inspection), or None."""
        if self._db is None:
            return None
        with self._lock:
            row = self._db.execute("SELECT request FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def __len__(self) -> int:
        if self._db is None:
            return 0
        with self._lock:
            count: int = self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
            return count

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def recorded_tasks(path: str | Path, model: str | None = None, ledger: str | Path | None = None) -> set[str]:
    """Task ids named in the prompts recorded in a cache file (only ``model``'s requests, if given).

    Read-only and without litellm. A task absent here cannot be replayed at all; one present
    may still miss later rounds (only a replay tells). Prompts name the task as ``task `ID```
    in our templates; templates that do not (the CudaForge paper's set) are found through the
    recording run's ledger (``ledger``: the run directory's, beside the cache; the caller names it), whose rows carry
    their task ids.
    """
    found = _ledger_tasks(Path(ledger), model) if ledger is not None else set()
    db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        for (text,) in db.execute("SELECT request FROM replies"):
            request = json.loads(text)
            if model is not None and request.get("model") != model:
                continue
            for message in request.get("messages", []):
                if message.get("role") == "user":
                    found.update(TASK_IN_PROMPT.findall(str(message.get("content") or "")))
    finally:
        db.close()
    return found


def _ledger_tasks(ledger: Path, model: str | None) -> set[str]:
    """Task ids of a ledger's answered calls (only ``model``'s, if given); empty without a ledger. Never raises."""
    found: set[str] = set()
    try:
        lines = ledger.read_text(errors="replace").splitlines() if ledger.is_file() else []
    except OSError:
        return found
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line torn by a crash
        if not isinstance(row, dict) or row.get("error") or (model is not None and row.get("model") != model):
            continue
        task_id = (row.get("meta") or {}).get("task_id") if isinstance(row.get("meta"), dict) else None
        if isinstance(task_id, str) and task_id:
            found.add(task_id)
    return found
