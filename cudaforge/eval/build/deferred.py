"""Builds a candidate defers: ``load_inline``/``load`` calls inside ``forward``, ``__init__`` or a helper, which
importing the candidate does not reach. Found in the source's text and built while the candidate is loaded (the
compile phase, and the CPU pool's precompile), so the call at run time finds its module already built and loaded.

A call is built ahead only when every argument is plain data known at import: constants, the module's string
and list globals, and concatenations or f-strings of them. Anything else (a call, an attribute of ``self``, a
shape) leaves the call to run time, where it still goes through the same hooks and cache.
"""

from __future__ import annotations

import ast
import re
from typing import Any

BUILDERS = {"load_inline": "load_inline", "load": "load"}
"""Last names of the calls built ahead, and the ``torch.utils.cpp_extension`` function each is."""

_PLAIN = (str, int, float, bool, type(None))


class _NotPlain(Exception):
    """An argument that cannot be known without running the candidate's code."""


def _value(node: ast.AST, namespace: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in namespace:
            raise _NotPlain(node.id)
        value = namespace[node.id]
        if isinstance(value, _PLAIN) or (isinstance(value, (list, tuple)) and all(isinstance(v, _PLAIN) for v in value)):
            return value
        raise _NotPlain(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(e, namespace) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_value(k, namespace): _value(v, namespace) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, namespace), _value(node.right, namespace)
        if type(left) is type(right) and isinstance(left, (str, list, tuple)):
            return left + right
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None:
                parts.append(str(_value(part.value, namespace)))
            elif isinstance(part, ast.Constant):
                parts.append(str(part.value))
            else:
                raise _NotPlain("formatted value")
        return "".join(parts)
    raise _NotPlain(type(node).__name__)


def _builder(func: ast.AST, namespace: dict[str, Any]) -> str | None:
    """``load_inline`` or ``load`` when ``func`` names torch's (``cpp_extension.load_inline``, or a bare name bound to
    it in the module), else None."""
    if isinstance(func, ast.Attribute) and func.attr in BUILDERS:
        return func.attr if func.attr == "load_inline" or ast.unparse(func).endswith("cpp_extension.load") else None
    if isinstance(func, ast.Name) and func.id in BUILDERS:
        bound = namespace.get(func.id)
        return func.id if str(getattr(bound, "__module__", "")).startswith("torch.utils.cpp_extension") else None
    return None


def build_sites(source: str) -> dict[str, int]:
    """How many ``load_inline``/``load`` calls ``source`` makes at import (module level) and how many it defers
    (inside a function or method), judged from the text alone."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {"import": 0, "deferred": 0}
    inside = {id(n) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
              for n in ast.walk(fn)}  # fmt: skip
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Attribute) and n.func.attr in BUILDERS) or (isinstance(n.func, ast.Name) and n.func.id in BUILDERS))]
    deferred = sum(id(n) in inside for n in calls)
    return {"import": len(calls) - deferred, "deferred": deferred}


def deferred_calls(source: str, namespace: dict[str, Any]) -> list[tuple[str, int, list[Any], dict[str, Any]]]:
    """The build calls inside the functions of ``source`` whose arguments are plain data in ``namespace`` (the
    imported module's globals): ``(which, line, args, kwargs)``, ``which`` being ``load_inline`` or ``load``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    found, seen = [], set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or id(node) in seen:
                continue
            seen.add(id(node))
            last = _builder(node.func, namespace)
            if last is None:
                continue
            try:
                args = [_value(a, namespace) for a in node.args if not isinstance(a, ast.Starred)]
                if any(isinstance(a, ast.Starred) for a in node.args):
                    raise _NotPlain("*args")
                kwargs = {}
                for kw in node.keywords:
                    if kw.arg is None:
                        raise _NotPlain("**kwargs")
                    kwargs[kw.arg] = _value(kw.value, namespace)
            except (_NotPlain, TypeError, RecursionError):
                continue
            found.append((BUILDERS[last], node.lineno, args, kwargs))
    return found


_SITE = re.compile(r"(?:load_inline|load) at line \d{1,6}")


def reported_sites(reply: Any) -> list[str]:
    """The ``prebuilt`` lines of a worker's reply that have the form :func:`prebuild` writes, at most 8: the worker
    runs the candidate's code, so its reply is read as data of a known shape, never shown as it came."""
    lines = reply.get("prebuilt") if isinstance(reply, dict) else None
    return [line for line in lines if isinstance(line, str) and _SITE.fullmatch(line)][:8] if isinstance(lines, list) else []


def prebuild(source: str, namespace: dict[str, Any]) -> list[str]:
    """Build and load, through whatever ``torch.utils.cpp_extension`` is now (the hooks of ``build_hooks``), every
    deferred call of ``source`` that :func:`deferred_calls` can know; one line per call built. A build that fails
    raises, as the call itself would (``BuildError``): the candidate fails in its compile phase. A call whose
    arguments torch refuses is left to run time."""
    import torch.utils.cpp_extension as ce

    built = []
    for which, line, args, kwargs in deferred_calls(source, namespace):
        try:
            getattr(ce, which)(*args, **kwargs)
        except TypeError:
            continue
        built.append(f"{which} at line {line}")
    return built
