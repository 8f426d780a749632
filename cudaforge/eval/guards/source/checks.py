"""The structure guards (``reference``, ``empty_body``, ``no_custom_kernel``, ``torch_compute``, ``fallback``) and the
side-effect guards (``concurrency``, ``monkey_patch``, ``io``, ``introspection``)."""

from __future__ import annotations

import ast
import re
from typing import cast

from cudaforge import pyast
from cudaforge.eval.guards.policy import REPORT, Policies
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
    listing,
    looks_like_c,
    module_rooted,
    strip_c_comments,
    under_any,
    unparsed,
)
from cudaforge.eval.guards.source.strict import strict_compute
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
    MAX_LISTED,
)

# --------------------------------------------------------------------------- the guards


def _reference_forward(reference_source: str | None) -> list[str] | None:
    if not reference_source:
        return None
    try:
        tree = pyast.parse(reference_source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return _body_dump(item)
    return None


def _body_dump(fn: ast.FunctionDef) -> list[str]:
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return [ast.dump(stmt, annotate_fields=False) for stmt in body]


def _is_empty(fn: ast.FunctionDef) -> bool:
    return all(
        isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in fn.body
    )


def structure_findings(m: CandidateModule, p: Policies, reference_source: str | None) -> list[dict[str, str]]:
    """reference, empty_body, no_custom_kernel, torch_compute, fallback."""
    found: list[dict[str, str]] = []
    cls, assigned = m.model_new()
    if isinstance(assigned, ast.Name) and assigned.id == "Model":
        found.append(
            p.found(
                "reference",
                f"`ModelNew = Model` ({line_of(assigned)}): ModelNew is the reference itself. "
                "Define a ModelNew class whose forward launches your own kernels.",
            )
        )
    if cls is not None:
        chain = m.bases(cls)
        for c in chain:
            for base in c.bases:
                if isinstance(base, ast.Name) and base.id == "Model":
                    found.append(
                        p.found(
                            "reference",
                            f"class {c.name} inherits from Model ({line_of(base)}), the "
                            "reference: subclass nn.Module and implement forward yourself.",
                        )
                    )
        reach = m.reachable(cls)
        wraps = [
            f"{line_of(n)}"
            for fn in reach + [m.method(cls, "__init__")]
            if fn is not None
            for n in ast.walk(fn)
            if isinstance(n, ast.Name) and n.id == "Model"
        ]
        if wraps:
            found.append(
                p.found(
                    "reference",
                    f"ModelNew uses the reference's Model ({listing(wraps)}): it wraps "
                    "the reference instead of computing the result itself.",
                )
            )
        forward = m.method(cls, "forward")
        if forward is not None and _is_empty(forward):
            found.append(
                p.found(
                    "empty_body",
                    f"ModelNew.forward ({line_of(forward)}) has an empty body (pass, ... "
                    "or a docstring): it computes nothing and returns None.",
                )
            )
        runs = [fn for fn in reach if fn.name != "__init__"]
        launches: list[str] = []
        if p.strict:  # an allow-list over everything forward reaches
            compute = strict_compute(m, cls, launches)
        else:  # a report of the PyTorch compute the guards name
            compute = m.torch_compute(runs) + m.torch_compute(m.kept_values(runs), calls=False)
        uses = m.uses_kernel(reach)
        if not uses and m.defines_kernels():  # reached another way (a lambda or functools.partial kept on self ...)
            if not p.strict:
                strict_compute(m, cls, launches)
            uses = launches
    else:  # ModelNew is made some other way: only what the whole module defines can be judged
        uses, compute = [], (strict_compute(m, None) if p.strict else [])
    defined = m.defines_kernels()
    if not defined:
        anywhere = compute or m.torch_compute([m.tree])
        tail = f" It computes with PyTorch: {listing(anywhere)}." if anywhere else ""
        found.append(
            p.found(
                "no_custom_kernel",
                "the candidate defines no kernel of its own (no load_inline/load "
                "CUDA extension, @triton.jit function or CuPy RawKernel)."
                + tail
                + " Write the computation as a CUDA or Triton kernel and launch it from forward.",
            )
        )
    elif cls is not None and not uses:
        found.append(
            p.found(
                "no_custom_kernel",
                f"kernels are defined ({listing(defined)}) but nothing ModelNew."
                "forward runs refers to them: forward never launches them.",
            )
        )
    forward = m.method(cls, "forward") if cls is not None else None
    reference_body = _reference_forward(reference_source)
    if forward is not None and reference_body is not None and _body_dump(forward) == reference_body:
        found.append(
            p.found(
                "reference",
                f"ModelNew.forward ({line_of(forward)}) is the reference's forward, "
                "statement for statement: it runs PyTorch, not a kernel of yours.",
            )
        )
    if compute:
        found.append(p.found("torch_compute", _torch_compute_evidence(compute, p.strict)))
    found += _fallbacks(m, p)
    return found


def _torch_compute_evidence(compute: list[str], strict: bool) -> str:
    """The ``torch_compute`` finding's words for the PyTorch compute ``forward`` runs (``strict``: what
    ``eval.torch_ops=strict`` allows instead)."""
    if not strict:
        return (
            f"ModelNew.forward runs PyTorch compute: {listing(compute)} (allowed: torch_ops=lenient; "
            "on a GPU their share of the time is measured)."
        )
    shown = "; ".join(compute[:MAX_LISTED]) + (
        f" (and {len(compute) - MAX_LISTED} more such places)" if len(compute) > MAX_LISTED else ""
    )
    return (
        f"ModelNew.forward runs PyTorch compute: {shown}. eval.torch_ops=strict allows only your own "
        "kernels, allocation, views, reshapes, casts and copies, and plain Python on sizes (ints, "
        "shapes, grids): write the rest in your kernels."
    )


def _fallbacks(m: CandidateModule, p: Policies) -> list[dict[str, str]]:
    found = []
    for node in ast.walk(m.tree):
        if isinstance(node, (ast.Try, ast.TryStar)):
            body_kernel = m.uses_kernel(m.closure([ast.Module(body=node.body, type_ignores=[])]))
            for handler in node.handlers:
                wrapped = ast.Module(body=handler.body, type_ignores=[])
                compute = m.torch_compute([wrapped])
                model = [n for n in ast.walk(wrapped) if isinstance(n, ast.Name) and n.id == "Model"]
                reraises = any(isinstance(n, ast.Raise) for n in ast.walk(wrapped))
                if compute or model:
                    what = listing(compute) if compute else "the reference's Model"
                    found.append(
                        p.found(
                            "fallback",
                            f"the except branch at {line_of(handler)} runs {what}: when the "
                            "kernel fails, PyTorch silently computes the result. Let the error surface.",
                        )
                    )
                elif body_kernel and not reraises:
                    found.append(
                        p.found(
                            "fallback",
                            f"the try at {line_of(node)} wraps your kernel ({body_kernel[0]}) "
                            f"and the except branch at {line_of(handler)} swallows its failure: let the "
                            "error surface instead.",
                        )
                    )
        elif isinstance(node, ast.With):
            for item in node.items:
                q = m.qual(item.context_expr.func) if isinstance(item.context_expr, ast.Call) else None
                if q == "contextlib.suppress" and m.uses_kernel(
                    m.closure([ast.Module(body=node.body, type_ignores=[])])
                ):
                    found.append(
                        p.found(
                            "fallback",
                            f"contextlib.suppress at {line_of(node)} swallows your kernel's "
                            "failure: let the error surface instead.",
                        )
                    )
    return found


def side_effect_findings(m: CandidateModule, p: Policies) -> list[dict[str, str]]:
    """concurrency, monkey_patch, io, introspection."""
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
    return _side_effect_verdicts(hits, env_writes, p)


REACHED_IO = ("os", "glob", "shutil", "pathlib", "io", "tempfile")
"""Modules whose reach through another module (``ce.os``) is an ``io`` finding, as importing them for files is."""

SIDE_EFFECT_ADVICE = {
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


def _side_effect_verdicts(hits: dict[str, list[str]], env_writes: list[str], p: Policies) -> list[dict[str, str]]:
    """One finding per side-effect guard that saw something, and a report for environment variables set."""
    found = [
        p.found(guard, f"{listing(items)}: {SIDE_EFFECT_ADVICE[guard]}.") for guard, items in hits.items() if items
    ]
    if env_writes:
        found.append(
            p.found("io", f"sets environment variables ({listing(env_writes)}); allowed, noted.", verdict=REPORT)
        )
    return found
