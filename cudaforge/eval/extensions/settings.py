"""How candidate extensions are built: ``BuildSettings`` and the recipe version every cache key names."""

from __future__ import annotations

import dataclasses
import enum
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge.vendors import current

RECIPE_VERSION = 4
"""Bumped whenever the way sources are rewritten or built changes; part of every cache key."""


class FallbackMode(str, enum.Enum):
    """How the untouched (plain) build backs up a light-header build."""

    RACE = "race"
    """Start the plain build beside the light one; keep whichever succeeds first (light wins ties)."""
    SEQUENTIAL = "sequential"
    """Start the plain build only after the light one failed (less CPU, slower on failure)."""
    AUTO = "auto"
    """``race`` on machines with at least 8 cores, else ``sequential``."""


@dataclass
class BuildSettings:
    """How candidate extensions are built. Every field is plain data (JSON round-trips)."""

    cache_dir: str = ""
    """Root of the build cache; each build lives in ``<cache_dir>/<key>``. Empty means
    ``$CUDAFORGE_BUILD_CACHE`` or ``~/.cache/cudaforge/build``."""
    arch: str | None = None
    """CUDA architecture to build for, as in ``TORCH_CUDA_ARCH_LIST`` (``"9.0"``, ``"9.0a"``).
    ``None`` detects the GPU this process would use (nvidia-smi, then torch), else
    the vendor's default (``9.0`` for NVIDIA). Resolve it in the parent (:meth:`resolved`) so that a CPU-only
    precompile and the GPU worker agree on the key. Ignored for a call whose own
    ``extra_cuda_cflags`` already name an architecture."""
    light_headers: bool = True
    """Try lighter torch headers in the CUDA source first (tiers ``min`` then ``types``), falling
    back to the untouched source when the light build fails."""
    use_pch: bool = True
    """Compile the binding file ``main.cpp`` against a precompiled ``torch/extension.h`` kept in
    ``<cache_dir>/pch/``, or in ``$CUDAFORGE_PCH_DIR`` when set (GCC only; one per distinct flag
    set, built on first use; several build caches may share one header directory)."""
    fallback: FallbackMode = FallbackMode.AUTO
    """Whether the plain build races the light one or waits for it to fail."""
    max_jobs: int | None = None
    """Parallel compile jobs per ninja run (``ninja -j``); ``None`` lets ninja decide."""
    extra_cflags: list[str] = field(default_factory=list)
    """Host-compiler flags appended to every call's ``extra_cflags`` (part of the key)."""
    extra_cuda_cflags: list[str] = field(default_factory=list)
    """nvcc flags appended to every call's ``extra_cuda_cflags`` (part of the key)."""
    cache_failures: bool = True
    """Remember failed builds, so the same broken source fails again at once, with its log."""
    sandbox: str = "auto"
    """How the compiler runs on candidate sources: in a sandbox (``required``, ``auto``: as
    ``cudaforge.proc.sandbox`` says) that reads only the toolchain and writes only the build directory, so a
    candidate's ``#include "/root/.netrc"`` or ``-Wl,...`` flags reach nothing; ``off`` runs it plainly."""
    sandbox_namespaces: bool = True
    """The compiler's sandbox gets new namespaces (``eval.sandbox_namespaces``)."""
    timeout_s: float = 600.0
    """Each compiler run (a variant's ninja, a header build) is killed past this many seconds (``eval.compile_timeout_s``):
    a source that makes the compiler wait (an ``#include`` of a pipe nothing writes to) cannot hold a build's lock."""
    memory_gb: float = 16.0
    """Memory each compiler sandbox may hold (``eval.sandbox_memory_gb``; 0: no limit)."""
    allow_weak_sandbox: bool = False
    """The compiler runs even where a part of the sandbox's wall is missing (``eval.allow_weak_sandbox``)."""
    max_cache_gb: float = 0.0
    """Size limit of the cache's builds (``eval.build_cache_max_gb``; 0: none): after a new build is stored,
    the least recently used entries are removed until the rest fits (``cudaforge.caches.evict_lru``)."""

    def cache_root(self) -> Path:
        """The cache directory as an absolute path."""
        root = self.cache_dir or os.environ.get("CUDAFORGE_BUILD_CACHE") or "~/.cache/cudaforge/build"
        return Path(root).expanduser().resolve()

    def pch_root(self) -> Path:
        """Where the precompiled headers live: ``$CUDAFORGE_PCH_DIR`` or ``<cache_dir>/pch``."""
        override = os.environ.get("CUDAFORGE_PCH_DIR")
        return Path(override).expanduser().resolve() if override else self.cache_root() / "pch"

    def resolved(self) -> BuildSettings:
        """A copy with ``arch`` and ``cache_dir`` filled in (call this in the parent process)."""
        vendor = current()
        arch = self.arch or vendor.detect_arch() or vendor.default_arch
        return dataclasses.replace(self, arch=arch, cache_dir=str(self.cache_root()))

    def fallback_mode(self) -> FallbackMode:
        """``race`` or ``sequential`` (``auto`` decided by the core count)."""
        mode = FallbackMode(self.fallback)
        if mode is FallbackMode.AUTO:
            return FallbackMode.RACE if (os.cpu_count() or 1) >= 8 else FallbackMode.SEQUENTIAL
        return mode

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        data = dataclasses.asdict(self)
        data["fallback"] = FallbackMode(self.fallback).value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BuildSettings:
        """Inverse of :meth:`to_dict` (unknown keys ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        if "fallback" in kwargs:
            kwargs["fallback"] = FallbackMode(kwargs["fallback"])
        return cls(**kwargs)
