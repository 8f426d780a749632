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

# Every pattern here reads the candidate's whole source in the profiler's trusted parent: none may rescan past a
# delimiter from each start (red team, round 5: "__global__ " repeated 80 KB took 17 s, 1 MiB ~45 min).
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)")
_DELIMITERS = re.compile(r"([(;{}])")
_GLOBAL = re.compile(r"__global__(?!\w)")
RAW_KERNEL = re.compile(r"Raw(?:Kernel|Module)\s*\([^()]*?['\"]([A-Za-z_]\w*)['\"]\s*\)")
KERNEL_NAME_MAX = 4096
"""Characters of a reported kernel name read (a profiled name, or one a forged fallback result holds)."""
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
    """``__global__`` functions named in ``source`` (a C++ string or a whole Python file holding one): in each stretch
    of text between delimiters (``( ; { }``) that holds ``__global__`` and ends at a ``(``, the identifier just
    before that ``(``. One pass, linear in the source."""
    parts = _DELIMITERS.split(_LAUNCH_BOUNDS.sub(" ", source))
    names = set()
    for i in range(0, len(parts) - 1, 2):
        piece = parts[i]
        if parts[i + 1] != "(" or "__global__" not in piece:
            continue
        found = _GLOBAL.search(piece)
        if found is None:
            continue
        tail = piece[found.end() :].rstrip()
        start = len(tail)
        while start > 0 and (tail[start - 1].isalnum() or tail[start - 1] == "_"):
            start -= 1
        name = tail[start:]
        if (
            name
            and (name[0].isalpha() or name[0] == "_")
            and name.isascii()
            and name not in ("void", "static", "inline")
        ):
            names.add(name)
    return names


def _root_name(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def decorated_names(
    source: str, attrs: tuple[str, ...], roots: tuple[str, ...], bare: tuple[str, ...] = ()
) -> set[str]:
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
    if not isinstance(name, str):
        return ""
    text = name.strip()[:KERNEL_NAME_MAX]
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):  # the parameter list starts at the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0 and i > 0:
            cut = i
            break
    kept, depth = [], 0
    for ch in text[:cut]:  # template arguments dropped, in one pass (nesting counted; an unmatched '>' kept)
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            kept.append(ch)
    text = "".join(kept) if depth == 0 else text[:cut]
    text = text.split("::")[-1].strip()
    return text.split()[-1] if text.split() else name.strip()[:KERNEL_NAME_MAX]
