"""The one way a candidate is imported, in the sandboxed worker and in the profiler's child alike: its source as a
module, every ``load_inline``/``load`` in it through the build hooks (``build_hooks``)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from cudaforge.eval.extensions.intercept import Hooks, keyed
from cudaforge.eval.extensions.patch import build_hooks
from cudaforge.eval.extensions.records import BuildRecorder
from cudaforge.eval.extensions.service import spec_from_inputs
from cudaforge.eval.extensions.settings import BuildSettings
from cudaforge.eval.extensions.spec import cache_key
from cudaforge.types import source_hash

CANDIDATE_MODULE_PREFIX = "cudaforge_candidate_"
"""A candidate's module is named this plus its source's hash (``candidate_module_name``)."""

Remote = Callable[[dict[str, Any]], dict[str, Any]]
"""A build service: a ``load_inline`` call's inputs in, the trusted side's reply out (``service.serve_build``)."""


def candidate_module_name(source: str) -> str:
    """The module name a candidate is imported under."""
    return CANDIDATE_MODULE_PREFIX + source_hash(source)


class CandidateLoader:
    """Imports one candidate under the build hooks. ``load`` enters them and leaves them entered, so a build the
    candidate leaves to run time (``load_inline`` in ``forward``) goes through them too; ``close`` leaves them
    (the profiler's child, once its candidate is imported); the worker never does, it ends with its candidate.
    ``recorder`` holds every build made, also when the import raised."""

    def __init__(self, settings: BuildSettings, remote: Remote | None = None) -> None:
        self.hooks: Any = build_hooks(settings, remote=remote)
        self.recorder: BuildRecorder | None = None

    def load(self, source: str, module_name: str | None = None) -> ModuleType:
        """``source`` imported as a module (``candidate_module_name`` unless named); whatever it raises, raised."""
        from cudaforge.tasks.runtime import load_module

        if self.recorder is not None:
            raise RuntimeError("a loader imports one candidate")
        self.recorder = self.hooks.__enter__()
        return load_module(source, module_name or candidate_module_name(source))

    def close(self) -> None:
        """Leave the build hooks (``load_inline`` is torch's own again)."""
        if self.recorder is not None:
            self.hooks.__exit__(None, None, None)


def delivered_builds(settings: BuildSettings, delivered: dict[str, list[str]]) -> Remote:
    """A build service that builds nothing: each ``load_inline`` gets the library the trusted side built before (the
    profiler's sandboxed child), found by its build key in ``delivered`` (key -> [path, module name])."""

    def serve(inputs: dict[str, Any]) -> dict[str, Any]:
        _spec, canonical = spec_from_inputs(Hooks(settings, BuildRecorder()), inputs)
        key = cache_key(keyed(canonical), settings)
        if key not in delivered:
            return {
                "status": "failed",
                "key": key,
                "error": "this extension was not built by the trusted side before profiling (the profiler builds a "
                "candidate first; a build whose sources or flags differ per process cannot be profiled in the "
                "sandbox)",
            }
        path, module = delivered[key]
        return {"status": "built", "cached": True, "path": path, "key": key, "module_name": module}

    return serve
