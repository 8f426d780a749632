"""Light headers: the CUDA source rewritten to include only the parts of torch a kernel needs (tiers ``min``,
``types``), which cuts nvcc's parse of torch's headers from most of a cold build."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

# --------------------------------------------------------------------------- light headers

_HEAVY_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](torch/(extension|torch|all)\.h)[>"].*$', re.M)
_TYPES_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](torch/types\.h|ATen/ATen\.h)[>"].*$', re.M)
# Code that needs more than tensors: the light tiers would only waste a compile on it.
_NEEDS_FRONTEND = re.compile(
    r"pybind11|PYBIND11_|\bpy::|TORCH_LIBRARY|torch::(nn|optim|jit|data|serialize|autograd|fft|linalg|special"
    r"|nested|sparse|cuda|python|Library|class_)\b"
)
_OP_CALL = re.compile(r"\b(?:torch|at)::(\w+)\s*\(")
_TORCH_ALIASES = (
    "namespace torch {\nusing namespace at;\nusing Dtype = at::ScalarType;\n"
    + "".join(
        f"inline constexpr auto {alias} = at::{target};\n"
        for alias, target in [
            ("kUInt8", "kByte"),
            ("kInt8", "kChar"),
            ("kInt16", "kShort"),
            ("kInt32", "kInt"),
            ("kInt64", "kLong"),
            ("kFloat16", "kHalf"),
            ("kFloat32", "kFloat"),
            ("kFloat64", "kDouble"),
            ("kU8", "kByte"),
            ("kI8", "kChar"),
            ("kI16", "kShort"),
            ("kI32", "kInt"),
            ("kI64", "kLong"),
            ("kF16", "kHalf"),
            ("kF32", "kFloat"),
            ("kF64", "kDouble"),
        ]
    )
    + "}  // namespace torch"
)


# The binding file (``main.cpp``) needs tensors, pybind11 and torch's casters, not the C++ frontend that
# ``torch/extension.h`` adds (nn, optim, data ...): compiled against this lighter set (precompiled, like the full
# header), it builds in about half the time.
BIND_HEADER = "cudaforge/bind.h"
BIND_HEADER_TEXT = (
    "#pragma once\n// cudaforge: what a load_inline binding file needs of torch/extension.h\n"
    "#include <torch/types.h>\n#include <torch/csrc/utils/pybind.h>\n#include <torch/csrc/Exceptions.h>\n"
)
# Host code that needs more of the frontend than the binding header gives: its main.cpp stays as torch writes it.
_MAIN_NEEDS_FRONTEND = re.compile(
    r"TORCH_LIBRARY|torch::(nn|optim|jit|data|serialize|autograd|fft|linalg|special|nested|sparse|cuda|python|Library"
    r"|class_|Module|Sequential)\b|torch/(python|script|nn|optim|csrc/api)\b"
)


def light_main_source(cpp: str, bindings: str) -> str | None:
    """``main.cpp`` of a load_inline with :data:`BIND_HEADER` in place of ``torch/extension.h`` (and the heavy
    includes of ``cpp`` blanked, so line numbers hold), or ``None`` when ``cpp`` needs more of the frontend."""
    if _MAIN_NEEDS_FRONTEND.search(cpp):
        return None
    main = [f"#include <{BIND_HEADER}>", '#line 1 "cpp_sources"', _HEAVY_INCLUDE.sub("", cpp)]
    if bindings:
        main += ['#line 1 "load_inline_bindings"', bindings]
    return "\n".join(main)


_CUDA_CONTEXT_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]ATen/cuda/CUDAContext\.h[>"].*$', re.M)
_CUDA_NAMES = re.compile(r"\b(?:at|c10)::cuda::(\w+)")
# What LLM kernels take from ATen/cuda/CUDAContext.h; all of it is c10/cuda/CUDAStream.h and
# CUDAException.h (``at::cuda::getCurrentCUDAStream`` *is* ``c10::cuda::getCurrentCUDAStream``).
# The guards come from the guard headers the source includes itself.
_STREAM_ONLY = {
    "getCurrentCUDAStream",
    "getDefaultCUDAStream",
    "getStreamFromPool",
    "getStreamFromExternal",
    "setCurrentCUDAStream",
    "CUDAStream",
    "CUDAGuard",
    "OptionalCUDAGuard",
    "CUDAStreamGuard",
    "OptionalCUDAStreamGuard",
}


MIN_TIER_OPS = 64
"""ATen operators a CUDA source may call and still get the ``min`` tier (their wrappers inlined one by one)."""


@functools.lru_cache(maxsize=512)
def _inline_op(torch_include: str, op: str) -> str:
    """The wrappers of ``ATen/ops/<op>.h`` without the header's heavy includes (ATen/Context.h ...).

    The wrappers only forward to ``at::_ops::<op>::call``, declared in ``<op>_ops.h``; the rest
    of what they name (TensorOptions, SymInt, Scalar ...) comes with ``ATen/core/Tensor.h``.
    """
    text = Path(torch_include, "ATen", "ops", f"{op}.h").read_text()
    own = f"#include <ATen/ops/{op}_ops.h>"
    if own not in text:
        return f"#include <ATen/ops/{op}.h>\n"
    text = re.sub(
        r"^#include <(?!ATen/ops/%s_ops\.h>)[^>]*>[ \t]*$|^#pragma once$|^//.*$" % re.escape(op),  # noqa: UP031
        "",
        text,
        flags=re.M,
    )
    return re.sub(r"\n{2,}", "\n", text).strip() + "\n"


def light_cuda_source(source: str, tier: str, torch_include: str) -> str | None:
    """The user's CUDA source with lighter torch headers, or ``None`` if the tier cannot apply.

    ``source`` is the user's ``cuda_sources`` text, before load_inline's own prefix. Tier
    ``types`` swaps ``torch/extension.h`` (and ``torch/torch.h``, ``torch/all.h``) for
    ``torch/types.h``. Tier ``min`` swaps those and ``torch/types.h``/``ATen/ATen.h`` for
    ``ATen/core/Tensor.h``, ``ATen/Dispatch.h``, the wrappers of every ATen operator the source
    calls as ``torch::op(``/``at::op(`` (the ``ATen/ops/<op>.h`` header minus its includes) and
    torch's dtype aliases; and ``ATen/cuda/CUDAContext.h`` for ``c10/cuda/CUDAStream.h`` and
    ``CUDAException.h`` when the source takes only streams from it. Include lines are replaced
    in place, so line numbers do not move.
    """
    if _NEEDS_FRONTEND.search(source):
        return None
    if tier == "types":
        if not _HEAVY_INCLUDE.search(source):
            return None
        return _HEAVY_INCLUDE.sub("#include <torch/types.h>", source)
    if tier != "min":
        raise ValueError(f"unknown header tier {tier!r}")
    ops = sorted(
        {m for m in _OP_CALL.findall(source) if os.path.exists(os.path.join(torch_include, "ATen", "ops", f"{m}.h"))}
    )
    if len(ops) > MIN_TIER_OPS:  # each is a header's wrappers inlined: past this, torch/types.h is the lighter way
        return None
    wrappers = "".join(_inline_op(torch_include, op) for op in ops)
    extra = "#include <ATen/core/Generator.h>\n" if "Generator" in wrappers else ""
    extra += "#include <ATen/core/Reduction.h>\n" if "Reduction" in wrappers else ""
    if "indexing::" in source:
        extra += "#include <ATen/TensorIndexing.h>\n"
    header = "#include <ATen/core/Tensor.h>\n#include <ATen/Dispatch.h>\n" + extra + wrappers + _TORCH_ALIASES
    body = _TYPES_INCLUDE.sub("", _HEAVY_INCLUDE.sub("", source))
    if (
        _CUDA_CONTEXT_INCLUDE.search(body)
        and set(_CUDA_NAMES.findall(source)) <= _STREAM_ONLY
        and "AT_CUDA_CHECK" not in source
    ):
        body = _CUDA_CONTEXT_INCLUDE.sub("", body)
        header += "\n#include <c10/cuda/CUDAStream.h>\n#include <c10/cuda/CUDAException.h>"
    return header + '\n#line 1 "cuda_sources"\n' + body


_HOST_SOURCE = (".cpp", ".cc", ".cxx")


def _heavy_include_first(text: str) -> bool:
    """Whether the first line of ``text`` that is not blank or a ``//`` comment includes ``torch/extension.h`` (or
    ``torch/torch.h``, ``torch/all.h``): only then does the binding header in its place see the same macros."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("//"):
            return bool(_HEAVY_INCLUDE.match(line))
    return False


def light_file_variants(files: dict[str, str], torch_include: str) -> list[tuple[str, dict[str, str]]]:
    """The lighter tiers of a ``load`` call's files (name -> text), lightest first, each a whole set of files:
    host files that include ``torch/extension.h`` and need no more of the frontend take :data:`BIND_HEADER`; CUDA
    files take :func:`light_cuda_source`'s tiers. Every file keeps its name, and ``#line`` keeps the diagnostics on
    the candidate's own lines. Empty when nothing can be made lighter."""
    host = {
        name: f'#include <{BIND_HEADER}>\n#line 1 "{name}"\n' + _HEAVY_INCLUDE.sub("", text)
        for name, text in files.items()
        if name.endswith(_HOST_SOURCE) and _heavy_include_first(text) and not _MAIN_NEEDS_FRONTEND.search(text)
    }
    variants = []
    for tier in ("min", "types"):
        cuda = {}
        for name in (n for n in files if n.endswith(".cu")):
            text = light_cuda_source(files[name], tier, torch_include)
            if text is not None:
                lead = "#include <cuda.h>\n#include <cuda_runtime.h>\n" if tier == "min" else ""
                cuda[name] = f'{lead}#line 1 "{name}"\n{text}'
        if cuda:
            variants.append((f"light:{tier}", {**files, **host, **cuda}))
    if host and not variants:
        variants.append(("light:bind", {**files, **host}))
    return variants
