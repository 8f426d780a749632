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
)
