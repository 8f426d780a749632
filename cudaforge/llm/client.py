"""``LLMClient``: the one way cudaforge calls a model.

One client per agent role. ``complete(messages)`` builds the full request from the
role's config, serves it from the response cache when it can, else calls
``litellm.completion`` with a timeout and retries rate limits, timeouts, connection
errors and 5xx with exponential backoff and jitter. Missing or rejected credentials are
never retried, whatever exception litellm dresses them in: they raise ``LLMAuthError`` at
once, naming the variable to set. Every call, good or failed, leaves one ledger row.
Provider exceptions never escape: callers see ``LLMError`` subclasses.

litellm is imported only when a call must reach a provider, so replaying a recorded
run (``replay_only``) works where litellm is missing and never touches the network.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cudaforge.llm.cache import REQUEST_SCHEMA, CachedReply, CacheMode, ResponseCache, request_key
from cudaforge.llm.credentials import credentials_message, is_credentials_error
from cudaforge.llm.errors import (
    ContextWindowError,
    EmptyReply,
    LLMAuthError,
    LLMError,
    LLMRequestError,
    LLMUnavailable,
    ReplayMiss,
)
from cudaforge.llm.ledger import Ledger, LedgerRow, Usage
from cudaforge.llm.pace import paced
from cudaforge.llm.pricing import cost_for, price_source
from cudaforge.proc.text import plain_text

if TYPE_CHECKING:
    from cudaforge.llm.settings import LLMConfig


@dataclass(frozen=True)
class Backoff:
    """Delays between retries: ``base_s * 2**(retry-1)``, capped, times a jitter in [0.5, 1]."""

    base_s: float = 2.0
    """Delay before the first retry (before jitter)."""
    max_s: float = 60.0
    """Cap on any delay, a provider's Retry-After included."""

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        wait = min(self.max_s, self.base_s * 2 ** (retry - 1)) * random.uniform(0.5, 1.0)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(self.max_s, wait)


@dataclass
class LLMReply:
    """A model's reply and its ledger row."""

    text: str
    """The reply text, exactly as received (or recorded)."""
    finish_reason: str | None
    """Why the model stopped: ``stop``, ``length`` (hit max_tokens), ..."""
    row: LedgerRow
    """The ledger row of the call."""

    @property
    def usage(self) -> Usage:
        """Token counts of the call."""
        r = self.row
        return Usage(r.prompt_tokens, r.completion_tokens, r.reasoning_tokens, r.cached_prompt_tokens)

    @property
    def cost_usd(self) -> float | None:
        """Dollar cost at list price (None: unpriced model)."""
        return self.row.cost_usd

    @property
    def latency_s(self) -> float:
        """Seconds the call took."""
        return self.row.latency_s

    @property
    def cache_hit(self) -> bool:
        """True when served by the response cache."""
        return self.row.cache_hit


def _retry_after(err: Exception) -> float | None:
    """The provider's Retry-After header in seconds, if it sent one."""
    headers = getattr(err, "litellm_response_headers", None) or getattr(getattr(err, "response", None), "headers", None)
    try:
        return float(headers.get("retry-after")) if headers else None
    except (TypeError, ValueError):
        return None


def _is_transient(litellm: Any, err: Exception) -> bool:
    """Rate limits, timeouts, connection failures and 5xx: worth retrying."""
    transient = (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )
    if isinstance(err, transient):
        return True
    status = getattr(err, "status_code", None)
    return isinstance(status, int) and (status in (408, 429) or status >= 500)


def _usage_of(response: Any) -> Usage:
    """Our ``Usage`` from a litellm response (zeros where the provider reports nothing)."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return Usage()
    completion_details = getattr(usage, "completion_tokens_details", None)
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        prompt_tokens=usage.prompt_tokens or 0,
        completion_tokens=usage.completion_tokens or 0,
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", None),
        cached_prompt_tokens=getattr(prompt_details, "cached_tokens", None),
    )


_SYSTEM_ROLE = "_system_role"
"""How ``complete`` hands the role its system prompt went out with to the ledger row (never a label of the row)."""


def system_messages_as_sent(
    litellm: Any, model: str, messages: list[dict], setting: bool | None
) -> tuple[list[dict], str | None]:
    """The messages a call sends and the role its system prompt goes out with: where the role is decided.

    ``setting`` is ``LLMConfig.system_messages``: True keeps ``system`` and tells litellm's model map that the model
    takes it (litellm would otherwise turn an o-series model's system message into a user message); False turns
    system messages into user messages here; None leaves litellm to decide by its map, as it will."""
    if not any(m.get("role") == "system" for m in messages):
        return messages, None
    bare = model.split("/", 1)[1] if model.startswith("openai/") else model
    if setting is True:
        try:
            if not litellm.supports_system_messages(bare, None):
                litellm.register_model({bare: {"supports_system_messages": True}})
        except Exception:  # noqa: BLE001 - a model litellm does not know: it sends the role as given
            pass
        return messages, "system"
    if setting is False:
        return [{**m, "role": "user"} if m.get("role") == "system" else m for m in messages], "user"
    try:
        known = litellm.supports_system_messages(bare, None)
    except Exception:  # noqa: BLE001 - a model litellm does not know: it sends the role as given
        known = True
    return messages, "system" if known or not _o_series(bare) else "user"


def _o_series(model: str) -> bool:
    """An OpenAI reasoning model's name (o1, o3, o4-mini ...): the family litellm's transform rewrites."""
    return len(model) > 1 and model[0] == "o" and model[1].isdigit()


class LLMClient:
    """One agent's model: cached, retried, accounted calls.

    ``config`` is the role's ``LLMConfig``; ``cache`` a shared ``ResponseCache`` (None:
    no cache); ``ledger`` a shared ``Ledger`` (None: a private in-memory one);
    ``backoff`` the retry delays. Safe to call from several threads.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        role: str,
        cache: ResponseCache | None = None,
        ledger: Ledger | None = None,
        backoff: Backoff = Backoff(),
        seed: int = 0,
    ) -> None:
        self.config = config
        """The role's model configuration."""
        self.role = role
        """The agent role recorded in every ledger row."""
        self.cache = cache
        """The response cache (None: off)."""
        self.ledger = ledger if ledger is not None else Ledger()
        """Where the rows of this client's calls go."""
        self.backoff = backoff
        """Delays between retries."""
        self.seed = int(seed)
        """The run's sampling seed (``seed=N``): a run under another seed asks the model afresh instead of replaying
        its cached replies, and the seed is sent to providers that take one (litellm drops it for the others).
        0 sends none and keeps the cache keys of runs made before seeds."""

    def request(self, messages: list[dict], *, sample: int = 0) -> dict[str, Any]:
        """The full request a call sends, as hashed into its cache key."""
        c = self.config
        return {
            "v": REQUEST_SCHEMA,
            "model": c.model,
            "messages": [dict(m) for m in messages],
            "temperature": c.temperature,
            "reasoning_effort": c.reasoning_effort,
            "max_tokens": c.max_tokens,
            "api_base": c.api_base,
            "sample": sample,
            **({"seed": self.seed} if self.seed else {}),
        }

    def complete(self, messages: list[dict], *, sample: int = 0, **meta: Any) -> LLMReply:
        """Ask the model; return its reply or raise an ``LLMError`` (with ``.row`` set).

        ``sample`` tells apart deliberate repeats of one request (different cache keys);
        ``meta`` (task id, round, ...) is copied into the ledger row.
        """
        request = self.request(messages, sample=sample)
        key = request_key(request)
        started = time.monotonic()
        cache = self.cache
        mode = cache.mode if cache is not None else CacheMode.off
        cached = cache.get(key) if cache is not None and mode is not CacheMode.off else None
        if cached is not None:
            return self._finish(key, cached, started, attempts=0, cache_hit=True, meta=meta)
        if cache is not None and mode is CacheMode.replay_only:
            last = messages[-1] if messages else {}
            err = ReplayMiss(
                f"replay_only: no recorded reply for request {key} (role {self.role}, model {self.config.model}, "
                f"{len(messages)} messages; last {last.get('role', '?')!r}: {str(last.get('content', ''))[:200]!r}) "
                f"in {cache.path}; record it with cache mode read_write",
                model=self.config.model,
                role=self.role,
                request_key=key,
            )
            raise self._fail(err, key, started, attempts=0, meta=meta)
        try:
            response, attempts, system_role = self._call(request)
        except LLMError as err:
            raise self._fail(err, key, started, attempts=err.attempts, meta=meta) from err.__cause__
        choice = response.choices[0]
        usage = _usage_of(response)
        cost, priced = self._cost(usage)
        reply = CachedReply(
            text=plain_text(choice.message.content or ""),  # a lone surrogate could be neither stored nor hashed
            usage=usage,
            finish_reason=plain_text(choice.finish_reason) if isinstance(choice.finish_reason, str) else None,
            cost_usd=cost,
            priced=priced,
            latency_s=time.monotonic() - started,
        )
        if cache is not None and mode is CacheMode.read_write:
            reply = cache.put(key, request, reply)  # the first stored reply wins a race
            reply.usage, reply.cost_usd, reply.priced = usage, cost, priced  # but this call's account
        return self._finish(
            key, reply, started, attempts=attempts, cache_hit=False, meta={**meta, _SYSTEM_ROLE: system_role}
        )

    def _cost(self, usage: Usage) -> tuple[float | None, bool]:
        c = self.config
        return cost_for(
            c.model, usage, input_cost_per_token=c.input_cost_per_token, output_cost_per_token=c.output_cost_per_token
        )

    def _call(self, request: dict[str, Any]) -> tuple[Any, int, str | None]:
        """``litellm.completion`` with retries; returns the response, the attempts made and the role the system
        prompt went out with."""
        from cudaforge.llm.provider import litellm_module  # litellm is imported at the first call, not before

        litellm = litellm_module()
        c = self.config
        kwargs: dict[str, Any] = {
            "model": request["model"],
            "messages": request["messages"],
            "timeout": c.timeout_s,
            "num_retries": 0,  # retries are ours, so they are counted and backed off here
            "drop_params": True,  # e.g. temperature on a reasoning model: ignored, not an error
        }
        for name in ("temperature", "reasoning_effort", "max_tokens", "api_base", "seed"):
            if request.get(name) is not None:
                kwargs[name] = request[name]
        kwargs["messages"], role = system_messages_as_sent(litellm, c.model, kwargs["messages"], c.system_messages)
        attempt = 0
        while True:
            attempt += 1
            try:
                with paced(c.model, c.api_base, c.max_concurrent, c.calls_per_minute):  # a backoff below holds none
                    return litellm.completion(**kwargs), attempt, role
            except Exception as err:  # noqa: BLE001 - every provider error becomes an LLMError
                retry = _is_transient(litellm, err) and not is_credentials_error(litellm, err)
                if retry and attempt <= c.max_retries:
                    time.sleep(self.backoff.delay(attempt, _retry_after(err)))
                    continue
                raise self._classify(litellm, err, attempt) from err

    def _classify(self, litellm: Any, err: Exception, attempts: int) -> LLMError:
        """The ``LLMError`` for a provider exception, naming model, role and cause."""
        model, role = self.config.model, self.role
        if is_credentials_error(litellm, err):  # whatever class litellm gave it: not worth a retry
            message, env_vars = credentials_message(model, role, err, self.config.api_base)
            error: LLMError = LLMAuthError(message, model=model, role=role, env_vars=env_vars)
        else:
            kind: type[LLMError]
            if _is_transient(litellm, err):
                kind, what = LLMUnavailable, f"still failing after {attempts} attempts"
            elif isinstance(err, litellm.ContextWindowExceededError):
                kind, what = ContextWindowError, "prompt exceeds the context window"
            else:
                kind, what = LLMRequestError, "request refused"
            error = kind(
                f"{model} ({role}): {what}: {type(err).__name__}: {plain_text(str(err)[:500])}", model=model, role=role
            )
        error.attempts = attempts
        return error

    def _finish(
        self, key: str, reply: CachedReply, started: float, *, attempts: int, cache_hit: bool, meta: dict[str, Any]
    ) -> LLMReply:
        """Record the row of an answered call; raise ``EmptyReply`` for an empty answer."""
        cost, priced = reply.cost_usd, reply.priced
        custom_prices = (self.config.input_cost_per_token, self.config.output_cost_per_token)
        if cache_hit and custom_prices != (None, None):  # today's config prices the recorded usage
            cost, priced = self._cost(reply.usage)
        if reply.text.strip():
            row = self._row(key, reply.usage, cost, priced, started, attempts, cache_hit, "", meta)
            return LLMReply(reply.text, reply.finish_reason, row)
        err = EmptyReply(
            f"{self.config.model} ({self.role}) answered with no text (finish reason {reply.finish_reason})",
            model=self.config.model,
            role=self.role,
        )
        err.row = self._row(key, reply.usage, cost, priced, started, attempts, cache_hit, f"EmptyReply: {err}", meta)
        raise err

    def _fail(self, err: LLMError, key: str, started: float, *, attempts: int, meta: dict[str, Any]) -> LLMError:
        """Record the row of a call that got no answer (no tokens, $0); return the error to raise."""
        err.row = self._row(key, Usage(), 0.0, True, started, attempts, False, f"{type(err).__name__}: {err}", meta)
        return err

    def _row(
        self,
        key: str,
        usage: Usage,
        cost: float | None,
        priced: bool,
        started: float,
        attempts: int,
        cache_hit: bool,
        error: str,
        meta: dict[str, Any],
    ) -> LedgerRow:
        row = LedgerRow(
            role=self.role,
            model=self.config.model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            cached_prompt_tokens=usage.cached_prompt_tokens,
            cost_usd=cost,
            priced=priced,
            price_source=""
            if cache_hit
            else price_source(  # a replay never imports litellm
                self.config.model,
                input_cost_per_token=self.config.input_cost_per_token,
                output_cost_per_token=self.config.output_cost_per_token,
            ).value,
            latency_s=time.monotonic() - started,
            cache_hit=cache_hit,
            request_key=key,
            timestamp=datetime.now(UTC).isoformat(timespec="milliseconds"),
            error=error,
            attempts=attempts,
            meta={k: v for k, v in meta.items() if k != _SYSTEM_ROLE},
            system_role=meta.get(_SYSTEM_ROLE),
        )
        self.ledger.record(row)
        return row
