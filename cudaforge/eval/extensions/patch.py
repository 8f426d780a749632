"""The build hooks: ``torch.utils.cpp_extension.load_inline`` and ``load`` patched, for the length of a ``with``
block, to build through the cache (``intercept.Hooks``) or, in a sandboxed worker, through the trusted side's build
service."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from cudaforge.eval.extensions.intercept import Hooks
from cudaforge.eval.extensions.records import BuildRecorder
from cudaforge.eval.extensions.settings import BuildSettings
from cudaforge.eval.extensions.spec import as_list


def _inline_hook(hooks: Hooks, original_inline: Callable[..., Any]) -> Callable[..., Any]:
    """``load_inline`` through ``hooks`` (the cache, or the trusted side's build service); SYCL goes to torch."""

    @functools.wraps(original_inline)
    def load_inline(
        name: str,
        cpp_sources: Any,
        cuda_sources: Any = None,
        sycl_sources: Any = None,
        functions: Any = None,
        extra_cflags: Any = None,
        extra_cuda_cflags: Any = None,
        extra_sycl_cflags: Any = None,
        extra_ldflags: Any = None,
        extra_include_paths: Any = None,
        build_directory: str | None = None,
        verbose: bool = False,
        with_cuda: bool | None = None,
        with_sycl: bool | None = None,
        is_python_module: bool = True,
        with_pytorch_error_handling: bool = True,
        keep_intermediates: bool = True,
        use_pch: bool = False,
        no_implicit_headers: bool = False,
    ) -> Any:
        if sycl_sources or with_sycl:
            return original_inline(
                name,
                cpp_sources,
                cuda_sources=cuda_sources,
                sycl_sources=sycl_sources,
                functions=functions,
                extra_cflags=extra_cflags,
                extra_cuda_cflags=extra_cuda_cflags,
                extra_sycl_cflags=extra_sycl_cflags,
                extra_ldflags=extra_ldflags,
                extra_include_paths=extra_include_paths,
                build_directory=build_directory,
                verbose=verbose,
                with_cuda=with_cuda,
                with_sycl=with_sycl,
                is_python_module=is_python_module,
                with_pytorch_error_handling=with_pytorch_error_handling,
                keep_intermediates=keep_intermediates,
                use_pch=use_pch,
            )
        spec, inputs = hooks.inline_spec(
            name,
            cpp_sources,
            cuda_sources,
            functions,
            extra_cflags,
            extra_cuda_cflags,
            extra_ldflags,
            extra_include_paths,
            with_cuda,
            is_python_module,
            with_pytorch_error_handling,
            no_implicit_headers,
        )
        return hooks.build_and_load(spec, inputs)

    return load_inline


def _load_hook(hooks: Hooks, original_load: Callable[..., Any]) -> Callable[..., Any]:
    """``load`` (sources on disk) through ``hooks``; a standalone executable and SYCL go to torch."""

    @functools.wraps(original_load)
    def load(
        name: str,
        sources: Any,
        extra_cflags: Any = None,
        extra_cuda_cflags: Any = None,
        extra_sycl_cflags: Any = None,
        extra_ldflags: Any = None,
        extra_include_paths: Any = None,
        build_directory: str | None = None,
        verbose: bool = False,
        with_cuda: bool | None = None,
        with_sycl: bool | None = None,
        is_python_module: bool = True,
        is_standalone: bool = False,
        keep_intermediates: bool = True,
    ) -> Any:
        if is_standalone or with_sycl or any(str(s).endswith(".sycl") for s in as_list(sources)):
            return original_load(
                name,
                sources,
                extra_cflags=extra_cflags,
                extra_cuda_cflags=extra_cuda_cflags,
                extra_ldflags=extra_ldflags,
                extra_include_paths=extra_include_paths,
                build_directory=build_directory,
                verbose=verbose,
                with_cuda=with_cuda,
                is_python_module=is_python_module,
                is_standalone=is_standalone,
                keep_intermediates=keep_intermediates,
            )
        spec, inputs = hooks.file_spec(
            name,
            sources,
            extra_cflags,
            extra_cuda_cflags,
            extra_ldflags,
            extra_include_paths,
            with_cuda,
            is_python_module,
        )
        return hooks.build_and_load(spec, inputs)

    return load


@contextlib.contextmanager
def build_hooks(
    settings: BuildSettings | None = None, remote: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> Iterator[BuildRecorder]:
    """Patch ``torch.utils.cpp_extension.load_inline`` and ``load`` to build through the cache.

    Use it in the process that imports candidate code, around the import::

        with build_hooks(settings) as recorder:
            module = import_candidate(source)      # load_inline runs here, cached
        recorder.records  # cache hit?, seconds, keys, logs, measures

    A failed build raises :class:`BuildError` (a ``RuntimeError``, as torch raises); on a torch
    without CUDA, CUDA sources are compiled and :class:`ModuleNotLoadable` is raised. Calls
    that the cache cannot serve (``is_standalone``, SYCL sources) go to torch unchanged.
    With ``remote`` (in a sandboxed worker) nothing is built here: ``remote(inputs)`` asks the trusted
    side (:func:`serve_build`), which builds and hands back a library to load.
    """
    import torch.utils.cpp_extension as ce

    settings = (settings or BuildSettings()).resolved()
    recorder = BuildRecorder()
    hooks = Hooks(settings, recorder, remote)
    original_inline, original_load = ce.load_inline, ce.load

    load_inline, load = _inline_hook(hooks, original_inline), _load_hook(hooks, original_load)
    ce.load_inline, ce.load = load_inline, load
    try:
        yield recorder
    finally:
        ce.load_inline, ce.load = original_inline, original_load
