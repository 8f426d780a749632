"""What a build did (``BuildRecord``), the errors it raises, and the recorder that collects them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------- records


@dataclass
class BuildRecord:
    """One ``load_inline``/``load`` call seen by :func:`build_hooks`."""

    name: str
    """The module name the candidate asked for."""
    module_name: str
    """The name actually built (``<name>_<key prefix>``)."""
    key: str
    status: str
    """``built`` (linked and imported), ``compiled_only`` (objects compiled, torch has no CUDA to
    link/load against), ``failed`` (compile or link error, or the built module would not import),
    ``toolchain_error`` (this machine's CUDA toolkit lacks a header such as ``cusparse.h``:
    nothing is known about the candidate), or ``crashed`` (the build machinery itself broke)."""
    cached: bool
    seconds: float
    """Wall time of the call, build or cache hit, including the import."""
    variant: str = ""
    """Which build produced the result: ``light:min``, ``light:types`` or ``plain``."""
    measures: list[str] = field(default_factory=list)
    """What was applied: ``arch=9.0``, ``headers=min``, ``pch`` ..."""
    fallbacks: list[str] = field(default_factory=list)
    """What was tried and abandoned, e.g. ``headers=min failed``."""
    steps: dict[str, float] = field(default_factory=dict)
    """Seconds of each step of the build that won: ninja's targets (``main.o``, ``cuda.cuda.o``, the library) and
    ``pch`` when this build made the precompiled header."""
    log: str = ""
    """Whole output of the build (ninja, compilers), warnings included."""
    log_trimmed: str = ""
    build_dir: str = ""
    error: str = ""


class BuildError(RuntimeError):
    """A candidate's extension did not compile or link; ``record`` holds the logs."""

    def __init__(self, message: str, record: BuildRecord):
        super().__init__(message)
        self.record = record


class ToolchainIncomplete(BuildError):
    """The build failed only because this machine's CUDA toolkit lacks a library header."""


class ModuleNotLoadable(ImportError):
    """The sources compiled, but this torch has no CUDA, so the module was not linked or loaded."""

    def __init__(self, message: str, record: BuildRecord):
        super().__init__(message)
        self.record = record


class BuildRecorder:
    """Collects a :class:`BuildRecord` per build call made inside :func:`build_hooks`."""

    def __init__(self) -> None:
        self.records: list[BuildRecord] = []

    @property
    def cached(self) -> bool:
        """True when there were builds and every one was a cache hit."""
        return bool(self.records) and all(r.cached for r in self.records)

    @property
    def seconds(self) -> float:
        """Total wall time spent in build calls."""
        return sum(r.seconds for r in self.records)

    @property
    def keys(self) -> list[str]:
        """Cache keys, one per call."""
        return [r.key for r in self.records]

    @property
    def failed(self) -> bool:
        """True when any build failed to compile or link."""
        return any(r.status == "failed" for r in self.records)

    @property
    def log(self) -> str:
        """All build logs, one after the other."""
        return "\n".join(f"=== {r.name} ({r.variant or r.status})\n{r.log}" for r in self.records)

    @property
    def log_trimmed(self) -> str:
        """Trimmed logs of the failed builds (or of all builds when none failed)."""
        chosen = [r for r in self.records if r.status == "failed"] or self.records
        return "\n".join(r.log_trimmed for r in chosen if r.log_trimmed)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary."""
        return {"records": [dataclasses.asdict(r) for r in self.records]}
