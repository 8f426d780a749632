"""The LLM layer's settings: one agent's model (``coder`` and ``judge`` in the config extend it). Plain data, no
litellm; ``cudaforge/config.py`` registers it with Hydra."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LLMConfig:
    """One agent's model (the Coder and the Judge are configured separately)."""

    model: str = "scripted/demo"
    """A litellm model name (``openai/o3``, ``anthropic/claude-sonnet-4``, ``hosted_vllm/...``)."""
    temperature: float | None = None
    """Sampling temperature (null: the provider's default; reasoning models ignore it)."""
    reasoning_effort: str | None = None
    """``low``, ``medium`` or ``high`` for reasoning models (null: the provider's default)."""
    max_tokens: int | None = None
    """Cap on reply tokens (null: the provider's default)."""
    api_base: str | None = None
    """Server address for a local vLLM / ollama / proxy."""
    timeout_s: float = 600.0
    """Per-call timeout."""
    max_retries: int = 4
    """Retries on rate limits, timeouts and 5xx, with exponential backoff."""
    retry_base_delay_s: float = 2.0
    """Delay before the first retry; doubles each retry, with jitter."""
    retry_max_delay_s: float = 60.0
    """Cap on any retry delay, a provider's Retry-After included."""
    input_cost_per_token: float | None = None
    """Custom $ price per input token for models litellm does not price."""
    output_cost_per_token: float | None = None
    """Custom $ price per output token."""
