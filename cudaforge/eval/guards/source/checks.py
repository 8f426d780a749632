"""One check per static guard (their definitions: :mod:`cudaforge.eval.guards.catalog`): the structure guards
(``reference``, ``empty_body``, ``no_custom_kernel``, ``torch_compute``, ``fallback``), the side-effect guards
(``concurrency``, ``monkey_patch``, ``io``, ``introspection``) and ``dynamic_code``. Each takes the candidate
(:class:`~cudaforge.eval.guards.source.candidate.StaticCandidate`) and returns what it saw, one finding each."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from cudaforge import pyast
from cudaforge.eval.guards.catalog import REPORT, Seen
from cudaforge.eval.guards.source.candidate import StaticCandidate
from cudaforge.eval.guards.source.dynamic import dynamic_code_lines
from cudaforge.eval.guards.source.effects import SIDE_EFFECT_ADVICE
from cudaforge.eval.guards.source.module import line_of, listing
from cudaforge.eval.guards.source.vocab import MAX_LISTED


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


def reference(c: StaticCandidate) -> list[str]:
    """``reference``: ``ModelNew = Model``, a class inheriting from it, ModelNew using it, or the reference's forward
    copied statement for statement."""
    m, s, found = c.module, c.structure, []
    if isinstance(s.assigned, ast.Name) and s.assigned.id == "Model":
        found.append(
            f"`ModelNew = Model` ({line_of(s.assigned)}): ModelNew is the reference itself. "
            "Define a ModelNew class whose forward launches your own kernels."
        )
    if s.cls is None:
        return found
    for cls in m.bases(s.cls):
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id == "Model":
                found.append(
                    f"class {cls.name} inherits from Model ({line_of(base)}), the "
                    "reference: subclass nn.Module and implement forward yourself."
                )
    wraps = [
        f"{line_of(n)}"
        for fn in s.reach + [m.method(s.cls, "__init__")]
        if fn is not None
        for n in ast.walk(fn)
        if isinstance(n, ast.Name) and n.id == "Model"
    ]
    if wraps:
        found.append(
            f"ModelNew uses the reference's Model ({listing(wraps)}): it wraps "
            "the reference instead of computing the result itself."
        )
    forward = m.method(s.cls, "forward")
    reference_body = _reference_forward(c.reference_source)
    if forward is not None and reference_body is not None and _body_dump(forward) == reference_body:
        found.append(
            f"ModelNew.forward ({line_of(forward)}) is the reference's forward, "
            "statement for statement: it runs PyTorch, not a kernel of yours."
        )
    return found


def empty_body(c: StaticCandidate) -> list[str]:
    """``empty_body``: a forward of only ``pass``, ``...`` or a docstring."""
    forward = c.module.method(c.structure.cls, "forward") if c.structure.cls is not None else None
    if forward is None or not _is_empty(forward):
        return []
    return [
        f"ModelNew.forward ({line_of(forward)}) has an empty body (pass, ... "
        "or a docstring): it computes nothing and returns None."
    ]


def no_custom_kernel(c: StaticCandidate) -> list[str]:
    """``no_custom_kernel``: no kernel of its own defined, or none that forward launches."""
    s = c.structure
    if not s.defined:
        anywhere = s.compute or c.module.torch_compute([c.tree])
        tail = f" It computes with PyTorch: {listing(anywhere)}." if anywhere else ""
        return [
            "the candidate defines no kernel of its own (no load_inline/load "
            "CUDA extension, @triton.jit function or CuPy RawKernel)."
            + tail
            + " Write the computation as a CUDA or Triton kernel and launch it from forward."
        ]
    if s.cls is not None and not s.uses:
        return [
            f"kernels are defined ({listing(s.defined)}) but nothing ModelNew."
            "forward runs refers to them: forward never launches them."
        ]
    return []


def torch_compute(c: StaticCandidate) -> list[str]:
    """``torch_compute``: the PyTorch compute forward runs (under ``torch_ops=strict``, whatever the allow-list
    refuses)."""
    return [_torch_compute_evidence(c.structure.compute, c.strict)] if c.structure.compute else []


def _side_effect(c: StaticCandidate, guard: str) -> list[str]:
    items = c.side_effects.hits.get(guard, [])
    return [f"{listing(items)}: {SIDE_EFFECT_ADVICE[guard]}."] if items else []


def concurrency(c: StaticCandidate) -> list[str]:
    """``concurrency``: threads, processes, new streams or CUDA graphs, in Python or in the CUDA sources."""
    return _side_effect(c, "concurrency")


def monkey_patch(c: StaticCandidate) -> list[str]:
    """``monkey_patch``: changes to imported modules (torch, the clocks, builtins) and torch's global state."""
    return _side_effect(c, "monkey_patch")


def io(c: StaticCandidate) -> list[str | Seen]:
    """``io``: reading files, the environment or the network; writing environment variables is only noted."""
    found: list[str | Seen] = list(_side_effect(c, "io"))
    writes = c.side_effects.env_writes
    if writes:
        found.append(Seen(f"sets environment variables ({listing(writes)}); allowed, noted.", REPORT))
    return found


def introspection(c: StaticCandidate) -> list[str]:
    """``introspection``: gc, inspect, frames, ``sys.modules``, ctypes, computed lookups on modules."""
    return _side_effect(c, "introspection")


def dynamic_code(c: StaticCandidate) -> Sequence[str]:
    """``dynamic_code``: code the guards cannot see (one finding per line, at most ``MAX_LISTED``)."""
    return dynamic_code_lines(c.module)


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


def fallback(c: StaticCandidate) -> list[str]:
    """``fallback``: a try/except whose handler runs PyTorch or the reference, or swallows a kernel's failure;
    ``contextlib.suppress`` around a kernel."""
    m = c.module
    found: list[str] = []
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
                        f"the except branch at {line_of(handler)} runs {what}: when the "
                        "kernel fails, PyTorch silently computes the result. Let the error surface."
                    )
                elif body_kernel and not reraises:
                    found.append(
                        f"the try at {line_of(node)} wraps your kernel ({body_kernel[0]}) "
                        f"and the except branch at {line_of(handler)} swallows its failure: let the "
                        "error surface instead."
                    )
        elif isinstance(node, ast.With):
            for item in node.items:
                q = m.qual(item.context_expr.func) if isinstance(item.context_expr, ast.Call) else None
                if q == "contextlib.suppress" and m.uses_kernel(
                    m.closure([ast.Module(body=node.body, type_ignores=[])])
                ):
                    found.append(
                        f"contextlib.suppress at {line_of(node)} swallows your kernel's "
                        "failure: let the error surface instead."
                    )
    return found
