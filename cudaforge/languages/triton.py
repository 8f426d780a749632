"""Triton: ``@triton.jit`` functions launched from Python."""

from __future__ import annotations

from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import jit_kernel_names


def _detect(source: str) -> bool:
    return "triton.jit" in source or ("@jit" in source and "triton" in source)


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
)
