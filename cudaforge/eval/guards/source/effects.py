"""The walk the side-effect guards share (``concurrency``, ``monkey_patch``, ``io``, ``introspection``): what each
sees in the candidate's Python and in the C, C++ and CUDA sources it builds; their checks
(:mod:`cudaforge.eval.guards.source.checks`) turn it into findings."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import cast

from cudaforge.eval.guards.source.imports import (
    import_guard,
    import_system,
    import_system_call,
    imported_modules,
    opens_for_reading,
    reexported_module,
)
from cudaforge.eval.guards.source.module import (
    CandidateModule,
    build_source_ids,
    line_of,
    looks_like_c,
    module_rooted,
    strip_c_comments,
    under_any,
    unparsed,
)
from cudaforge.eval.guards.source.vocab import (
    BACKEND_SETTERS,
    CONCURRENCY_NAMES,
    CUDA_CONCURRENCY,
    CUDA_IO,
    CUDA_PATCH,
    FILE_READ_METHODS,
    FILE_READ_MODULES,
    FILE_READS,
    GLOBAL_STATE_CALLS,
    INTROSPECTION_ATTRS,
    INTROSPECTION_BUILTINS,
    INTROSPECTION_NAMES,
)


@dataclass
class SideEffects:
    """What the side-effect guards saw in their shared walk, by guard, and the environment variables written."""

    hits: dict[str, list[str]]
    env_writes: list[str]


def side_effect_hits(m: CandidateModule) -> SideEffects:
    """What the side-effect guards (concurrency, monkey_patch, io, introspection) see, in one walk of the tree."""
    hits: dict[str, list[str]] = {"concurrency": [], "monkey_patch": [], "io": [], "introspection": []}
    env_writes: list[str] = []
    handled: set[int] = set()
    build_sources = build_source_ids(m)

    prefixes = {id(n.value) for n in ast.walk(m.tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(m.tree):
        where = line_of(node)
        reached = reexported_module(m, node, prefixes)  # ``ce.subprocess``: as good as importing subprocess
        if reached and (import_guard(reached) in ("concurrency", "introspection", "io") or reached in REACHED_IO):
            reached_guard = import_guard(reached) or "io"
            hits[reached_guard].append(f"{unparsed(node, 60)} reaches {reached} through another module ({where})")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in imported_modules(node):
                guard = import_guard(name)
                if guard in ("concurrency", "introspection", "io"):
                    hits[guard].append(f"import {name} ({where}{', network' if guard == 'io' else ''})")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            _assignment_hits(m, node, where, hits, env_writes, handled)
        elif isinstance(node, ast.Call):
            q = m.qual(node.func) or ""
            func = node.func
            if q.startswith(CONCURRENCY_NAMES) and "current_stream" in unparsed(node, 1 << 20):
                handled.update(id(n) for n in ast.walk(func))  # torch's current stream, wrapped: not a new one
            elif import_system_call(m, node):  # the dynamic_code guard's
                handled.update(id(n) for n in ast.walk(func))
            elif (
                isinstance(func, ast.Name)
                and func.id in ("setattr", "delattr")
                and node.args
                and module_rooted(m, node.args[0])
            ):
                hits["monkey_patch"].append(f"{func.id}({unparsed(node.args[0], 80)}, ...) ({where})")
            elif (
                isinstance(func, ast.Name)
                and func.id == "getattr"
                and len(node.args) >= 2
                and module_rooted(m, node.args[0])
                and not isinstance(node.args[1], ast.Constant)
            ):
                hits["introspection"].append(f"getattr({unparsed(node.args[0], 80)}, <computed name>) ({where})")
            elif isinstance(func, ast.Name) and func.id in INTROSPECTION_BUILTINS and m.builtin(func.id):
                hits["introspection"].append(f"{func.id}() ({where})")
            elif (isinstance(func, ast.Name) and func.id == "open" and m.builtin("open")) or q in (
                "io.open",
                "codecs.open",
                "os.open",
            ):
                if opens_for_reading(node):
                    hits["io"].append(f"open(...) for reading ({where})")
            elif q.startswith("torch.library.") and any(
                isinstance(c, ast.Constant) and isinstance(c.value, str) and re.match(r"(aten|prims)\b", c.value)
                for c in ast.walk(node)
            ):
                hits["monkey_patch"].append(f"{q}(...) on torch's own ops ({where})")
            elif q.startswith(GLOBAL_STATE_CALLS) or (
                q.startswith("torch.backends.") and q.split(".")[-1].startswith(BACKEND_SETTERS)
            ):
                hits["monkey_patch"].append(f"{q}() ({where})")
            elif isinstance(func, ast.Attribute) and m.qual(func.value) == "os.environ":
                handled.add(id(func.value))
                if func.attr in ("setdefault", "update", "pop", "clear", "__setitem__"):
                    env_writes.append(f"os.environ.{func.attr}() ({where})")
                else:
                    hits["io"].append(f"os.environ.{func.attr}() ({where}, reads the environment)")
            elif q in ("os.putenv", "os.unsetenv"):
                env_writes.append(f"{q}() ({where})")
            elif (
                q in FILE_READS
                or q.startswith(FILE_READ_MODULES)
                or (isinstance(func, ast.Attribute) and func.attr in FILE_READ_METHODS)
            ):
                hits["io"].append(f"{q or cast(ast.Attribute, func).attr}() ({where})")  # no name: a method
            elif isinstance(func, ast.Attribute) and not q and func.attr == "open" and opens_for_reading(node, 0):
                hits["io"].append(f".open(...) for reading ({where})")
        elif isinstance(node, ast.Name) and node.id == "__builtins__":
            hits["introspection"].append(f"__builtins__ ({where})")
        if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in handled:
            named = m.qual(node) if not isinstance(node, ast.Name) or node.id in m.aliases else None
            if isinstance(node, ast.Attribute) and node.attr in INTROSPECTION_ATTRS:
                hits["introspection"].append(f".{node.attr} ({where})")
            if named:
                if named.startswith(CONCURRENCY_NAMES):
                    hits["concurrency"].append(f"{named} ({where})")
                    handled.update(id(n) for n in ast.walk(node))
                elif under_any(named, INTROSPECTION_NAMES):
                    hits["introspection"].append(f"{named} ({where})")
                    handled.update(id(n) for n in ast.walk(node))
                elif named == "os.environ":
                    hits["io"].append(f"os.environ ({where}, reads the environment)")
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (id(node) in build_sources or looks_like_c(node.value))
        ):
            _cuda_source_hits(node.value, where, hits)
    return SideEffects(hits, env_writes)


REACHED_IO = ("os", "glob", "shutil", "pathlib", "io", "tempfile")
"""Modules whose reach through another module (``ce.os``) is an ``io`` finding, as importing them for files is."""

SIDE_EFFECT_ADVICE: dict[str, str] = {
    "concurrency": "work must run on the calling thread and torch's current stream, where the timing sees it; "
    "no threads, processes, signal handlers, new streams, CUDA graphs or profiler controls",
    "monkey_patch": "a candidate may not change torch, the clocks or other modules the evaluator and the reference use",
    "io": "a kernel has no reason to read files, the environment or the network",
    "introspection": "these reach into the evaluator (the reference, its outputs, the clocks); a kernel "
    "needs none of them",
}
"""What each side-effect guard's finding tells the Coder to do instead."""


def _assignment_hits(
    m: CandidateModule,
    node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete,
    where: str,
    hits: dict[str, list[str]],
    env_writes: list[str],
    handled: set[int],
) -> None:
    """An assignment's (or deletion's) side effects: a module's attribute changed (``monkey_patch``), an environment
    variable set (noted), the import system's state (left to the dynamic_code guard); what it judged goes into
    ``handled``."""
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    for target in targets:
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            continue
        base = target.value
        if import_system(m, target):  # the dynamic_code guard's
            handled.update(id(n) for n in ast.walk(target))
        elif m.qual(base) == "os.environ":
            env_writes.append(f"os.environ[...] ({where})")
            handled.add(id(base))
        elif module_rooted(m, target):
            hits["monkey_patch"].append(f"{unparsed(target, 80)} = ... ({where})")
            handled.update(id(n) for n in ast.walk(target))


def _cuda_source_hits(text: str, where: str, hits: dict[str, list[str]]) -> None:
    """What a CUDA source in the candidate (a string it builds, or one that reads as C) does that the side-effect
    guards forbid: streams and threads, code in ATen's namespace, file and network calls."""
    code = strip_c_comments(text)
    for match in CUDA_CONCURRENCY.finditer(code):
        hits["concurrency"].append(f"{match.group(0)} in the CUDA source ({where})")
    for match in CUDA_PATCH.finditer(code):
        what = "defines code in ATen's namespace" if match.group(0).startswith("namespace") else "re-registers aten ops"
        hits["monkey_patch"].append(f"{match.group(0)} in the CUDA source ({where}): {what}")
    for match in CUDA_IO.finditer(code):
        hits["io"].append(f"{match.group(0).rstrip('( ')} in the CUDA source ({where})")
