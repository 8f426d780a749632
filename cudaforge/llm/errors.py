"""The errors the LLM layer raises: one family, whatever the provider.

Every error names the model and the agent role, and carries the ledger row of the
failed call (``row``) once the client has recorded it, so a caller can record a
failed round without digging into provider exceptions.
"""

from __future__ import annotations

from typing import Any


class LLMError(Exception):
    """Base class: a call to an agent's model did not produce a usable reply."""

    def __init__(self, message: str, *, model: str = "", role: str = "") -> None:
        super().__init__(message)
        self.model = model
        """The litellm model name of the failed call."""
        self.role = role
        """The agent role (``coder``, ``judge``) of the failed call."""
        self.attempts = 0
        """Provider calls made before giving up (0: none, e.g. a replay miss)."""
        self.row: Any = None
        """The ledger row recorded for the call (set by the client)."""


class LLMRequestError(LLMError):
    """The provider refused the request and retrying will not help (bad request, unknown model, ...)."""


class LLMAuthError(LLMRequestError):
    """Missing or rejected credentials (no API key, a wrong one, no access to the model).

    Never retried, and fatal for a whole run, not just the task: every other call would
    fail the same way. The message is one line naming the model and what to set.
    """

    def __init__(self, message: str, *, model: str = "", role: str = "", env_vars: list[str] | None = None) -> None:
        super().__init__(message, model=model, role=role)
        self.env_vars = list(env_vars or [])
        """The environment variables to set or check (empty: litellm could not say)."""


class ContextWindowError(LLMRequestError):
    """The prompt plus the reply cap do not fit in the model's context window."""


class LLMUnavailable(LLMError):
    """Rate limits, timeouts or server errors persisted through every retry."""


class EmptyReply(LLMError):
    """The model answered with no text; the caller records a failed round."""


class ReplayMiss(LLMError):
    """``replay_only`` mode: the response cache holds no reply for this request."""

    def __init__(self, message: str, *, model: str = "", role: str = "", request_key: str = "") -> None:
        super().__init__(message, model=model, role=role)
        self.request_key = request_key
        """The cache key of the request that was not recorded."""
