"""What a kernel language tells the rest of cudaforge: one small interface, one module per language."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any


def same_name(profiled: str, defined: str) -> bool:
    """The default match of a profiled kernel's base name with a name the source defines: equality."""
    return profiled == defined


@dataclass(frozen=True)
class KernelLanguage:
    """A language candidates may write their kernels in (``cudaforge/languages/<name>.py`` defines one).

    The static guards, the build path, the profiler, the evaluator's ``backend`` and the Coder's prompts
    ask the registry (``cudaforge.languages``) through these fields; none of them tests for a language itself."""

    name: str
    """Its name in configs, results and records (``cuda``, ``triton`` ...)."""
    summary: str
    """One line on how a candidate uses it (shown by ``cudaforge doctor`` and in messages)."""
    detect: Callable[[str], bool]
    """Whether a candidate's source uses it (judged from the text; the source is never imported)."""
    kernel_names: Callable[[str], set[str]]
    """The names of the kernels a source defines in it, as the source spells them."""
    decorators: tuple[str, ...] = ()
    """Last names of decorators that make a Python function one of its kernels (``jit`` for ``@triton.jit``)."""
    builders: tuple[str, ...] = ()
    """Last names of calls that build its kernels from source text (``load_inline``, ``RawKernel`` ...)."""
    builds_extension: bool = False
    """Its kernels are built by ``torch.utils.cpp_extension`` (so through the evaluator's build path and cache,
    and, in a sandboxed profile, from the library the trusted side built)."""
    profiled_match: Callable[[str, str], bool] = same_name
    """Whether a profiled kernel's base name (``kernel_base_name``) is the kernel the source names ``defined``:
    CuTe DSL reports ``relu_kernel`` as ``kernel_cutlass_relu_kernel_<argument types>_0``."""
    modules: tuple[str, ...] = ()
    """Python modules a candidate in it imports that are not cudaforge's own dependencies (``cutlass``,
    ``tilelang``): ``cudaforge doctor`` and the hack corpus check them, and an evaluation without them says so."""
    install: str = ""
    """How to install ``modules`` (``pip install tilelang``), said when they are missing."""
    title: str = ""
    """Its name in prose (``CUDA``, ``CuTe DSL``): the Coder's prompts say "custom {title} kernels"."""
    prompt_rule: str = ""
    """The Coder's output-format rule on how to write and launch kernels in it; empty: the Coder cannot be asked
    for this language (``strategy.backend`` does not offer it)."""
    prompt_choice: str = ""
    """The same rule, short, as one choice among several (``strategy.backend=any``); empty: not offered there."""
    follow_up: str = ""
    """What a follow-up prompt after an unusable reply adds ("with its CUDA kernels built by `load_inline`")."""
    example: str = ""
    """The Coder's worked example: a folder under ``cudaforge/resources/agents/examples/``."""
    judge_notes: str = ""
    """What the Judge should know when reading a kernel in it (shown in its optimisation prompt; empty: nothing)."""
    prebuild: Callable[[list[Any]], AbstractContextManager[list[str]]] | None = None
    """Compile-only launches, for kernels JIT-compiled from Python at their first launch: ``prebuild(target)`` is a
    context manager inside which the language's launches compile for ``target`` (the vendor's ``jit_target``, e.g.
    ``["cuda", 90, 32]``) into the language's on-disk cache and run nothing; it yields the list it appends the
    names of the kernels built to. The evaluator runs a candidate's ``forward`` once inside it, on fake tensors of
    the task's shapes, in a copy of the sandboxed worker (``cudaforge.eval.jit_prebuild``): in the CPU pool ahead
    of the GPU evaluation (and in the compile phase with ``eval.jit_ahead=compile``). ``None``: its kernels compile
    at their first call, which the correctness phase pays (``prebuild_note`` says why)."""
    jit_cache: str = ""
    """Where it keeps what it JIT-compiles on disk, as a folder of the worker's scratch directory (``triton``); the
    worker's environment points ``jit_cache_env`` there. What a source compiled there is kept once its worker is
    dead and seeded into its next worker (``<build cache>/<jit_cache>-own/<source hash>``,
    ``cudaforge.eval.jit_cache``; ``cudaforge cache`` lists and clears it as a kind of that name). Empty: nothing
    kept."""
    jit_cache_env: str = ""
    """The environment variable naming that folder (``TRITON_CACHE_DIR``)."""
    jit_kernel_marks: tuple[str, ...] = (".cubin", ".hsaco")
    """How a compiled kernel's folder in that cache is told apart: it holds a file whose name ends so (counted for
    the record, ``fingerprint["jit_ahead"]``)."""
    jit_keep: tuple[str, ...] = ()
    """What of that cache is kept for the next evaluation of the same source: files whose names end so, each of a
    kind its content is checked against (``cudaforge.eval.jit_cache.KINDS``: an ELF object, JSON, text, a pickle)
    and at most ``JIT_FILE_MAX`` bytes; anything else a candidate leaves there is dropped."""
    interpret_env: str = ""
    """The environment variable that runs its kernels in an interpreter when ``"1"`` (on a CPU) and compiled when
    ``"0"`` (``TRITON_INTERPRET``); empty: it has none (``cudaforge.languages.interpreted_env``, ``compiled_env``)."""
    trusted_stubs: bool = False
    """The verifier keeps a JIT cache of this language of its own, written by trusted processes only (Triton's: the
    output screen), whose host-compiled launcher stubs are copied into each worker's cache so its first launch
    compiles nothing with gcc (``cudaforge.eval.jit_cache.seed_trusted_stubs``)."""
    prebuild_note: str = ""
    """Why a language without ``prebuild`` cannot be built ahead (shown in records and docs)."""
