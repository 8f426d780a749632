"""The evaluator's public face: what code outside ``cudaforge.eval`` may use of it (``__all__``).

Everything else under ``cudaforge/eval/`` (the verifier, the worker channel, the guards' internals, the build path's
parts) is the evaluator's own; ``tests/test_imports.py`` fails on a module outside this package that imports one of
its submodules. The names are looked up in their modules when asked for (PEP 562), so ``import cudaforge.eval``
costs nothing and imports no torch: a command that only reads settings does not pay for the evaluator.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_FACE = {
    # the evaluator
    "Evaluator": "evaluator",
    "visible_gpus": "evaluator",
    "DEFAULT_BUILD_CACHE": "evaluator",
    "default_eval_config": "evaluator",
    # its settings
    "EvalConfig": "settings",
    "BaselineMode": "settings",
    "upgrade_saved": "settings",
    # what runs beside a loop: held-out shapes, torch.compile, stored baselines
    "check_held_out": "held_out",
    "shapes_pass": "held_out",
    "decide": "held_out",
    "time_compile_beside": "compile_beside:compile_beside",
    "time_suite": "baseline",
    # checks the parent runs without a worker
    "check_candidate": "static",
    "GUARDS": "guards.policy",
    "REJECT": "guards.policy",
    "CPU_INPUT_BYTES": "verifier",
    "cpu_scaled": "verifier",
    # bounded values from untrusted records
    "cap_text": "bounded",
    "cap_strings": "bounded",
    "finite_number": "bounded",
    # the build path, shared with the profiler
    "BuildSettings": "extensions",
    "CandidateLoader": "extensions",
    "delivered_builds": "extensions",
    "precompile": "extensions",
    "deliver": "extensions.service",
}
"""Each public name and the submodule that defines it (``module:name`` where the face names it otherwise: a name
that is also a submodule's would be shadowed by that submodule once it is imported)."""

__all__ = [
    "BaselineMode",
    "BuildSettings",
    "CPU_INPUT_BYTES",
    "CandidateLoader",
    "DEFAULT_BUILD_CACHE",
    "EvalConfig",
    "Evaluator",
    "GUARDS",
    "REJECT",
    "cap_strings",
    "cap_text",
    "check_candidate",
    "check_held_out",
    "cpu_scaled",
    "decide",
    "default_eval_config",
    "deliver",
    "delivered_builds",
    "finite_number",
    "precompile",
    "shapes_pass",
    "time_compile_beside",
    "time_suite",
    "upgrade_saved",
    "visible_gpus",
]
"""The face: ``_FACE``'s names (a test keeps the two equal)."""

if TYPE_CHECKING:
    from cudaforge.eval.baseline import time_suite
    from cudaforge.eval.bounded import cap_strings, cap_text, finite_number
    from cudaforge.eval.compile_beside import compile_beside as time_compile_beside
    from cudaforge.eval.evaluator import DEFAULT_BUILD_CACHE, Evaluator, default_eval_config, visible_gpus
    from cudaforge.eval.extensions import BuildSettings, CandidateLoader, delivered_builds, precompile
    from cudaforge.eval.extensions.service import deliver
    from cudaforge.eval.guards.policy import GUARDS, REJECT
    from cudaforge.eval.held_out import check_held_out, decide, shapes_pass
    from cudaforge.eval.settings import BaselineMode, EvalConfig, upgrade_saved
    from cudaforge.eval.static import check_candidate
    from cudaforge.eval.verifier import CPU_INPUT_BYTES, cpu_scaled


def __getattr__(name: str) -> Any:
    module = _FACE.get(name)
    if module is None:
        raise AttributeError(f"module 'cudaforge.eval' has no attribute {name!r}")
    module, _, attr = module.partition(":")
    return getattr(importlib.import_module(f"cudaforge.eval.{module}"), attr or name)  # not kept here: the defining
    # module stays the one place a name is bound (a test that patches it there is seen through the face)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
