"""The LLM layer: one client over litellm for every model call.

- ``LLMClient``: timeouts, retries with backoff, a ledger row per call, the response cache.
- ``Ledger`` / ``LedgerRow``: per-call accounting (tokens, dollars, latency, cache hits).
- ``ResponseCache`` / ``CacheMode``: record and replay runs byte for byte (SQLite).
- ``install_script``: deterministic ``scripted/<name>`` models for tests and demos.
- ``preflight``: checks of a run's models before it starts (keys, local servers, demo and replay
  coverage) and the most it can cost; ``credentials``: missing keys are never retried.

Importing this package does not import litellm (replays run without it). It sets
``LITELLM_LOCAL_MODEL_COST_MAP`` (unless already set) so that importing litellm later
uses its bundled price map instead of fetching one from the network.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from cudaforge.llm.cache import CachedReply, CacheMode, ResponseCache, request_key  # noqa: E402
from cudaforge.llm.client import Backoff, LLMClient, LLMReply  # noqa: E402
from cudaforge.llm.errors import (  # noqa: E402
    ContextWindowError,
    EmptyReply,
    LLMAuthError,
    LLMError,
    LLMRequestError,
    LLMUnavailable,
    ReplayMiss,
)
from cudaforge.llm.ledger import Ledger, LedgerRow, LedgerTotals, Usage, sum_rows  # noqa: E402
from cudaforge.llm.pricing import cost_for, is_priced  # noqa: E402
from cudaforge.llm.scripted import (  # noqa: E402
    RATE_LIMIT,
    SERVER_ERROR,
    TIMEOUT,
    Script,
    get_script,
    install_script,
    load_script,
    remove_script,
)

__all__ = [
    "Backoff",
    "CacheMode",
    "CachedReply",
    "ContextWindowError",
    "EmptyReply",
    "LLMAuthError",
    "LLMClient",
    "LLMError",
    "LLMReply",
    "LLMRequestError",
    "LLMUnavailable",
    "Ledger",
    "LedgerRow",
    "LedgerTotals",
    "RATE_LIMIT",
    "ReplayMiss",
    "ResponseCache",
    "SERVER_ERROR",
    "Script",
    "TIMEOUT",
    "Usage",
    "cost_for",
    "get_script",
    "install_script",
    "is_priced",
    "load_script",
    "remove_script",
    "request_key",
    "sum_rows",
]
