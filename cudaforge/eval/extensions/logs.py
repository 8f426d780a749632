"""Compiler logs: the first errors with their source lines for the Judge, and what a failed build's log says
about why (a header no torch header can cure, a toolkit header this machine lacks)."""

from __future__ import annotations

import re

from cudaforge.languages.names import cuda_kernel_names

# --------------------------------------------------------------------------- log trimming

_GCC_DIAG = re.compile(r"^(?P<loc>[^\s:][^:\n]*:\d+(?::\d+)?): (?P<kind>fatal error|error|warning)\b")
EDG_DIAG = re.compile(r"^(?P<loc>\S[^\n]*?\(\d+\)): (?P<kind>catastrophic error|error|warning)\b")
_OTHER_ERROR = re.compile(
    r"(undefined reference to|^/usr/bin/ld:|collect2: error|^nvcc (fatal|error)|^(c\+\+|g\+\+|gcc|cc1plus): "
    r"(fatal )?error|^ptxas (fatal|error)|undefined symbol|No such file or directory)"
)
_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(?P<target>.+)$")
_COMMAND = re.compile(r"^(\[\d+/\d+\] )|(\s-isystem\s|\s-c\s\S+\s-o\s)")
_SUMMARY = re.compile(r"^\d+ errors? detected in the compilation of|^compilation terminated")
_CONTEXT = re.compile(r"^(\s|\s*\d+\s*\|)")


_NOT_THE_SOURCES = re.compile(
    r"Resource temporarily unavailable|Cannot allocate memory|No space left on device|out of memory|Killed signal|"
    r"internal compiler error|terminated by signal|vfork|fork: |Segmentation fault|the sandbox refused|"
    r"\(cancelled\)|Too many open files|Disk quota exceeded|timed out|File size limit exceeded|"
    r"CPU time limit exceeded|memory exhausted|died due to signal",
    re.IGNORECASE,
)
"""What a build's log says when it failed for want of a resource, or was stopped, rather than for its sources."""


def failed_for_the_sources(log: str) -> bool:
    """Whether a failed build's log shows the compiler's own verdict on the sources (an error diagnostic, an
    undefined reference) and no sign of a resource that ran out or a process that was stopped: only such a failure
    is kept in the cache (``eval.build_cache_failures``) or marks a precompiled header as impossible. A failure
    another process could have caused (too many processes of one uid, memory, disk) is built again next time."""
    if _NOT_THE_SOURCES.search(log):
        return False
    return any(
        _GCC_DIAG.match(ln) or EDG_DIAG.match(ln) or _OTHER_ERROR.search(ln)
        for ln in log.splitlines()
        if "warning" not in ln[:200]
    )


_PATH_DELIMITERS = re.compile(r"([\s:()'\"]+)")
_BUILD_SOURCE = re.compile(r"/(?:main\.cpp|cuda\.cu)(?!\w)")
_TORCH_INCLUDE = "/site-packages/torch/include/"
SHORTENED_LINE_MAX = 2000
"""Characters of one log line whose paths are shortened (the rest is cut): the line is the compiler's, and so can
hold whatever the candidate's sources make it print."""


def _shorten_token(token: str) -> str:
    if not token.startswith("/"):
        return token
    at = token.find(_TORCH_INCLUDE)
    if at >= 0:
        return "<torch>/" + token[at + len(_TORCH_INCLUDE) :]
    found = None
    for found in _BUILD_SOURCE.finditer(token):  # noqa: B007
        pass
    return token[found.start() + 1 :] if found is not None and found.start() > 0 else token


def _shorten_paths(line: str) -> str:
    """Build folders before ``main.cpp``/``cuda.cu`` dropped, torch's include folder written ``<torch>/``. One pass
    over the line's tokens, linear in its length (a nested-quantifier pattern over slashes backtracked
    exponentially on a line the candidate's ``#warning ////...`` put in the log)."""
    parts = _PATH_DELIMITERS.split(line[:SHORTENED_LINE_MAX])
    return "".join(part if i % 2 else _shorten_token(part) for i, part in enumerate(parts))


def trim_compiler_log(log: str, max_errors: int = 5, max_context: int = 4, max_chars: int = 6000) -> str:
    """The first ``max_errors`` errors of a build log with their source lines, for the Judge.

    Understands nvcc/EDG (``file(12): error: ...`` then the source line and a caret), GCC
    (``file:12:5: error: ...`` then ``12 | code`` and ``| ^~~``), linker errors and ninja's
    ``FAILED:`` lines. Compiler command lines and template-instantiation noise are dropped,
    build paths are shortened. With no errors, the first warnings are kept instead.
    """
    lines = log.splitlines()
    failed: list[str] = []
    blocks: dict[str, list[list[str]]] = {"error": [], "warning": []}
    summaries: list[str] = []
    seen: set[tuple[str, ...]] = set()
    i = 0
    while i < len(lines):
        line = lines[i]
        m_failed = _FAILED.match(line)
        if m_failed:
            target = m_failed.group("target").strip()
            if target not in failed:
                failed.append(target)
            i += 1
            if i < len(lines) and len(lines[i]) > 200:  # the failing command line
                i += 1
            continue
        if _SUMMARY.match(line.strip()):
            summaries.append(line.strip())
            i += 1
            continue
        m = _GCC_DIAG.match(line) or EDG_DIAG.match(line)
        kind = None
        if m:
            kind = "warning" if m.group("kind") == "warning" else "error"
        elif _OTHER_ERROR.search(line) and not _COMMAND.search(line):
            kind = "error"
        if kind is None:
            i += 1
            continue
        block = [_shorten_paths(line.rstrip())]
        i += 1
        taken = 0
        while i < len(lines) and taken < max_context:
            nxt = lines[i]
            if not nxt.strip() or _GCC_DIAG.match(nxt) or EDG_DIAG.match(nxt) or _FAILED.match(nxt):
                break
            if not _CONTEXT.match(nxt) and not nxt.lstrip().startswith("detected during"):
                break
            if "detected during" in nxt or "instantiation of" in nxt:
                block.append(_shorten_paths(nxt.rstrip()[:300]))
                taken = max_context  # one line of instantiation context is enough
            else:
                block.append(_shorten_paths(nxt.rstrip()[:300]))
                taken += 1
            i += 1
        if tuple(block) not in seen:  # a set: a log of 30 000 one-line warnings took 11 s with a list's `in`
            seen.add(tuple(block))
            blocks[kind].append(block)
    chosen = blocks["error"] or blocks["warning"]
    out: list[str] = []
    if failed:
        out.append("FAILED: " + ", ".join(_shorten_paths(t) for t in failed))
    for block in chosen[:max_errors]:
        out.extend(block)
    hidden = len(chosen) - max_errors
    if hidden > 0:
        out.append(f"... {hidden} more {'errors' if blocks['error'] else 'warnings'} not shown")
    out.extend(dict.fromkeys(summaries))
    if not chosen and failed:  # a failure we could not parse: keep the tail
        tail = [ln for ln in lines if ln.strip() and not _COMMAND.search(ln) and len(ln) < 400][-15:]
        out.extend(_shorten_paths(ln) for ln in tail)
    text = "\n".join(out)
    return text if len(text) <= max_chars else text[: max_chars - 20] + "\n... (truncated)"


UNDEFINED = re.compile(r'error(?: #\d+-D)?: identifier "(\w+)" is undefined')
# Errors that no header can cause or cure: syntax, and mismatches between built-in types.
_BUILTIN = (
    r"(?:const |volatile |unsigned |signed |long |short )*(?:void|bool|char|int|float|double|size_t|half|__half)\s*\**"
)
SOURCE_ONLY_ERROR = re.compile(
    r"error(?: #\d+-D)?: (expected an? |expected a \"|unrecognized token|missing closing quote"
    rf'|argument of type "{_BUILTIN}" is incompatible with parameter of type "{_BUILTIN}"'
    rf'|a value of type "{_BUILTIN}" cannot be (used to initialize|assigned to) an entity of type "{_BUILTIN}")'
)
_TOOLKIT_HEADER = re.compile(
    r'(?:fatal error: |cannot open source file ")((?:cublas|cusparse|cusolver|curand|cufft|cudnn|nccl|nvrtc|nvToolsExt'
    r"|nvtx|cupti|nvjitlink|cufile)\w*\.h|(?:c10|ATen)/cuda/[\w/]+\.h)"
)


def missing_toolkit_header(log: str) -> str | None:
    """The CUDA library header (``cusparse.h`` ...) a build could not find, if that is why it failed.

    Such a build says nothing about the candidate: the machine's CUDA toolkit is incomplete
    (typical of CPU-only machines that have nvcc but not the math libraries' headers, which
    torch's ``ATen/cuda/CUDAContext.h`` includes).
    """
    found = _TOOLKIT_HEADER.search(log)
    return found.group(1) if found else None


def find_failed_targets(log: str) -> list[str]:
    return [m.group("target").strip() for m in map(_FAILED.match, log.splitlines()) if m] or ["?"]


# --------------------------------------------------------------------------- known mistakes, said in one line

HINT_SOURCE_CHARS = 1 << 20
"""Characters of the candidate's sources the hints read (its sources are bounded earlier; this bounds the scan)."""
_BOUND_NAME = re.compile(r'm\.def\("([A-Za-z_]\w{0,199})"')
_PYBIND_UNDEFINED = re.compile(
    r'(identifier|name) "?(PYBIND11_MODULE|py|pybind11|torch)"? (is undefined|has not been '
    r'declared)|namespace "?(torch|pybind11)"? has no member|'
    r"'(PYBIND11_MODULE|py|pybind11|torch)' (was not declared|has not been declared)"
)


def build_hints(log: str, files: dict[str, str]) -> list[str]:
    """One line for each known mistake a failed ``load_inline`` build shows, for the Coder: two Python bindings of
    one module, a ``__global__`` kernel named in ``functions``, a CUDA source that binds or uses torch without
    ``torch/extension.h``. ``files`` are the build's texts (``cpp_sources``, ``cuda_sources``,
    ``load_inline_bindings``, as ``inline_spec`` names them)."""
    cpp = files.get("cpp_sources", "")[:HINT_SOURCE_CHARS]
    cuda = files.get("cuda_sources", "")[:HINT_SOURCE_CHARS]
    bindings = files.get("load_inline_bindings", "")
    hints = []
    if bindings and "PYBIND11_MODULE" in cpp + cuda:
        hints.append(
            "Two Python bindings collide: your sources define their own PYBIND11_MODULE and "
            "load_inline(functions=[...]) generates another. Keep one: drop functions=[...], or remove "
            "your PYBIND11_MODULE block."
        )
    kernels = cuda_kernel_names(cuda + "\n" + cpp)  # one linear pass: these sources are the candidate's
    for name in [n for n in dict.fromkeys(_BOUND_NAME.findall(bindings)) if n in kernels][:8]:
        hints.append(
            f"load_inline(functions=[...]) names {name!r}, a __global__ kernel: Python can call only "
            f"host functions. Write a host function that launches {name}<<<grid, block>>>(...) and "
            "name that one in functions (declared in cpp_sources)."
        )
    if cuda and "torch/extension.h" not in cuda and _PYBIND_UNDEFINED.search(log[: 1 << 20]):
        hints.append(
            "cuda_sources use torch's Python bindings (PYBIND11_MODULE, py::, torch::) without "
            "#include <torch/extension.h>: add it at the top of cuda_sources, or move the binding to "
            "cpp_sources, which load_inline compiles with it."
        )
    return hints
