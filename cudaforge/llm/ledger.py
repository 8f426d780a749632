"""The ledger: one row per LLM call, appended to a JSONL file as it happens.

A row is written (and flushed) when the call ends, successful or not, so a crashed
run keeps the account of every call it made. ``Ledger.totals`` sums rows into tokens,
dollars and latency; calls to models without a price are counted, never priced at $0
(``format_cost``: ``$0.1200 + 3 unpriced calls``, or ``unpriced`` when no call had a price).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge.types import Record

SCRIPTED_PREFIX = "scripted/"
"""Models answered in-process by ``cudaforge.llm.scripted`` (the demo transcript, tests): no provider is called."""


def format_cost(cost_usd: float | None, unpriced_calls: int = 0) -> str:
    """Dollars for people: ``$0.1234``; ``$0.1234 + 3 unpriced calls`` when some calls had no price;
    ``unpriced`` when none had one (``cost_usd`` None). Never ``$0`` for a cost nobody knows."""
    if cost_usd is None:
        return "unpriced"
    dollars = f"${cost_usd:.4f}"
    if unpriced_calls:
        dollars += f" + {unpriced_calls} unpriced call{'s' if unpriced_calls != 1 else ''}"
    return dollars


@dataclass
class Usage(Record):
    """Token counts of one reply, as the provider reported them."""

    prompt_tokens: int = 0
    """Tokens in (the whole prompt)."""
    completion_tokens: int = 0
    """Tokens out, reasoning tokens included."""
    reasoning_tokens: int | None = None
    """Hidden reasoning tokens among ``completion_tokens`` (None: not reported)."""
    cached_prompt_tokens: int | None = None
    """Prompt tokens the provider served from its own prompt cache (None: not reported)."""


@dataclass
class LedgerRow(Record):
    """The account of one LLM call."""

    role: str
    """The agent that made the call (``coder``, ``judge``)."""
    model: str
    """The litellm model name."""
    prompt_tokens: int = 0
    """Tokens in."""
    completion_tokens: int = 0
    """Tokens out, reasoning tokens included."""
    reasoning_tokens: int | None = None
    """Reasoning tokens among the tokens out (None: not reported)."""
    cached_prompt_tokens: int | None = None
    """Prompt tokens served from the provider's prompt cache (None: not reported)."""
    cost_usd: float | None = None
    """Dollar cost of the call at list price (None: the model is unpriced). For a cache hit,
    the cost of the recorded call, which this run did not pay."""
    priced: bool = False
    """False when the cost is unknown: neither litellm's price map nor the config prices the
    model. (A call that got no reply used no tokens: $0, priced.)"""
    latency_s: float = 0.0
    """Wall-clock seconds of the call, retries and backoff included."""
    cache_hit: bool = False
    """True when the reply came from the response cache (no network call)."""
    request_key: str = ""
    """The response-cache key of the request (sha256 of the canonical request)."""
    timestamp: str = ""
    """When the call ended (ISO 8601, UTC)."""
    error: str = ""
    """Empty for a good reply, else ``<ErrorClass>: <message>``."""
    attempts: int = 0
    """Provider calls made (1 + retries); 0 for a cache hit or a replay miss."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Caller's labels for the call (task id, round, ...), JSON values only."""
    system_role: str | None = None
    """The role the call's system prompt went out with (``system`` or ``user``: ``LLMConfig.system_messages`` or
    litellm's model map decided); None without a system prompt, for a cache hit, or in ledgers written before."""
    price_source: str = ""
    """Which table priced the call: ``config``, ``litellm``, ``override`` (the dated override file) or ``none``
    (empty for a cache hit, which carries the recorded call's cost, and in ledgers written before it was kept)."""


@dataclass
class LedgerTotals(Record):
    """Sums over ledger rows."""

    calls: int = 0
    """Rows summed."""
    errors: int = 0
    """Rows with an error."""
    cache_hits: int = 0
    """Rows served by the response cache."""
    prompt_tokens: int = 0
    """Tokens in."""
    completion_tokens: int = 0
    """Tokens out."""
    reasoning_tokens: int = 0
    """Reasoning tokens, over the rows that report them."""
    cost_usd: float | None = None
    """Dollars at list price over priced rows (None when every row is unpriced)."""
    spent_usd: float | None = None
    """Dollars of priced rows that were not cache hits: what this run paid (None as ``cost_usd``)."""
    unpriced_calls: int = 0
    """Rows whose model has no price: their cost is missing from the dollar sums."""
    scripted_calls: int = 0
    """Rows of ``scripted/`` models (the demo transcript, tests): answered in-process, no provider called."""
    latency_s: float = 0.0
    """Seconds summed over calls: the time spent waiting for LLM replies, not the run's wall time."""

    def summary(self) -> str:
        """One line for a terminal: calls, tokens, dollars (``format_cost``), seconds of LLM time.

        ``19 calls (0 cache hits, 0 errors) | 9,876 tokens in / 1,234 out | $0.0000 (scripted: no provider
        called) | 9.0 s of LLM time``. The seconds are summed over calls (concurrent calls overlap).
        """
        if not self.calls:
            dollars = "$0"
        else:
            dollars = format_cost(self.cost_usd, self.unpriced_calls)
            if self.scripted_calls == self.calls:
                dollars += " (scripted: no provider called)"
        reasoning = f" ({self.reasoning_tokens:,} reasoning)" if self.reasoning_tokens else ""
        return (
            f"{self.calls} calls ({self.cache_hits} cache hits, {self.errors} errors) | "
            f"{self.prompt_tokens:,} tokens in / {self.completion_tokens:,} out{reasoning} | "
            f"{dollars} | {self.latency_s:.1f} s of LLM time"
        )


def sum_rows(rows: list[LedgerRow]) -> LedgerTotals:
    """Sum ledger rows into totals."""
    totals = LedgerTotals()
    for row in rows:
        totals.calls += 1
        totals.errors += bool(row.error)
        totals.cache_hits += row.cache_hit
        totals.prompt_tokens += row.prompt_tokens
        totals.completion_tokens += row.completion_tokens
        totals.reasoning_tokens += row.reasoning_tokens or 0
        totals.latency_s += row.latency_s
        totals.scripted_calls += row.model.startswith(SCRIPTED_PREFIX)
        if not row.priced or row.cost_usd is None:
            totals.unpriced_calls += 1
            continue
        totals.cost_usd = (totals.cost_usd or 0.0) + row.cost_usd
        totals.spent_usd = (totals.spent_usd or 0.0) + (0.0 if row.cache_hit else row.cost_usd)
    return totals


class Ledger:
    """Thread-safe list of ledger rows, mirrored to an append-only JSONL file.

    ``path=None`` keeps rows in memory only. An existing file is read first, so a
    resumed run's totals include the calls made before it was killed.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        """The JSONL file (None: in memory only)."""
        self._lock = threading.Lock()
        self._rows: list[LedgerRow] = []
        self._file = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                self._rows = self.read(self.path)
            self._file = self.path.open("a", encoding="utf-8")

    @staticmethod
    def read(path: str | Path) -> list[LedgerRow]:
        """The rows of a ledger file; a torn last line (a crash mid-write) is skipped."""
        rows = []
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                rows.append(LedgerRow.from_dict(json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                continue
        return rows

    def record(self, row: LedgerRow) -> None:
        """Append a row (and one flushed line to the file)."""
        with self._lock:
            self._rows.append(row)
            if self._file is not None:
                self._file.write(row.to_json() + "\n")
                self._file.flush()

    @property
    def rows(self) -> list[LedgerRow]:
        """A copy of the rows so far, in the order the calls ended."""
        with self._lock:
            return list(self._rows)

    def totals(self, role: str | None = None, **meta: Any) -> LedgerTotals:
        """Totals over the rows of one role (None: all) whose ``meta`` has the given values."""
        rows = [
            row
            for row in self.rows
            if (role is None or row.role == role) and all(row.meta.get(k) == v for k, v in meta.items())
        ]
        return sum_rows(rows)

    def close(self) -> None:
        """Close the file (rows stay readable in memory)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
