"""CuTe DSL (NVIDIA CUTLASS 4's Python DSL, package ``nvidia-cutlass-dsl``): ``@cute.kernel`` functions,
launched from a ``@cute.jit`` host function that ``cute.compile`` turns into a callable."""

from __future__ import annotations

from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import decorated_names


def _detect(source: str) -> bool:
    return "cutlass" in source and ("cute.kernel" in source or "cute.jit" in source)


def _kernel_names(source: str) -> set[str]:
    return decorated_names(source, ("kernel",), ("cute", "cutlass"))


def _profiled_match(profiled: str, defined: str) -> bool:
    # CuTe DSL names the compiled kernel kernel_cutlass_<function>_<argument types>_<n> (4.2: seen on the H200)
    for prefix in ("kernel_cutlass_", "kernel_"):  # string tests, not a pattern compiled per (kernel, name) pair
        rest = profiled[len(prefix) :] if profiled.startswith(prefix) else None
        if rest is not None and rest.startswith(defined) and (len(rest) == len(defined) or rest[len(defined)] == "_"):
            return True
    return False


LANGUAGE = KernelLanguage(
    name="cute_dsl",
    summary="CuTe DSL kernels (@cute.kernel, launched by a @cute.jit function that cute.compile builds)",
    detect=_detect,
    kernel_names=_kernel_names,
    decorators=("kernel", "jit"),
    profiled_match=_profiled_match,
    modules=("cutlass",),
    install="pip install nvidia-cutlass-dsl (CUTLASS 4's Python DSL; tested with 4.2.1)",
    title="CuTe DSL",
    prompt_rule="Write the kernels in CuTe DSL (`import cutlass`, `import cutlass.cute as cute`): each kernel a "
    "`@cute.kernel` function, launched by a `@cute.jit` host function (`kernel(...).launch(grid=..., block=...)`). "
    "Wrap torch tensors with `cutlass.cute.runtime.from_dlpack`, build the host function with `cute.compile` once "
    "per distinct shape (keep the compiled callables in a dict), and call the compiled function from `forward`.",
    prompt_choice="CuTe DSL (`@cute.kernel` launched by a `@cute.jit` function, compiled with `cute.compile`)",
    follow_up="with its CuTe DSL kernels",
    example="elementwise_add_cute_dsl",
    judge_notes="The kernel is written in CuTe DSL: Nsight Compute names it kernel_cutlass_<function>_<argument "
    "types>_<n>. Suggest changes in CuTe terms (layouts and tiled copies, cute.copy with vectorised atoms, "
    "shared-memory tiles, TMA and WGMMA atoms on Hopper), not as CUDA C++.",
    prebuild_note="not built ahead: cute.compile reads its tensors' types, layouts and alignment through DLPack, "
    "which a fake tensor cannot give, so its kernels compile at their first call, in the correctness phase; for our "
    "candidates that whole phase took 0.6-1.1 s on an H200, compile included (benchmarks/languages_gpu.py "
    "--language cute_dsl, 2026-12-03, benchmarks/results/2026-12-03_h200/ (call7)).",
)
