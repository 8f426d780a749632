"""The LLM layer's settings: one agent's model (``coder`` and ``judge`` in the config extend it). Plain data, no
litellm; ``cudaforge/config.py`` registers it with Hydra."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudaforge.llm.cache import CacheMode

OPENAI_COMPATIBLE_PREFIX = "hosted_vllm/"
"""litellm's provider for any OpenAI-compatible server (vLLM, SGLang, Ollama's /v1, a lab's endpoint): it sends the
served name as is, to ``api_base``, and asks for no key (``HOSTED_VLLM_API_KEY`` is sent when set)."""


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
    max_concurrent: int | None = field(default=None, metadata={"min": 1})
    """Calls to this model (and ``api_base``) in flight at once in this process, over every task and every search
    child (null: no cap besides ``concurrency`` and ``strategy.search.parallel``); a provider's rate limits are
    retried with backoff either way. The first client made for a model sets its cap."""
    calls_per_minute: int | None = field(default=None, metadata={"min": 1})
    """Calls to this model (and ``api_base``) started in any 60 seconds in this process (null: no limit): a
    provider's requests-per-minute limit, kept rather than provoked. The first client made for a model sets it."""
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
    openai_compatible: bool = False
    """``model`` is the name an OpenAI-compatible server at ``api_base`` serves (``coder=openai_compatible``): it is
    spelled ``hosted_vllm/<name>`` for litellm here, so no provider's key is asked for."""
    system_messages: bool | None = None
    """Whether a system prompt goes out with role ``system``: null lets litellm's model map decide (it sends the
    o-series' as ``user`` messages, having no ``supports_system_messages`` for them); true sends ``system`` whatever
    the map says (OpenAI's API takes it, and the CudaForge authors' client sends it for o3); false sends ``user``.
    The role a call sent is in its ledger row (``system_role``)."""
    max_input_tokens: int | None = None
    """The model's context window in tokens, for the cost bound of a model litellm does not know (null: litellm's)."""

    def __post_init__(self) -> None:
        if self.openai_compatible and self.model and not self.model.startswith(OPENAI_COMPATIBLE_PREFIX):
            self.model = OPENAI_COMPATIBLE_PREFIX + self.model


@dataclass
class LLMCacheConfig:
    """Record/replay of LLM replies (SQLite)."""

    mode: CacheMode = CacheMode.read_write
    """``off``, ``read_write`` (record) or ``replay_only`` (offline; a miss is an error)."""
    path: str | None = None
    """The cache file (null: <run dir>/llm_cache.sqlite)."""
