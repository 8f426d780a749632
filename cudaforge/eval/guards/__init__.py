"""Integrity guards: verdicts that survive an adversary (docs/guards.md, "Integrity guards").

* :mod:`~cudaforge.eval.guards.catalog`: every guard, each defined once (name, where it runs, default policy, check,
  corpus expectation), and the entry-point group ``cudaforge.guards`` through which a package adds one (no torch);
* :mod:`~cudaforge.eval.guards.policy`: the guards' config policies and the findings they leave (no torch);
* :mod:`~cudaforge.eval.guards.source`: static guards on the candidate's AST (no torch), one module per part:
  ``vocab`` and ``strict_vocab`` (the names each guard knows), ``names`` (names as the guards read them) and
  ``module`` (the candidate's module, its names resolved), ``imports``, ``candidate`` (what the checks are given)
  and ``effects`` (the side-effect walk), ``checks`` (one check per static guard), ``dynamic`` (``dynamic_code``),
  ``strict``, ``strict_values`` and ``strict_calls`` (``torch_ops=strict``);
* :mod:`~cudaforge.eval.guards.runtime`: guards inside the worker (torch): poisoned free memory,
  input checksums, output types, precision, sensitivity, timed-output checks, host/event time,
  speed of light, the profiler's share of library kernels;
* :mod:`~cudaforge.eval.guards.corpus`: the hack corpus under ``benchmarks/hacks/`` (no torch).

The names below are looked up in their modules when asked for (PEP 562): the evaluation settings read the catalog,
and the policies read the settings.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cudaforge.eval.guards.catalog import REJECT, REPORT, Guard, Seen
    from cudaforge.eval.guards.policy import GUARDS, Policies, finding, rejection_message, rejections
    from cudaforge.eval.guards.source import static_findings

_FACE = {
    "GUARDS": "policy",
    "REJECT": "catalog",
    "REPORT": "catalog",
    "Guard": "catalog",
    "Seen": "catalog",
    "Policies": "policy",
    "finding": "policy",
    "rejection_message": "policy",
    "rejections": "policy",
    "static_findings": "source",
}

__all__ = [
    "GUARDS",
    "REJECT",
    "REPORT",
    "Guard",
    "Policies",
    "Seen",
    "finding",
    "rejection_message",
    "rejections",
    "static_findings",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    if name not in _FACE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_FACE[name]}"), name)
