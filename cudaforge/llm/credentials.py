"""Missing or rejected credentials: how to recognise them and which variable to set.

litellm does not report a missing API key one way: depending on the provider and the
version it raises ``AuthenticationError``, ``InternalServerError`` ("Missing credentials",
"The api_key client option must be set ... OPENAI_API_KEY") or ``APIConnectionError``
("Missing Gemini API key"). ``is_credentials_error`` recognises all of them, so the client
fails at once instead of retrying a call that cannot succeed; ``missing_keys`` asks litellm
(``validate_environment``: no network) which environment variables a model still needs.

litellm is imported only by ``missing_keys`` (through ``provider.litellm_module``).
"""

from __future__ import annotations

import os
import re
from typing import Any

_KEY_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:API_KEY|API_TOKEN|AUTH_TOKEN|ACCESS_KEY_ID)\b")
"""An environment variable that holds a credential (``OPENAI_API_KEY``, ``AWS_ACCESS_KEY_ID``, ...)."""

_MISSING_KEY = re.compile(
    r"(?i:missing credentials"
    r"|api_key client option must be set"
    r"|missing\b[^.\n]{0,40}\b(?:api[ _-]?key|credentials|auth token)"
    r"|no (?:api )?key is set"
    r"|(?:invalid|incorrect)\b[^.\n]{0,20}\bapi[ _-]?key)"
    r"|" + _KEY_VARIABLE.pattern
)
"""Phrases of provider errors that mean "no usable key", whatever exception class carries them."""

_SAYS_ABSENT = re.compile(r"(?i)missing|must be set|not set|no (?:api )?key")
"""The key is absent rather than wrong."""


def is_credentials_error(litellm: Any, err: Exception) -> bool:
    """True when ``err`` means the credentials are missing, wrong or lack access to the model.

    ``AuthenticationError`` / ``PermissionDeniedError`` (or a 401/403 status), and any other
    provider error (typically a 500 or a connection error) whose message says the API key
    is missing. A context-window error is never one, whatever its message quotes.
    """
    if isinstance(err, litellm.ContextWindowExceededError):
        return False
    if isinstance(err, (litellm.AuthenticationError, litellm.PermissionDeniedError)):
        return True
    if getattr(err, "status_code", None) in (401, 403):
        return True
    return bool(_MISSING_KEY.search(str(err)))


KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
}
"""What litellm's ``validate_environment`` asks of these providers (tests/test_llm_preflight.py compares the two)."""


def missing_keys(model: str, api_base: str | None = None) -> list[str]:
    """Environment variables litellm says ``model`` needs and that are not set (no network).

    ``[]`` when nothing is missing, and for models litellm cannot place (scripted, unknown).
    """
    provider = (
        model.split("/", 1)[0] if "/" in model else ("openai" if model.startswith(("gpt-", "o1", "o3", "o4")) else "")
    )
    if provider in KNOWN_KEYS and not api_base:  # the common providers without importing litellm (seconds)
        return [name for name in KNOWN_KEYS[provider] if not os.environ.get(name)]
    from cudaforge.llm.provider import litellm_module

    try:
        found = litellm_module().validate_environment(model=model, api_base=api_base)
    except Exception:  # noqa: BLE001 - an unplaceable model: litellm says so at call time
        return []
    return list(found.get("missing_keys") or [])


def credentials_message(model: str, role: str, err: Exception, api_base: str | None = None) -> tuple[str, list[str]]:
    """One line naming the model, the role and the variable to set; and those variables.

    The variables are those litellm finds missing, else those the provider's message names.
    """
    said = str(err).split("Traceback (most recent call last)", 1)[0]  # litellm appends one to some errors
    cause = " ".join(f"{type(err).__name__}: {said}".split())[:300]
    missing = missing_keys(model, api_base)
    names = missing or list(dict.fromkeys(_KEY_VARIABLE.findall(said)))
    variables = ", ".join(names) if names else "the provider's API key variable"
    if missing or _SAYS_ABSENT.search(said):
        return f"{model} ({role}): no API key: set {variables} (provider said: {cause})", names
    return f"{model} ({role}): credentials rejected: check {variables} and access to the model ({cause})", names
