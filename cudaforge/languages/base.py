"""What a kernel language tells the rest of cudaforge: one small interface, one module per language."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class KernelLanguage:
    """A language candidates may write their kernels in (``cudaforge/languages/<name>.py`` defines one).

    The static guards, the build path, the profiler and the evaluator's ``backend`` ask the registry
    (``cudaforge.languages``) through these fields; none of them tests for a language itself."""

    name: str
    """Its name in configs, results and records (``cuda``, ``triton`` ...)."""
    summary: str
    """One line on how a candidate uses it (shown by ``cudaforge doctor`` and in messages)."""
    detect: Callable[[str], bool]
    """Whether a candidate's source uses it (judged from the text; the source is never imported)."""
    kernel_names: Callable[[str], set[str]]
    """The names of the kernels a source defines in it, as the profiler reports them (base names)."""
    decorators: tuple[str, ...] = ()
    """Last names of decorators that make a Python function one of its kernels (``jit`` for ``@triton.jit``)."""
    builders: tuple[str, ...] = ()
    """Last names of calls that build its kernels from source text (``load_inline``, ``RawKernel`` ...)."""
    builds_extension: bool = False
    """Its kernels are built by ``torch.utils.cpp_extension`` (so through the evaluator's build path and cache,
    and, in a sandboxed profile, from the library the trusted side built)."""
