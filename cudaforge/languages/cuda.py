"""CUDA C++ through ``torch.utils.cpp_extension.load_inline`` (or ``load``)."""

from __future__ import annotations

from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import cuda_kernel_names


def _detect(source: str) -> bool:
    return "load_inline" in source or "cpp_extension.load(" in source


LANGUAGE = KernelLanguage(
    name="cuda",
    summary="CUDA C++ built with torch.utils.cpp_extension.load_inline (or load)",
    detect=_detect,
    kernel_names=cuda_kernel_names,
    builders=("load_inline",),  # torch.utils.cpp_extension.load is matched by its whole name (``load`` is common)
    builds_extension=True,
    title="CUDA",
    prompt_rule="Write the kernels in CUDA C++ and build them with `torch.utils.cpp_extension.load_inline` "
    "(`cpp_sources` declares the host functions, `cuda_sources` holds the kernels and their host wrappers, "
    "`functions=[...]` names what Python calls), once at import time, not in `forward`.",
    prompt_choice="CUDA C++ built with `torch.utils.cpp_extension.load_inline` (`cpp_sources` declares the host "
    "functions, `cuda_sources` holds the kernels and their wrappers, `functions=[...]`; built once at import time)",
    follow_up="with its CUDA kernels built by `load_inline`",
    example="elementwise_add",
)
