"""TileLang (package ``tilelang``): ``@T.prim_func`` tile programs, built for the shapes they are called with
by a ``@tilelang.jit`` function (or ``tilelang.compile``) and called like Python functions."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import decorated_names


def _detect(source: str) -> bool:
    return "tilelang" in source and ("prim_func" in source or "tilelang.jit" in source or "T.Kernel" in source)


def _kernel_names(source: str) -> set[str]:
    return decorated_names(source, ("prim_func",), ("T", "tilelang", "tir"))


def _profiled_match(profiled: str, defined: str) -> bool:
    # TileLang's CUDA code generator names the kernel of prim_func `main` main_kernel (main_kernel_1, ... after it)
    stem = f"{defined}_kernel"  # string tests, not a pattern compiled per (kernel, name) pair
    return profiled == stem or (profiled.startswith(stem + "_") and profiled[len(stem) + 1 :].isdigit())


def _output_shape(param: Any, inputs: list[tuple[Any, Any]]) -> list[int]:
    """An output parameter's shape: its fixed sizes, and each symbolic one read from an input that has the same
    symbol (``T.dynamic`` sizes are bound by the tensors passed in)."""
    shape = []
    for size in param.shape:
        if isinstance(size, int):
            shape.append(size)
            continue
        found = [
            int(t.shape[d])
            for p, t in inputs
            for d, s in enumerate(getattr(p, "shape", []))
            if d < t.dim() and not isinstance(s, int) and s.same_as(size)
        ]
        if not found:
            raise RuntimeError(f"an output size ({size}) that no input gives: not built ahead past this call")
        shape.append(found[0])
    return shape


@contextlib.contextmanager
def _compile_only(target: list[Any]) -> Iterator[list[str]]:
    """Inside it, TileLang finds the target GPU without asking one (its CUDA detection, which asks torch for the
    GPU's compute capability, answers the target's; torch is left alone), so every kernel that ``@tilelang.jit``
    or ``tilelang.compile`` builds compiles for ``target`` into TileLang's cache (``TILELANG_CACHE_DIR``), and
    calling a compiled kernel launches nothing: it returns empty outputs of the shapes its ``out_idx`` parameters
    declare, so ``forward`` goes on to the next kernel. Yields the names of the prim_funcs compiled. The same sizes
    at run time on that GPU then find them in the cache (TileLang's key: the prim_func's script, ``out_idx``,
    target, backend, pass configs)."""
    import torch
    from tilelang.backend import target as targets
    from tilelang.cache.kernel_cache import KernelCache
    from tilelang.cuda import target as cuda_target
    from tilelang.jit.kernel import JITKernel

    if target[0] != "cuda":
        raise RuntimeError(f"TileLang kernels are built ahead only for CUDA GPUs, not {target[0]}")
    if not all(hasattr(cuda_target, f) for f in ("_detect_torch_cuda_arch", "_cuda_target_from_arch")):
        import tilelang

        raise RuntimeError(f"TileLang {getattr(tilelang, '__version__', '?')} cannot be built ahead (0.1.15 can)")
    from tilelang.contrib import nvcc

    arch = f"sm_{nvcc.get_target_arch(divmod(int(target[1]), 10))}"  # as TileLang names the GPU it finds
    built: list[str] = []
    detect_arch, detector = cuda_target._detect_torch_cuda_arch, targets._TARGET_DETECTORS.get("cuda")
    cached, call = KernelCache.cached, JITKernel.__call__

    def compile_(self: Any, func: Any = None, out_idx: Any = None, *args: Any, **kwargs: Any) -> Any:
        # TileLang 0.1.15 turns a negative out_idx into its positive index in place when a kernel is loaded from
        # its cache but not when one is compiled, and the index is part of the cache key: a @tilelang.jit(out_idx=
        # [-1]) function looks up its first size under [-1] and every later one under [1] (say). Both keys are
        # compiled, so the GPU worker finds every size whatever order it calls them in.
        spelled = list(out_idx) if isinstance(out_idx, list) else out_idx
        kernel = cached(self, func, out_idx, *args, **kwargs)
        count = len(getattr(func, "params", ()) or ())
        if isinstance(spelled, list) and count and any(i < 0 for i in spelled):
            cached(self, func, [i % count for i in spelled], *args, **kwargs)
        attrs = getattr(func, "attrs", None)
        name = str(attrs["global_symbol"]) if attrs is not None and "global_symbol" in attrs else "kernel"
        built.append(name)
        return kernel

    def launch_nothing(self: Any, *args: Any, **kwargs: Any) -> Any:
        params, outs = list(self.params), [i % len(self.params) for i in (self.out_idx or [])]
        given = [p for i, p in enumerate(params) if i not in outs]
        tensors = [(p, a) for p, a in zip(given, args) if isinstance(a, torch.Tensor)]
        made = [
            torch.empty(_output_shape(params[i], tensors), dtype=params[i].torch_dtype(), device="cuda") for i in outs
        ]
        if not made:
            return None
        return made[0] if len(made) == 1 else made

    try:
        # TileLang asks torch for the GPU's compute capability ("auto" and "cuda" targets): it gets the target's,
        # and torch itself is left alone (this copy sees no GPU)
        cuda_target._detect_torch_cuda_arch = lambda: arch
        targets.register_target_detector("cuda", lambda: cuda_target._cuda_target_from_arch(arch), override=True)
        KernelCache.cached, JITKernel.__call__ = compile_, launch_nothing  # type: ignore[method-assign]
        yield built
    finally:
        KernelCache.cached, JITKernel.__call__ = cached, call  # type: ignore[method-assign]
        cuda_target._detect_torch_cuda_arch = detect_arch
        if detector is not None:
            targets._TARGET_DETECTORS["cuda"] = detector
        else:
            targets._TARGET_DETECTORS.pop("cuda", None)


LANGUAGE = KernelLanguage(
    name="tilelang",
    summary="TileLang tile programs (@T.prim_func) built by @tilelang.jit and called from Python",
    detect=_detect,
    kernel_names=_kernel_names,
    decorators=("prim_func", "jit"),
    profiled_match=_profiled_match,
    modules=("tilelang",),
    install="pip install tilelang (tested with 0.1.15)",
    title="TileLang",
    prompt_rule="Write the kernels in TileLang (`import tilelang`, `import tilelang.language as T`): a "
    "`@tilelang.jit(out_idx=[...])` function that takes the sizes and returns a `@T.prim_func` whose body opens "
    "`with T.Kernel(grid..., threads=...)` (tiles in `T.alloc_shared`/`T.alloc_fragment`, `T.copy`, `T.gemm`, "
    "`T.Parallel`, `T.Pipelined`). Call it with the run-time sizes in `forward` (it compiles once per distinct "
    "size) and call the returned kernel on the tensors.",
    prompt_choice="TileLang (a `@tilelang.jit` function returning a `@T.prim_func`, called from `forward`)",
    follow_up="with its TileLang kernels",
    example="elementwise_add_tilelang",
    judge_notes="The kernel is written in TileLang: Nsight Compute names the kernel of prim_func `f` f_kernel. "
    "Suggest changes in TileLang terms (block and tile sizes, T.alloc_shared/T.alloc_fragment, T.copy, T.gemm, "
    "T.Pipelined stages, T.use_swizzle, threads per block), not as CUDA C++.",
    prebuild=_compile_only,
    jit_cache="tilelang",
    jit_cache_env="TILELANG_CACHE_DIR",
    jit_keep=(".cu", ".so", ".cubin", ".ptx", ".py", ".pkl", ".json"),
    jit_kernel_marks=("device_kernel.cu",),  # one per kernel; its cubins are stored once per content
)
