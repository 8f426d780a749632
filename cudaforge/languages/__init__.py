"""The registry of kernel languages: what a "kernel" is, decided in one place.

Each language is one module (``cuda.py``, ``triton.py``, ``cupy.py``) defining ``LANGUAGE``, a
:class:`~cudaforge.languages.base.KernelLanguage`. The static guards, the evaluator's ``backend``, the build
path and the profiler ask this registry; adding a language means adding its module to ``_MODULES``
(docs/architecture.md, "Kernel languages"). This package imports nothing heavy (no torch, no Hydra), so
``eval`` and ``profile`` both use it without importing each other.
"""

from __future__ import annotations

import importlib

from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import is_copy_or_fill, is_own_kernel, kernel_base_name

_MODULES = ("cuda", "triton", "cupy")
"""The registered languages, in the order a source is tested against them (the first that matches names it)."""

NO_KERNEL = "torch"
"""The ``backend`` of a source no language claims (PyTorch ops only)."""

OTHER_DECORATORS = ("kernel",)
"""Kernel decorators of technologies we do not evaluate but must still recognise as kernels in the guards
(``numba.cuda.jit`` is ``jit``, ``cute.kernel`` ``kernel``)."""

OTHER_BUILDERS = ("_create_jit_fn", "SourceModule", "DynamicSourceModule")
"""Calls of such technologies that build kernels from source (PyCUDA's ``SourceModule`` ...)."""


def languages() -> list[KernelLanguage]:
    """Every registered language, in detection order."""
    return [importlib.import_module(f"cudaforge.languages.{name}").LANGUAGE for name in _MODULES]


def names() -> list[str]:
    """The registered languages' names."""
    return list(_MODULES)


def get(name: str) -> KernelLanguage:
    """The language called ``name`` (ValueError naming the known ones otherwise)."""
    if name not in _MODULES:
        raise ValueError(f"unknown kernel language {name!r}; known: {', '.join(_MODULES)}")
    return importlib.import_module(f"cudaforge.languages.{name}").LANGUAGE


def detect(source: str) -> str:
    """The name of the language ``source`` writes its kernels in, or ``torch`` when no language claims it."""
    for language in languages():
        if language.detect(source):
            return language.name
    return NO_KERNEL


def kernel_names(source: str) -> set[str]:
    """The names of every kernel ``source`` defines, in any registered language."""
    found: set[str] = set()
    for language in languages():
        found |= language.kernel_names(source)
    return found


def kernel_decorators() -> tuple[str, ...]:
    """Last names of decorators that make a function a GPU kernel: every language's, and the other technologies'."""
    return tuple(dict.fromkeys(d for lang in languages() for d in lang.decorators)) + OTHER_DECORATORS


def kernel_builders() -> tuple[str, ...]:
    """Last names of calls that build kernels from source text: every language's, and the other technologies'."""
    return tuple(dict.fromkeys(b for lang in languages() for b in lang.builders)) + OTHER_BUILDERS


def describe() -> str:
    """The registered languages in words, for messages (``CUDA C++ built with ... , Triton ...``)."""
    return "; ".join(f"{lang.name}: {lang.summary}" for lang in languages())


__all__ = ["KernelLanguage", "NO_KERNEL", "describe", "detect", "get", "is_copy_or_fill", "is_own_kernel",
           "kernel_base_name", "kernel_builders", "kernel_decorators", "kernel_names", "languages", "names"]
