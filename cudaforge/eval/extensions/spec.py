"""What an extension build is (:class:`BuildSpec`) and its key in the build cache (:func:`cache_key`: its inputs, the
toolchain, the architecture and the recipe), with the module name a key's library is made under."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from cudaforge.eval.extensions.flags import pch_worthy
from cudaforge.eval.extensions.settings import RECIPE_VERSION, BuildSettings
from cudaforge.eval.extensions.toolchain import pip_cuda_includes, toolchain_fingerprint


def cache_key(inputs: dict[str, Any], settings: BuildSettings) -> str:
    """Hash of a build's inputs, the toolchain, the architecture and the recipe (48 hex digits)."""
    payload = {
        "inputs": inputs,
        "toolchain": toolchain_fingerprint(),
        "cpu_only_includes": pip_cuda_includes() if toolchain_fingerprint()["torch_cuda"] == "None" else [],
        "arch": settings.arch,
        "recipe": {
            "version": RECIPE_VERSION,
            "light_headers": settings.light_headers,
            "use_pch": settings.use_pch,
            "extra_cflags": settings.extra_cflags,
            "extra_cuda_cflags": settings.extra_cuda_cflags,
        },
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:48]


@dataclass
class BuildSpec:
    """One extension to build: its files (name -> text) and torch's build arguments."""

    name: str
    files: dict[str, str]
    """File name -> text of the plain build (only ``.cpp``/``.cu``... files are compiled)."""
    variants: list[tuple[str, dict[str, str]]]
    """``(variant, files)`` in the order to try: ``light:<tier>`` ones, then ``plain``."""
    extra_cflags: list[str]
    extra_cuda_cflags: list[str]
    extra_ldflags: list[str]
    extra_include_paths: list[str]
    with_cuda: bool
    is_python_module: bool


def wants_pch(spec: BuildSpec) -> bool:
    """Whether a build may use (and make) a precompiled header: only for the common host-flag sets and without
    include folders of the candidate's (a scratch path is new every evaluation): a header per macro set or folder
    would grow the cache by half a gigabyte each time."""
    return pch_worthy(list(spec.extra_cflags)) and not spec.extra_include_paths


def module_name_of(key: str) -> str:
    """The module name a build's library is made under: from its cache key alone, so the library is the same
    whatever name the request gave (a name could otherwise break the import of everyone who hits the cache)."""
    return f"ext_{key[:24]}"


def as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
