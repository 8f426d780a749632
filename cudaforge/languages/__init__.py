"""The registry of kernel languages: what a "kernel" is, decided in one place.

Each language is one module (``cuda.py``, ``triton.py``, ``cupy.py``, ``cute_dsl.py``, ``tilelang.py``) defining
``LANGUAGE``, a :class:`~cudaforge.languages.base.KernelLanguage`; an installed package may add more through the
entry-point group ``cudaforge.languages`` (:mod:`cudaforge.plugins`; ``tests/fixtures/out_of_tree_language/`` is a
worked example). The static guards, the evaluator's ``backend``, the build path, the profiler and the Coder's
prompts (``strategy.backend``) ask this registry; adding a language means adding its module here, or shipping it as
a package, and its worked example (docs/architecture.md, "Kernel languages"). This package imports nothing heavy (no torch, no Hydra), so
``eval`` and ``profile`` both use it without importing each other.
"""

from __future__ import annotations

import importlib.util
import pkgutil

from cudaforge import plugins
from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import LIBRARY_KERNEL, NEVER_OWN, is_copy_or_fill, kernel_base_name
from cudaforge.registry import Registry

BUILT_IN = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in ("base", "names")))
"""The languages of this package: every module of it but ``base`` and ``names``, in name order."""


def _named(name: str, language: KernelLanguage) -> str | None:
    return None if language.name == name else f"not a KernelLanguage called {name!r}"


NO_KERNEL = "torch"
"""The ``backend`` of a source no language claims (PyTorch ops only)."""

OTHER_DECORATORS: tuple[str, ...] = ()
"""Kernel decorators of technologies we do not evaluate but must still recognise as kernels in the guards
(none beyond the languages' own: ``numba.cuda.jit`` is ``jit``)."""

OTHER_BUILDERS = ("_create_jit_fn", "SourceModule", "DynamicSourceModule")
"""Calls of such technologies that build kernels from source (PyCUDA's ``SourceModule`` ...)."""

REGISTRY: Registry[KernelLanguage] = Registry(
    "kernel language",
    plugins.LANGUAGES,
    KernelLanguage,
    built_in={name: f"cudaforge.languages.{name}:LANGUAGE" for name in BUILT_IN},
    check=_named,
    reserved=(NO_KERNEL, "any"),
)
"""The registered languages: the built-in ones, then those installed packages add, each part in name order, which
is also the order a source is tested against them (the first that matches names it). A package's language named
like a built-in one (or ``torch``, ``any``) is left out, with a warning (:class:`~cudaforge.registry.Registry`)."""


def languages() -> list[KernelLanguage]:
    """Every registered language, in detection order (a package's language that fails to load is left out, with a
    warning: one broken package must not stop every evaluation)."""
    return REGISTRY.loaded()


def names() -> list[str]:
    """The registered languages' names."""
    return REGISTRY.names()


def get(name: str) -> KernelLanguage:
    """The language called ``name`` (ValueError naming the known ones otherwise)."""
    return REGISTRY.get(name)


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


def coder_languages() -> list[KernelLanguage]:
    """The languages the Coder can be asked for (``strategy.backend``): those with a prompt rule."""
    return [lang for lang in languages() if lang.prompt_rule]


def choice_languages() -> list[KernelLanguage]:
    """The languages offered together when the Coder may choose (``strategy.backend=any``)."""
    return [lang for lang in languages() if lang.prompt_choice and not lang.modules]


def missing_modules(name: str) -> list[str]:
    """The Python modules language ``name`` needs that this interpreter cannot import (empty: all there)."""
    return [m for m in get(name).modules if importlib.util.find_spec(m) is None]


def missing_message(name: str) -> str:
    """Why candidates in language ``name`` cannot run here, with how to install what is missing ("": they can)."""
    missing = missing_modules(name)
    if not missing:
        return ""
    language = get(name)
    return (
        f"{language.title or name} kernels need the Python module{'s' if len(missing) > 1 else ''} "
        f"{', '.join(missing)}, which this interpreter cannot import: {language.install or 'install it'}"
    )


def is_own_kernel(name: str, own_names: set[str]) -> bool:
    """True when the reported kernel ``name`` is one the candidate defines.

    Each language says how a name its source defines looks once compiled (``profiled_match``). With no known
    own names (the source hides them, e.g. kernels built from files), every kernel but torch's and its
    libraries' known ones counts as the candidate's own, so nothing of the candidate's is dropped silently. A kernel
    in torch's or a library's namespace or family (``NEVER_OWN``) is never the candidate's, even when it defines
    one of the same name.
    """
    if NEVER_OWN.search(name.strip()):  # torch's or a library's, whatever the candidate calls its kernels
        return False
    if not own_names:
        return not LIBRARY_KERNEL.search(name)
    base = kernel_base_name(name)
    if base in own_names:
        return True
    if len(own_names) > OWN_NAMES_MAX:  # a source naming thousands of kernels (in a comment) only confuses itself
        own_names = set(sorted(own_names)[:OWN_NAMES_MAX])
    return any(lang.profiled_match(base, own) for lang in languages() for own in own_names)


OWN_NAMES_MAX = 1024
"""Kernel names of one candidate matched against each profiled kernel (a real one defines a few)."""


def jit_caches(source: str | None = None) -> list[KernelLanguage]:
    """The languages with an on-disk JIT cache that a worker keeps in its scratch directory (``jit_cache``); with
    ``source``, those it is written in (each language's ``detect``: a source may use two)."""
    return [lang for lang in languages() if lang.jit_cache and (source is None or lang.detect(source))]


def jit_cache_env(scratch: str) -> dict[str, str]:
    """A worker's environment for those caches: each language's variable naming its folder of ``scratch``."""
    return {lang.jit_cache_env: f"{scratch}/{lang.jit_cache}" for lang in jit_caches() if lang.jit_cache_env}


def interpreted_env() -> dict[str, str]:
    """The environment that runs every language's kernels in its interpreter (a CPU evaluation)."""
    return {lang.interpret_env: "1" for lang in languages() if lang.interpret_env}


def compiled_env() -> dict[str, str]:
    """The environment that compiles every language's kernels for the GPU (a build ahead on a CPU machine)."""
    return {lang.interpret_env: "0" for lang in languages() if lang.interpret_env}


def trusted_stub_caches() -> list[KernelLanguage]:
    """The languages whose verifier-side JIT cache seeds each worker's (``KernelLanguage.trusted_stubs``)."""
    return [lang for lang in jit_caches() if lang.trusted_stubs and lang.jit_cache_env]


def describe() -> str:
    """The registered languages in words, for messages (``CUDA C++ built with ... , Triton ...``)."""
    return "; ".join(f"{lang.name}: {lang.summary}" for lang in languages())


__all__ = [
    "BUILT_IN",
    "KernelLanguage",
    "NO_KERNEL",
    "REGISTRY",
    "choice_languages",
    "coder_languages",
    "compiled_env",
    "describe",
    "detect",
    "get",
    "interpreted_env",
    "is_copy_or_fill",
    "is_own_kernel",
    "jit_cache_env",
    "jit_caches",
    "kernel_base_name",
    "kernel_builders",
    "kernel_decorators",
    "kernel_names",
    "languages",
    "missing_message",
    "missing_modules",
    "names",
    "trusted_stub_caches",
]
