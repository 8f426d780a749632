"""Dollar cost of a call: custom prices from the config, else litellm's price map, else cudaforge's override file.

Where a call's price comes from (``price_source``), first match wins:

1. ``config``: the role's ``input_cost_per_token`` / ``output_cost_per_token``;
2. ``litellm``: litellm's price map (``litellm.model_cost``; with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` the copy
   bundled with the installed litellm), prompt-cache and reasoning-token rates included;
3. ``override``: ``cudaforge/resources/prices/overrides.yaml``, dated and sourced prices for models the map does
   not list (Claude Sonnet 4 under its Anthropic id, which litellm 1.110 dropped);
4. ``none``: the model is *unpriced*: its cost is None, never $0. (litellm itself falls back to $0 for some
   unlisted models, so the map is checked here first.)

litellm is imported only when the map is needed; the override file is read once.
"""

from __future__ import annotations

import datetime
import enum
import functools
from pathlib import Path
from typing import Any, cast

from cudaforge.llm.ledger import Usage

OVERRIDES_FILE = Path(__file__).resolve().parent.parent / "resources" / "prices" / "overrides.yaml"
"""The shipped override prices (package data)."""

LONG_CONTEXT_TOKENS = 200_000
"""A prompt over this many tokens is priced at an entry's ``*_above_200k_tokens`` prices, where it has them."""

_REQUIRED = ("input_cost_per_token", "output_cost_per_token", "source", "as_of")


class PriceSource(str, enum.Enum):
    """Which table priced a call."""

    config = "config"  # the role's input_cost_per_token / output_cost_per_token
    litellm = "litellm"  # litellm's price map
    override = "override"  # cudaforge/resources/prices/overrides.yaml
    none = "none"  # nothing prices the model: unpriced


def _lookup(table: dict[str, dict[str, Any]], model: str) -> dict[str, Any] | None:
    """A table's entry for a model name: the name itself, else its bare id when the entry's provider matches."""
    entry = table.get(model)
    if entry is None and "/" in model:
        provider, bare = model.split("/", 1)
        candidate = table.get(bare)
        if candidate is not None and candidate.get("litellm_provider") == provider:
            entry = candidate
    return entry


def _map_entry(model: str) -> dict[str, Any] | None:
    """litellm's map entry for a model name (``provider/name`` or the bare name), or None."""
    import litellm

    return _lookup(litellm.model_cost, model)


def _price_entry(model: str) -> dict[str, Any] | None:
    """litellm's price-map entry for a model name, or None when the map does not list it with prices."""
    entry = _map_entry(model)
    if entry is None or entry.get("input_cost_per_token") is None or entry.get("output_cost_per_token") is None:
        return None
    return entry


@functools.cache
def load_overrides(path: str | Path = OVERRIDES_FILE) -> dict[str, dict[str, Any]]:
    """The override prices of a file (default: the shipped one), by model name; read once per path.

    Raises ValueError naming the entry when one lacks a price, its ``source`` or its ``as_of`` date.
    """
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    models = data.get("models") or {}
    for name, entry in models.items():
        missing = [key for key in _REQUIRED if entry.get(key) in (None, "")]
        if missing:
            raise ValueError(f"{path}: price of {name!r} has no {', '.join(missing)}")
        for key, value in entry.items():
            if "cost" in key and not (isinstance(value, (int, float)) and value >= 0):
                raise ValueError(f"{path}: price of {name!r}: {key} = {value!r} is not a dollar amount per token")
        as_of = entry["as_of"]
        if not isinstance(as_of, datetime.date):
            try:
                datetime.date.fromisoformat(str(as_of))
            except ValueError:
                raise ValueError(f"{path}: price of {name!r}: as_of {as_of!r} is not a date (YYYY-MM-DD)") from None
    return models


def override_entry(model: str) -> dict[str, Any] | None:
    """The override file's entry for a model name, or None."""
    return _lookup(load_overrides(), model)


def price_source(
    model: str, *, input_cost_per_token: float | None = None, output_cost_per_token: float | None = None
) -> PriceSource:
    """Which table prices calls to ``model`` with these custom prices (see the module's docstring)."""
    if input_cost_per_token is not None or output_cost_per_token is not None:
        return PriceSource.config
    if _price_entry(model) is not None:
        return PriceSource.litellm
    if override_entry(model) is not None:
        return PriceSource.override
    return PriceSource.none


def is_priced(model: str) -> bool:
    """True when litellm's price map or the override file lists the model with per-token prices."""
    return _price_entry(model) is not None or override_entry(model) is not None


def _tier_price(entry: dict[str, Any], key: str, long_context: bool) -> float | None:
    """``entry[key]``, or its ``_above_200k_tokens`` price for a long prompt when the entry has one."""
    if long_context and entry.get(f"{key}_above_200k_tokens") is not None:
        above: float | None = entry[f"{key}_above_200k_tokens"]
        return above
    price: float | None = entry.get(key)
    return price


def _override_cost(entry: dict[str, Any], usage: Usage) -> float:
    """A call's dollars at an override entry's prices: cached prompt tokens at the cache price when it has one."""
    long_context = usage.prompt_tokens > LONG_CONTEXT_TOKENS
    cache_price = _tier_price(entry, "cache_read_input_token_cost", long_context)
    cached = min(usage.cached_prompt_tokens or 0, usage.prompt_tokens) if cache_price is not None else 0
    # both prices are there: load_overrides refuses an entry without them
    input_price = cast(float, _tier_price(entry, "input_cost_per_token", long_context))
    cost = (usage.prompt_tokens - cached) * input_price
    cost += cached * (cache_price or 0.0)
    return cost + usage.completion_tokens * cast(float, _tier_price(entry, "output_cost_per_token", long_context))


def cost_for(
    model: str,
    usage: Usage,
    *,
    input_cost_per_token: float | None = None,
    output_cost_per_token: float | None = None,
) -> tuple[float | None, bool]:
    """``(cost_usd, priced)`` of a call's usage.

    Custom prices win: when either is given, cost = prompt tokens x input price +
    completion tokens x output price (an unset price counts as 0; prompt-cache
    discounts are not applied). Otherwise litellm's map prices the call, prompt-cache
    and reasoning-token rates included; else the override file does (cached prompt tokens
    at its cache price, the long-context tier over 200K prompt tokens); a model neither
    lists gives ``(None, False)``.
    """
    if input_cost_per_token is not None or output_cost_per_token is not None:
        cost = usage.prompt_tokens * (input_cost_per_token or 0.0)
        cost += usage.completion_tokens * (output_cost_per_token or 0.0)
        return cost, True
    if _price_entry(model) is None:
        override = override_entry(model)
        return (_override_cost(override, usage), True) if override is not None else (None, False)
    import litellm

    details: dict[str, Any] = {}
    if usage.reasoning_tokens is not None:
        details["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    if usage.cached_prompt_tokens is not None:
        details["prompt_tokens_details"] = {"cached_tokens": usage.cached_prompt_tokens}
    litellm_usage = litellm.Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.prompt_tokens + usage.completion_tokens,
        **details,
    )
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(model=model, usage_object=litellm_usage)
    except Exception:  # litellm lists the model but cannot price this usage: say so, not $0
        return None, False
    return prompt_cost + completion_cost, True


def max_call_cost(
    model: str,
    *,
    max_tokens: int | None = None,
    input_cost_per_token: float | None = None,
    output_cost_per_token: float | None = None,
    max_input_tokens: int | None = None,
) -> float | None:
    """An upper bound on one call's dollars, or None when nothing bounds it.

    ``max_input_tokens``: the model's window where litellm's map has none (a model served by the user).

    The bound is a prompt filling the model's input window plus a reply at its cap
    (``max_tokens`` if set, else the model's output limit), at list price (the long-context
    tier when the window is over 200K tokens); prompt-cache discounts are ignored. Prices and
    limits come from litellm's map, else the override file; custom prices use their token
    limits. A model priced at 0 for both costs 0. Unpriced models with no custom price give None.
    """
    if input_cost_per_token == 0 and output_cost_per_token == 0:
        return 0.0
    custom = input_cost_per_token is not None or output_cost_per_token is not None
    entry: dict[str, Any] | None
    if custom:
        entry = _map_entry(model) or override_entry(model) or {}
    else:
        entry = _price_entry(model) or override_entry(model)
    if entry is None:
        return None
    input_cap = entry.get("max_input_tokens") or entry.get("max_tokens") or max_input_tokens
    output_cap = max_tokens or entry.get("max_output_tokens") or entry.get("max_tokens")
    if not input_cap or not output_cap:
        return None
    long_context = input_cap > LONG_CONTEXT_TOKENS
    input_price = input_cost_per_token if custom else _tier_price(entry, "input_cost_per_token", long_context)
    output_price = output_cost_per_token if custom else _tier_price(entry, "output_cost_per_token", long_context)
    return input_cap * (input_price or 0.0) + output_cap * (output_price or 0.0)
