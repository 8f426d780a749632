"""TileLang (package ``tilelang``): ``@T.prim_func`` tile programs, built for the shapes they are called with
by a ``@tilelang.jit`` function (or ``tilelang.compile``) and called like Python functions."""

from __future__ import annotations

import re

from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import decorated_names


def _detect(source: str) -> bool:
    return "tilelang" in source and ("prim_func" in source or "tilelang.jit" in source or "T.Kernel" in source)


def _kernel_names(source: str) -> set[str]:
    return decorated_names(source, ("prim_func",), ("T", "tilelang", "tir"))


def _profiled_match(profiled: str, defined: str) -> bool:
    # TileLang's CUDA code generator names the kernel of prim_func `main` main_kernel (main_kernel_1, ... after it)
    return re.fullmatch(rf"{re.escape(defined)}_kernel(?:_\d+)?", profiled) is not None


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
    prebuild_note="TileLang compiles through TVM for the GPU it finds, usually in __init__ or at the first call: "
    "its kernels compile when the model is built or first called, in the correctness phase.",
)
