"""Triton: ``@triton.jit`` functions launched from Python."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import jit_kernel_names


def _detect(source: str) -> bool:
    return "triton.jit" in source or ("@jit" in source and "triton" in source)


class _Pointer:
    """What Triton sees of a tensor argument while compiling ahead: its dtype, and an address with the alignment the
    tensor will have on the GPU (allocations are at least 256-byte aligned there, so only the view's offset counts).
    Triton specialises a pointer argument on exactly these two facts."""

    def __init__(self, tensor: Any) -> None:
        self.dtype = tensor.dtype
        self._address = tensor.storage_offset() * tensor.element_size()

    def data_ptr(self) -> int:
        return self._address


class _TargetDriver:
    """Triton's driver, as far as compiling needs it: the target GPU without asking one (none may be visible)."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def is_active(self) -> bool:
        return True

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self) -> Any:
        return self.target


@contextlib.contextmanager
def _compile_only(target: list[Any]) -> Iterator[list[str]]:
    """Inside it, every ``kernel[grid](...)`` (and every autotuned one, for each of its configs) compiles for
    ``target`` into ``TRITON_CACHE_DIR`` and launches nothing; yields the names of the kernels compiled. The same
    arguments at run time on that GPU then find them in the cache (Triton's key: source, specialisation, options,
    target)."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.driver import driver
    from triton.runtime.jit import JITFunction

    built: list[str] = []
    run, tune = JITFunction.run, Autotuner.run

    def pointer(value: Any) -> Any:
        return _Pointer(value) if isinstance(value, torch.Tensor) else value

    def compile_only(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        kernel = run(self, *map(pointer, args), grid=grid, warmup=True, **{k: pointer(v) for k, v in kwargs.items()})
        if kernel is not None:
            built.append(str(getattr(self, "__name__", "kernel")))
        return kernel

    def tune_only(self: Any, *args: Any, **kwargs: Any) -> None:  # every config, none timed
        kwargs.pop("warmup", None)
        self.nargs = dict(zip(self.arg_names, args))
        try:
            for config in self.prune_configs(kwargs):
                self.fn.run(*args, **kwargs, **config.all_kwargs(), warmup=True)
        finally:
            self.nargs = None

    if not hasattr(driver, "_active"):  # Triton before 3.4 kept its driver differently
        raise RuntimeError(f"Triton {getattr(triton, '__version__', '?')} cannot be compiled ahead (3.4 or later can)")
    before = driver._active  # None until a driver was asked for (none may exist here)
    driver.set_active(_TargetDriver(GPUTarget(*target)))
    JITFunction.run, Autotuner.run = compile_only, tune_only  # type: ignore[method-assign]
    try:
        yield built
    finally:
        JITFunction.run, Autotuner.run = run, tune  # type: ignore[method-assign]
        driver._active = before


LANGUAGE = KernelLanguage(
    name="triton",
    summary="Triton kernels (@triton.jit) launched from Python",
    detect=_detect,
    kernel_names=jit_kernel_names,
    decorators=("jit", "autotune", "heuristics"),
    title="Triton",
    prompt_rule="Write the kernels in Triton (`import triton`, `import triton.language as tl`, `@triton.jit`) "
    "and launch them from `forward`.",
    prompt_choice="Triton (`@triton.jit`) launched from `forward`",
    follow_up="with its Triton kernels",
    example="elementwise_add_triton",
    prebuild=_compile_only,
    jit_cache="triton",
    jit_cache_env="TRITON_CACHE_DIR",
    interpret_env="TRITON_INTERPRET",
    trusted_stubs=True,
    jit_keep=(".cubin", ".ptx", ".ttir", ".ttgir", ".llir", ".json", ".so", ".hsaco", ".amdgcn", ".source"),
)
