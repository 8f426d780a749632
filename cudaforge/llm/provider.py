"""The ``scripted`` litellm provider: serves installed scripts through ``litellm.completion``.

Importing this module imports litellm; ``register_scripted_provider`` adds the provider
to ``litellm.custom_provider_map`` (idempotent), after which ``scripted/<name>`` models
take the same path through litellm as real ones: parameters, exception mapping, usage.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import litellm
from litellm import CustomLLM

from cudaforge.llm.scripted import count_words, get_script

PROVIDER = "scripted"
"""The provider prefix of scripted models."""

_ERRORS = {
    "rate_limit": litellm.RateLimitError,
    "timeout": litellm.Timeout,
    "server_error": litellm.InternalServerError,
    "connection": litellm.APIConnectionError,
    "auth": litellm.AuthenticationError,
    "bad_request": litellm.BadRequestError,
    "context_window": litellm.ContextWindowExceededError,
}


class ScriptedLLM(CustomLLM):
    """A litellm custom handler answering from the script named by the model."""

    def completion(
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        """Answer one call with the script's next entry (or raise the error it scripts)."""
        try:
            entry = get_script(model).next(messages)
        except (KeyError, LookupError) as err:
            raise litellm.BadRequestError(str(err.args[0]), model=model, llm_provider=PROVIDER) from None
        if isinstance(entry, dict) and "error" in entry:
            message = entry.get("message") or f"scripted {entry['error']}"
            raise _ERRORS[entry["error"]](message=message, model=model, llm_provider=PROVIDER)
        text = entry if isinstance(entry, str) else entry["text"]
        reasoning = None if isinstance(entry, str) else entry.get("reasoning_tokens")
        prompt_tokens = sum(count_words(str(m.get("content") or "")) for m in messages)
        completion_tokens = count_words(text) + (reasoning or 0)
        details: dict[str, Any] = (
            {"completion_tokens_details": {"reasoning_tokens": reasoning}} if reasoning is not None else {}
        )
        model_response.choices[0].message.content = text
        model_response.choices[0].finish_reason = "stop"
        model_response.model = f"{PROVIDER}/{model}"
        model_response.usage = litellm.Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
            **details,
        )
        return model_response

    async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
        """Async twin of ``completion``."""
        return self.completion(*args, **kwargs)


def register_scripted_provider() -> None:
    """Add the ``scripted`` provider to litellm (once per process)."""
    if not any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
        litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": ScriptedLLM()})


_SETUP_LOCK = threading.Lock()


def litellm_module() -> Any:
    """Import litellm, quiet its console hints, and register the scripted provider."""
    with _SETUP_LOCK:
        litellm.suppress_debug_info = True
        # Every call is in our ledger; litellm's per-call INFO lines would drown a run's progress.
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
            logging.getLogger(name).setLevel(logging.WARNING)
        register_scripted_provider()
    return litellm
