"""Fast, cached, isolated builds of the CUDA extensions that KernelBench candidates compile.

A candidate calls ``torch.utils.cpp_extension.load_inline`` at import time and must evaluate
unchanged, so everything here happens by wrapping that call inside the evaluation worker:

* :func:`build_hooks` patches ``load_inline`` (and ``load``) for the duration of a ``with`` block.
  Each call is keyed by a hash of its sources, functions, flags, include paths, the toolchain
  (:func:`toolchain_fingerprint`) and the target architecture; the build lands in
  ``<cache_dir>/<key>`` under a module name suffixed with the key, so two candidates that both
  name their module ``my_cuda`` never collide, and a repeated candidate is a cache hit that
  imports the finished ``.so`` in milliseconds (torch's own staleness check is bypassed). An
  ``fcntl`` lock per key makes concurrent builds of one key from several processes safe, and a
  killed build leaves no stale lock behind (torch's ``FileBaton`` does).
* What cuts a cold build (the time goes to parsing torch's headers, three times in nvcc and once more in g++ for
  the binding file): light headers in the CUDA source (tier ``min``: ``<ATen/core/Tensor.h>``, ``ATen/Dispatch.h``
  and the wrappers of the ATen operators the source calls instead of ``torch/extension.h``; tier ``types``:
  ``torch/types.h``; a tier that fails falls back to the next and finally to the untouched source); a precompiled
  header (GCC ``.gch``) of ``torch/extension.h`` for ``main.cpp``, once per host-flag set into ``<cache_dir>/pch``
  (:func:`warm_pch`); failures that no torch header can cause reported without the untouched build;
  ``fallback=race`` (the untouched build beside the light one from the start); only the target architecture
  built. What each one saved, measured with ``benchmarks/compile_bench.py``, and what was tried and not kept:
  docs/results/evaluator.md, "Cold builds of ``load_inline``".
* The whole compiler output is captured, also on success (warnings), and
  :func:`trim_compiler_log` cuts it down to the first errors with their source lines for the
  Judge. Sources are compiled with ``#line`` markers, so errors point at lines of the
  candidate's own ``cuda_sources`` / ``cpp_sources`` strings.
* Without CUDA in torch (a CPU wheel, as on CI), torch's load_inline cannot even start on CUDA
  sources (``CUDA_HOME`` is never looked up; the wheel has no libtorch_cuda/libc10_cuda to link
  and lacks the generated ``c10/cuda/impl/cuda_cmake_macros.h``). The hooks still compile every
  source to objects with nvcc and g++, with a stand-in for that one generated header and the
  headers of pip's CUDA library wheels (``nvidia/cu13/include``) when installed; they skip the
  link and import and raise :class:`ModuleNotLoadable` (status ``compiled_only``). A build that
  fails only because the toolkit lacks a library header (``cusparse.h``, which
  ``ATen/cuda/CUDAContext.h`` includes; nvcc alone does not ship it) raises
  :class:`ToolchainIncomplete` (status ``toolchain_error``): it says nothing about the candidate.
* :func:`precompile` runs all of this in a separate CPU-only process (``CUDA_VISIBLE_DEVICES=""``)
  under a hard timeout, so compiles overlap GPU work; the GPU worker later imports the same
  source under the same settings and hits the cache.

The package imports torch lazily: :func:`precompile`, :func:`scrubbed_env` and
:func:`trim_compiler_log` work in a parent process that never imports torch or candidate code.

One module per job: ``settings`` (BuildSettings), ``toolchain`` (nvcc, the host compiler, the architecture flags:
NVIDIA's facts, from ``cudaforge.vendors``), ``headers`` (light headers), ``logs`` (log trimming and what a
failed log says), ``records`` (BuildRecord, the errors, the recorder), ``spec`` (BuildSpec and its cache key),
``artefacts`` (a build folder's files, read and written never through a link; a cache entry's lock), ``builder``
(one build through the cache, the precompiled header, eviction), ``intercept`` (the ``load_inline``/``load`` hooks),
``service`` (the trusted side's build service: a worker's request checked, built and delivered), ``deferred`` (calls in ``__init__``/``forward`` built ahead, at load) and ``precompile`` (builds ahead of the GPU evaluation, in a CPU-only child).
"""

from __future__ import annotations

from cudaforge.eval.extensions.builder import Builder
from cudaforge.eval.extensions.headers import light_cuda_source
from cudaforge.eval.extensions.intercept import Hooks, keyed
from cudaforge.eval.extensions.loading import (
    CANDIDATE_MODULE_PREFIX,
    CandidateLoader,
    candidate_module_name,
    delivered_builds,
)
from cudaforge.eval.extensions.logs import missing_toolkit_header, trim_compiler_log
from cudaforge.eval.extensions.patch import build_hooks
from cudaforge.eval.extensions.precompile import BuildOutcome, precompile
from cudaforge.eval.extensions.records import (
    BuildError,
    BuildRecord,
    BuildRecorder,
    ModuleNotLoadable,
    ToolchainIncomplete,
)
from cudaforge.eval.extensions.service import serve_build, spec_from_inputs, warm_pch
from cudaforge.eval.extensions.settings import RECIPE_VERSION, BuildSettings, FallbackMode
from cudaforge.eval.extensions.spec import cache_key, module_name_of
from cudaforge.eval.extensions.toolchain import toolchain_fingerprint
from cudaforge.proc.isolation import scrubbed_env

__all__ = [
    "CANDIDATE_MODULE_PREFIX",
    "CandidateLoader",
    "candidate_module_name",
    "delivered_builds",
    "RECIPE_VERSION",
    "BuildError",
    "BuildOutcome",
    "BuildRecord",
    "BuildRecorder",
    "BuildSettings",
    "FallbackMode",
    "ModuleNotLoadable",
    "ToolchainIncomplete",
    "Builder",
    "Hooks",
    "build_hooks",
    "cache_key",
    "keyed",
    "light_cuda_source",
    "missing_toolkit_header",
    "module_name_of",
    "precompile",
    "scrubbed_env",
    "serve_build",
    "spec_from_inputs",
    "toolchain_fingerprint",
    "trim_compiler_log",
    "warm_pch",
]
