"""Parameters away from their initial values (issue 52): constant tensors get seeded values as a model is built.

A reference whose scale is built as ones, whose bias is zeros, or whose norm starts at the identity accepts a kernel
that ignores them. Varying them after construction would break a candidate that folds weights at construction (a
convolution's weight pre-scaled in ``__init__``), so the values are given while the model is built, the moment each
tensor becomes part of a module, identically on both sides:

* a parameter or buffer registered by a class of the task's or the candidate's own (``self.scale =
  nn.Parameter(torch.ones(n))``) is varied as it is registered, before any later line of ``__init__`` reads it;
* a module of ``torch.nn`` fills its constants after registering them (``reset_parameters``), so its direct
  parameters and buffers are varied when the finished module is attached to its parent (``self.norm =
  nn.LayerNorm(n)``), again before the parent's next line.

Only floating tensors whose every element holds one value are varied. Each gets values drawn from a generator of
its own, seeded by the evaluation's seed and a key: the attribute it is attached under (for a ``torch.nn`` module),
its name, shape, dtype and constant, and how many tensors with that key came before. The draw is made on the CPU in
float64 and then cast, so the same key gives the same values on any device, whatever else consumed torch's global
generator. A name that reads like a variance or a standard deviation keeps its sign (positive); others may take
either sign. :class:`Variation` records the keys it varied. The candidate's model is built with the reference's keys
only (a constant of its own, a buffer of ones its kernel reads, is left as it is), and the verifier keeps the
variation only when the candidate's varied keys cover the reference's (otherwise both are built as they are, and a
finding says so).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

POSITIVE = re.compile(r"var|std|eps|sigma|scale_pos", re.I)
"""Names whose tensors must stay positive (a variance, a standard deviation, an epsilon)."""
MAX_KEYS = 4096
"""The most keys one build records (a model with more constant tensors still has them varied)."""


def constant_value(t: Any) -> float | None:
    """The one value every element of a floating, non-empty tensor holds, else None."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0 or t.is_meta:
        return None
    flat = t.detach().reshape(-1)
    first = flat[0]
    if not bool(torch.isfinite(first)) or not bool((flat == first).all()):
        return None
    return float(first)


def _torch_class(module: Any) -> bool:
    return type(module).__module__.startswith("torch.")


class Variation:
    """The global registration hooks of one model's construction, and the keys of what they varied."""

    def __init__(self, seed: int, only: set[str] | None = None) -> None:
        """``only``: vary just these keys (the reference's, when the candidate's model is built: a constant of the
        candidate's own, a buffer of ones it keeps for its kernels, stays as it is)."""
        self.seed = int(seed)
        self.only = only
        self.keys: list[str] = []
        self._seen: dict[str, int] = {}

    def _draw(self, full: str, name: str, value: float, like: torch.Tensor) -> torch.Tensor:
        if len(self.keys) < MAX_KEYS:
            self.keys.append(full)
        digest = hashlib.sha256(f"{self.seed}|{full}".encode()).digest()
        generator = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))
        u = torch.rand(like.shape, generator=generator, dtype=torch.float64)
        if POSITIVE.search(name):
            drawn = (abs(value) if value else 1.0) * (0.5 + 1.5 * u)
        elif value == 0:
            drawn = u - 0.5
        else:
            sign = torch.where(torch.rand(like.shape, generator=generator, dtype=torch.float64) < 0.5, -1.0, 1.0)
            drawn = value * sign * (0.5 + u)
        return drawn.to(dtype=like.dtype)

    def vary(self, owner: str, name: str, tensor: Any) -> bool:
        """Give ``tensor`` (a parameter or buffer called ``name``, attached under ``owner``) seeded values when it is
        constant; whether it did."""
        value = constant_value(tensor)
        if value is None:
            return False
        key = f"{owner}|{name}|{list(tensor.shape)}|{str(tensor.dtype).replace('torch.', '')}|{value:g}"
        occurrence = self._seen.get(key, 0)
        self._seen[key] = occurrence + 1
        full = f"{key}#{occurrence}"
        if self.only is not None and full not in self.only:
            return False
        drawn = self._draw(full, name, value, tensor)
        with torch.no_grad():
            tensor.copy_(drawn.to(tensor.device))
        return True

    # the hooks torch calls (``torch.nn.modules.module.register_module_*_registration_hook``)
    def on_tensor(self, module: Any, name: str, tensor: Any) -> None:
        if not _torch_class(module):
            self.vary("", name, tensor)

    def on_module(self, parent: Any, name: str, child: Any) -> None:
        if not isinstance(child, torch.nn.Module) or not _torch_class(child):
            return
        for kind in (child._parameters, child._buffers):
            for tensor_name, tensor in list(kind.items()):
                if tensor is not None:
                    self.vary(str(name), tensor_name, tensor)


@contextmanager
def varied_constants(seed: int | None, only: list[str] | None = None) -> Iterator[Variation | None]:
    """While the block builds a model, vary its constant tensors (:class:`Variation`; ``only``: just these keys);
    ``seed`` None: nothing."""
    if seed is None:
        yield None
        return
    from torch.nn.modules import module as nn_module

    variation = Variation(seed, set(only) if only is not None else None)
    handles = [
        nn_module.register_module_parameter_registration_hook(variation.on_tensor),
        nn_module.register_module_buffer_registration_hook(variation.on_tensor),
        nn_module.register_module_module_registration_hook(variation.on_module),
    ]
    try:
        yield variation
    finally:
        for handle in handles:
            handle.remove()


def covers(candidate: list[str], reference: list[str]) -> list[str]:
    """The reference's varied keys that the candidate's build did not vary too (empty: the candidate's model got
    every value the reference's did)."""
    left = list(candidate)
    missing = []
    for key in reference:
        if key in left:
            left.remove(key)
        else:
            missing.append(key)
    return missing


def describe_keys(keys: list[str], limit: int = 4) -> str:
    """A few varied keys in words (``norm.weight [64] (1)``)."""
    shown = []
    for key in keys[:limit]:
        owner, name, shape, _dtype, value = (key.split("#", 1)[0].split("|") + [""] * 5)[:5]
        shown.append(f"{owner + '.' if owner else ''}{name} {shape} (built as {value})")
    return ", ".join(shown) + (f" and {len(keys) - limit} more" if len(keys) > limit else "")
