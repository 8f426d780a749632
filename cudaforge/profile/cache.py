"""Profile results cached by candidate source, task, GPU model and metric settings; task costs by task.

A key is a hash of everything that changes what ncu reports: the candidate's and the task's
source hashes, the GPU's model name, the metric set and list, clock control, which kernels are
kept and the launch cap. Only ``ok`` results are stored (a fallback may succeed next time). One
JSON file per key under ``<cache_dir>/<key[:2]>/<key>.json``, written atomically.

A task's cost (the roofline's FLOPs and bytes, ``cudaforge.tasks.cost.task_cost``) depends
on the task alone: it is stored once per task under ``<cache_dir>/task_cost/<key[:2]>/<key>.json``,
keyed by the task's source hash, the seed, where it was computed (``cpu`` or the GPU model) and
the torch and cudaforge versions (:func:`cost_key`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
from pathlib import Path
from typing import Any

import cudaforge
from cudaforge.proc.files import write_atomic
from cudaforge.profile.records import ProfileResult

CACHE_VERSION = 1
"""Bumped when the result format or the way results are made changes."""

DEFAULT_CACHE_DIR = "~/.cache/cudaforge/profile"


def cache_key(candidate_hash: str, task_hash: str, gpu_model: str, settings: dict[str, Any]) -> str:
    """The key of one profile: sha256 over the sources' hashes, the GPU model and ``settings``
    (the output-shaping settings, see ``ProfileSettings.cache_fields``), 24 hex digits."""
    material = {
        "v": CACHE_VERSION,
        "candidate": candidate_hash,
        "task": task_hash,
        "gpu": gpu_model,
        "settings": settings,
    }
    return _digest(material)


@functools.lru_cache(maxsize=1)
def torch_version() -> str:
    """The installed torch's version, read without importing torch ("" when it is not installed)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return ""


def cost_key(task_hash: str, seed: int, device: str) -> str:
    """The key of one task's cost: sha256 over the task's source hash, the seed, ``device`` (``cpu``,
    or the GPU model the cost child could see) and the torch and cudaforge versions, 24 hex digits."""
    material = {
        "v": CACHE_VERSION,
        "kind": "task_cost",
        "task": task_hash,
        "seed": seed,
        "device": device,
        "torch": torch_version(),
        "cudaforge": cudaforge.__version__,
    }
    return _digest(material)


def _digest(material: dict[str, Any]) -> str:
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
        write_atomic(self.path(key), result.to_json())

    def cost_path(self, key: str) -> Path:
        """Where the task cost of ``key`` (:func:`cost_key`) is stored."""
        return self.root / "task_cost" / key[:2] / f"{key}.json"

    def get_cost(self, key: str) -> dict[str, Any] | None:
        """The cached task cost of ``key``, or None (also for an unreadable file)."""
        try:
            cost = json.loads(self.cost_path(key).read_text())["cost"]
        except (OSError, ValueError, TypeError, KeyError):
            return None
        return cost if isinstance(cost, dict) else None

    def put_cost(self, key: str, cost: dict[str, Any], task_id: str = "") -> None:
        """Store the task cost ``cost`` under ``key``, atomically (``task_id`` is kept for a reader)."""
        write_atomic(self.cost_path(key), json.dumps({"key": key, "task_id": task_id, "cost": cost}, indent=1))
