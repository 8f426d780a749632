"""CUDA C++ through ``torch.utils.cpp_extension.load_inline`` (or ``load``)."""

from __future__ import annotations

import re

from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import cuda_kernel_names

_LOAD_IMPORTED = re.compile(r"from[ \t]+torch\.utils\.cpp_extension[ \t]+import[ \t(]+[^\n]*\bload\b")
_MODULE_IMPORTED = re.compile(
    r"import[ \t]+torch\.utils\.cpp_extension[ \t]+as[ \t]+(\w+)|from[ \t]+torch\.utils[ \t]+"
    r"import[ \t]+cpp_extension(?:[ \t]+as[ \t]+(\w+))?"
)


def _detect(source: str) -> bool:
    """``load_inline`` anywhere, ``cpp_extension.load(``, ``load`` imported from ``torch.utils.cpp_extension``
    (under any name), or the module imported under a name whose ``.load(`` is called."""
    if "load_inline" in source or "cpp_extension.load(" in source or _LOAD_IMPORTED.search(source):
        return True
    return any(
        f"{m.group(1) or m.group(2) or 'cpp_extension'}.load(" in source for m in _MODULE_IMPORTED.finditer(source)
    )


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
