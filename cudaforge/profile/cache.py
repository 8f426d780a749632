"""Profile results cached by candidate source, task, GPU model and metric settings.

A key is a hash of everything that changes what ncu reports: the candidate's and the task's
source hashes, the GPU's model name, the metric set and list, clock control, which kernels are
kept and the launch cap. Only ``ok`` results are stored (a fallback may succeed next time). One
JSON file per key under ``<cache_dir>/<key[:2]>/<key>.json``, written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from cudaforge.profile.records import ProfileResult

CACHE_VERSION = 1
"""Bumped when the result format or the way results are made changes."""

DEFAULT_CACHE_DIR = "~/.cache/cudaforge/profile"


def cache_key(candidate_hash: str, task_hash: str, gpu_model: str, settings: dict[str, Any]) -> str:
    """The key of one profile: sha256 over the sources' hashes, the GPU model and ``settings``
    (the output-shaping settings, see ``ProfileSettings.cache_fields``), 24 hex digits."""
    material = {"v": CACHE_VERSION, "candidate": candidate_hash, "task": task_hash, "gpu": gpu_model,
                "settings": settings}  # fmt: skip
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:24]


class ProfileCache:
    """A directory of cached ``ProfileResult`` JSON files."""

    def __init__(self, root: str | Path | None = None) -> None:
        """``root``: the cache directory (default ``$CUDAFORGE_PROFILE_CACHE`` or ~/.cache/cudaforge/profile)."""
        self.root = Path(root or os.environ.get("CUDAFORGE_PROFILE_CACHE") or DEFAULT_CACHE_DIR).expanduser()

    def path(self, key: str) -> Path:
        """Where the result of ``key`` is stored."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> ProfileResult | None:
        """The cached result of ``key``, or None (also for an unreadable file)."""
        path = self.path(key)
        try:
            return ProfileResult.from_json(path.read_text())
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def put(self, key: str, result: ProfileResult) -> None:
        """Store ``result`` under ``key``, atomically."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(result.to_json())
        os.replace(tmp, path)
