"""Dollar cost of a call: custom prices from the config, else litellm's price map.

A model that litellm's map does not list, with no custom price, is *unpriced*: its
cost is None, never $0. (litellm itself falls back to $0 for some unlisted models, so
the map is checked here first.) litellm is imported only when the map is needed.
"""

from __future__ import annotations

from typing import Any

from cudaforge.llm.ledger import Usage


def _map_entry(model: str) -> dict[str, Any] | None:
    """litellm's map entry for a model name (``provider/name`` or the bare name), or None."""
    import litellm

    entry = litellm.model_cost.get(model)
    if entry is None and "/" in model:
        provider, bare = model.split("/", 1)
        candidate = litellm.model_cost.get(bare)
        if candidate is not None and candidate.get("litellm_provider") == provider:
            entry = candidate
    return entry


def _price_entry(model: str) -> dict[str, Any] | None:
    """litellm's price-map entry for a model name, or None when the map does not list it with prices."""
    entry = _map_entry(model)
    if entry is None or entry.get("input_cost_per_token") is None or entry.get("output_cost_per_token") is None:
        return None
    return entry


def is_priced(model: str) -> bool:
    """True when litellm's price map lists the model with per-token prices."""
    return _price_entry(model) is not None


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
    and reasoning-token rates included; a model it does not list gives ``(None, False)``.
    """
    if input_cost_per_token is not None or output_cost_per_token is not None:
        cost = usage.prompt_tokens * (input_cost_per_token or 0.0)
        cost += usage.completion_tokens * (output_cost_per_token or 0.0)
        return cost, True
    if _price_entry(model) is None:
        return None, False
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
) -> float | None:
    """An upper bound on one call's dollars, or None when nothing bounds it.

    The bound is a prompt filling the model's input window plus a reply at its cap
    (``max_tokens`` if set, else the model's output limit), at list price; prompt-cache
    discounts are ignored. Custom prices use litellm's token limits for the model; a model
    priced at 0 for both costs 0. Unlisted models with no custom price give None.
    """
    if input_cost_per_token == 0 and output_cost_per_token == 0:
        return 0.0
    custom = input_cost_per_token is not None or output_cost_per_token is not None
    entry = (_map_entry(model) or {}) if custom else _price_entry(model)
    if entry is None:
        return None
    input_cap = entry.get("max_input_tokens") or entry.get("max_tokens")
    output_cap = max_tokens or entry.get("max_output_tokens") or entry.get("max_tokens")
    if not input_cap or not output_cap:
        return None
    input_price = input_cost_per_token if custom else entry["input_cost_per_token"]
    output_price = output_cost_per_token if custom else entry["output_cost_per_token"]
    return input_cap * (input_price or 0.0) + output_cap * (output_price or 0.0)
