"""Which profiled kernels are the candidate's own, and the kernel-name parsers the languages share.

The candidate's kernel names are read from its text (never by importing it), by each language of the registry
(``cudaforge.languages``): ``__global__`` functions in CUDA strings (load_inline sources, CuPy RawKernel code)
and ``@triton.jit`` functions. A profiled kernel is the candidate's own when its base name (no ``void``, namespace,
template arguments or parameters) is one of those names; everything else the forward launched
(torch's elementwise and copy kernels, cuBLAS, cuDNN, torch.compile's Triton kernels) is a
library kernel, reported only when asked for. ``cudaforge.languages.is_own_kernel`` decides, asking each
language how its kernels are named once compiled.
"""

from __future__ import annotations

import ast
import re

from cudaforge import pyast

_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")
_GLOBAL_FN = re.compile(r"__global__\b[^(;{}]*?\b([A-Za-z_]\w*)\s*\(")
RAW_KERNEL = re.compile(r"Raw(?:Kernel|Module)\s*\([^)]*?['\"]([A-Za-z_]\w*)['\"]\s*\)")
LIBRARY_KERNEL = re.compile(
    r"at::|c10::|cutlass|cublas|cudnn|xmma|gemm|gemv|nvjet|elementwise_kernel|reduce_kernel|CatArray|"
    r"Memcpy|Memset|^triton_(poi|red|per|tem)_"
)
"""Names of kernels that torch and its libraries launch (used when the candidate's names are unknown)."""

NEVER_OWN = re.compile(
    r"(?:^|[\s<(,*&])(?:at|c10|cub|thrust|cutlass)::|xmma|nvjet|cublas|cudnn|^(?:void\s+)?(?:ampere|volta|turing|sm\d+)_"
)
"""Kernels that are torch's or a vendor library's whatever the candidate names its own: torch's and CUB's
namespaces, cuBLAS's and cuDNN's kernel families. A candidate that names an unused kernel of its own
``vectorized_elementwise_kernel`` does not make torch's launches of that kernel its own."""



def cuda_kernel_names(source: str) -> set[str]:
    """``__global__`` functions named in ``source`` (a C++ string or a whole Python file holding one)."""
    text = _LAUNCH_BOUNDS.sub(" ", source)
    return {name for name in _GLOBAL_FN.findall(text) if name not in ("void", "static", "inline")}


def _root_name(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def decorated_names(source: str, attrs: tuple[str, ...], roots: tuple[str, ...], bare: tuple[str, ...] = ()) -> set[str]:
    """Python functions of ``source`` decorated ``@<root>...<attr>`` (``roots`` the first name, ``attrs`` the last;
    called or not), or by a bare name in ``bare``: how the Python-embedded languages mark their kernels."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return set()

    def marks(node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        if isinstance(target, ast.Attribute):
            return target.attr in attrs and _root_name(target) in roots
        return isinstance(target, ast.Name) and target.id in bare

    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(marks(d) for d in node.decorator_list)
    }


def jit_kernel_names(source: str) -> set[str]:
    """Python functions decorated ``@triton.jit`` (or ``autotune``/``heuristics``, or a bare ``@jit``)."""
    return decorated_names(source, ("jit", "autotune", "heuristics"), ("triton", "tl"), bare=("jit",))


def is_copy_or_fill(name: str) -> bool:
    """A copy or fill on the device (CUPTI's ``Memcpy ...``/``Memset ...`` activities), not a kernel."""
    return name.startswith(("Memcpy", "Memset"))


def kernel_base_name(name: str) -> str:
    """The bare function name of a reported kernel name.

    ``void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)`` ->
    ``vectorized_elementwise_kernel``; ``relu_kernel(const float *, float *, int)`` ->
    ``relu_kernel``; ``softmax_kernel`` -> ``softmax_kernel``.
    """
    text = name.strip()
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):  # the parameter list starts at the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0 and i > 0:
            cut = i
            break
    text = text[:cut]
    while "<" in text:  # drop template arguments, innermost first
        stripped = re.sub(r"<[^<>]*>", "", text)
        if stripped == text:
            break
        text = stripped
    text = text.split("::")[-1].strip()
    return text.split()[-1] if text.split() else name.strip()
