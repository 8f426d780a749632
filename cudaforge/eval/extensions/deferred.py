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
from typing import Any, cast

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
        if isinstance(value, _PLAIN) or (
            isinstance(value, (list, tuple)) and all(isinstance(v, _PLAIN) for v in value)
        ):
            return value
        raise _NotPlain(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(e, namespace) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_value(cast(ast.expr, k), namespace): _value(v, namespace) for k, v in zip(node.keys, node.values)}
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


_EXTENSION_MODULE = "torch.utils.cpp_extension"


def _builder(func: ast.AST, namespace: dict[str, Any], local: dict[str, str] | None = None) -> str | None:
    """``load_inline`` or ``load`` when ``func`` names torch's, else None: ``cpp_extension.load_inline``,
    ``torch.utils.cpp_extension.load``, ``ce.load_inline`` with ``ce`` bound to the module, or a bare name bound to one
    of the two under any name (``from torch.utils.cpp_extension import load_inline as li``), in the module or by an
    import inside the function (``local``: name -> ``load_inline``, ``load`` or ``module``)."""
    local = local or {}
    if isinstance(func, ast.Attribute) and func.attr in BUILDERS:
        base = func.value
        if isinstance(base, ast.Name):
            if local.get(base.id) == "module":
                return func.attr
            bound = namespace.get(base.id)
            if getattr(bound, "__name__", None) == _EXTENSION_MODULE:
                return func.attr
        return func.attr if ast.unparse(base).endswith("cpp_extension") else None
    if isinstance(func, ast.Name):
        if local.get(func.id) in BUILDERS:
            return local[func.id]
        bound = namespace.get(func.id)
        name: str | None = getattr(bound, "__name__", None)
        if name in BUILDERS and str(getattr(bound, "__module__", "")).startswith(_EXTENSION_MODULE):
            return name
    return None


def _local_imports(fn: ast.AST) -> dict[str, str]:
    """Names an import inside ``fn`` binds to torch's builders or to their module."""
    local: dict[str, str] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.ImportFrom) and node.module == _EXTENSION_MODULE:
            for alias in node.names:
                if alias.name in BUILDERS:
                    local[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module == "torch.utils":
            for alias in node.names:
                if alias.name == "cpp_extension":
                    local[alias.asname or alias.name] = "module"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == _EXTENSION_MODULE and alias.asname:
                    local[alias.asname] = "module"
    return local


def _local_values(fn: ast.AST, namespace: dict[str, Any]) -> dict[str, Any]:
    """The function's own plain constants (``cuda_src = \"\"\"...\"\"\"`` inside ``__init__``), in the order written:
    names assigned once to plain data, over the module's globals; a name assigned twice or otherwise is left out."""
    assigned: dict[str, list[ast.AST | None]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            assigned.setdefault(node.target.id, []).extend([None, None])  # never plain: changed or typed late
        elif isinstance(node, (ast.For, ast.comprehension, ast.With, ast.NamedExpr)):
            for bound in ast.walk(getattr(node, "target", None) or ast.Pass()):
                if isinstance(bound, ast.Name):
                    assigned.setdefault(bound.id, []).extend([None, None])
    mutated = _mutated_names(fn, namespace)
    scope = dict(namespace)
    for name in list(assigned):
        scope.pop(name, None)  # a local shadows the module's global of the same name
    for name in mutated:
        if isinstance(scope.get(name), (list, dict)):
            scope.pop(name)  # a module list the function changes in place: only run time knows it
    for _ in range(4):  # a constant built from another: a few passes, never a loop
        for name, values in assigned.items():
            if len(values) != 1 or values[0] is None or name in scope:
                continue
            try:
                value = _value(values[0], scope)
            except (_NotPlain, TypeError, RecursionError):
                continue
            if isinstance(value, (list, dict)) and name in mutated:
                continue  # ``paths = []`` then ``paths.append(...)``: only run time knows what it holds
            scope[name] = value
    return scope


def _handled_here(fn: ast.AST) -> set[int]:
    """The nodes inside a ``try`` of ``fn`` itself that has a handler not ending in ``raise``: a build failing there
    is the candidate's own handler's to decide (a handler that re-raises leaves it a compile error)."""
    handled: set[int] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Try) and any(h.body and not isinstance(h.body[-1], ast.Raise) for h in node.handlers):
            for stmt in node.body:
                handled.update(id(n) for n in ast.walk(stmt))
    return handled


def _mutated_names(fn: ast.AST, namespace: dict[str, Any]) -> set[str]:
    """Names ``fn`` may change in place: a method called on them (``append``), an item or slice stored or
    deleted, or the name handed to any call but a build's (a callee may change it)."""
    mutated: set[str] = set()
    local = _local_imports(fn)
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            mutated.add(node.value.id)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            for name in ast.walk(node.value):
                if isinstance(name, ast.Name):
                    mutated.add(name.id)
        elif isinstance(node, ast.Call) and _builder(node.func, namespace, local) is None:
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(arg, ast.Name):
                    mutated.add(arg.id)
                elif isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name):
                    mutated.add(arg.value.id)
    return mutated


def build_sites(source: str) -> dict[str, int]:
    """How many ``load_inline``/``load`` calls ``source`` makes at import (module level) and how many it defers
    (inside a function or method), judged from the text alone."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {"import": 0, "deferred": 0}
    inside = {
        id(n)
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for n in ast.walk(fn)
    }
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr in BUILDERS)
            or (isinstance(n.func, ast.Name) and n.func.id in BUILDERS)
        )
    ]
    deferred = sum(id(n) in inside for n in calls)
    return {"import": len(calls) - deferred, "deferred": deferred}


def deferred_calls(source: str, namespace: dict[str, Any]) -> list[tuple[str, int, list[Any], dict[str, Any], bool]]:
    """The build calls inside the functions of ``source`` whose arguments are plain data in ``namespace`` (the
    imported module's globals) or in the function's own constants: ``(which, line, args, kwargs, guarded)``,
    ``which`` being ``load_inline`` or ``load``, ``guarded`` whether the call is in a ``try`` with a handler."""
    return _scan(source, namespace)[0]


def deferred_misses(source: str, namespace: dict[str, Any]) -> list[str]:
    """The build calls inside functions that cannot be built ahead, each as ``load_inline at line N left to run time:
    WHY`` (the argument not known at import), for the compile phase's record."""
    return _scan(source, namespace)[1]


def _why(what: str) -> str:
    return (
        f"its argument {what} is not known at import"
        if what in KNOWN_ARGUMENTS
        else "its arguments are not known at import"
    )


NOT_BUILT_FROM = ("build_directory", "verbose", "keep_intermediates")
"""Arguments the build does not depend on (the trusted side picks the folder; the log is kept either way): one known
only at run time does not keep a call from being built ahead."""

KNOWN_ARGUMENTS = (
    "name",
    "cpp_sources",
    "cuda_sources",
    "sources",
    "functions",
    "extra_cflags",
    "extra_cuda_cflags",
    "extra_ldflags",
    "extra_include_paths",
    "build_directory",
    "verbose",
    "with_cuda",
    "is_python_module",
    "with_pytorch_error_handling",
    "keep_intermediates",
    "use_pch",
    "is_standalone",
    "no_implicit_headers",
)
"""torch's own parameter names of ``load_inline``/``load``: the only argument names a miss's reason may show."""


def _scan(
    source: str, namespace: dict[str, Any]
) -> tuple[list[tuple[str, int, list[Any], dict[str, Any], bool]], list[str]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return [], []
    found, missed, seen = [], [], set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        local = _local_imports(fn)
        guarded = _handled_here(fn)
        scope = None
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or id(node) in seen:
                continue
            last = _builder(node.func, namespace, local)
            if last is None:
                continue
            seen.add(id(node))
            scope = _local_values(fn, namespace) if scope is None else scope
            which = BUILDERS[last]
            try:
                if any(isinstance(a, ast.Starred) for a in node.args):
                    raise _NotPlain("*args")
                args = []
                for index, a in enumerate(node.args):
                    try:
                        args.append(_value(a, scope))
                    except _NotPlain:
                        raise _NotPlain(
                            ("name", "sources" if which == "load" else "cpp_sources")[min(index, 1)]
                        ) from None
                kwargs = {}
                for kw in node.keywords:
                    if kw.arg is None:
                        raise _NotPlain("**kwargs")
                    try:
                        kwargs[kw.arg] = _value(kw.value, scope)
                    except _NotPlain:
                        if kw.arg in NOT_BUILT_FROM:
                            continue  # a folder made at run time, say: the build ahead does without it
                        raise _NotPlain(kw.arg) from None
            except (_NotPlain, TypeError, RecursionError) as exc:
                what = exc.args[0] if isinstance(exc, _NotPlain) and exc.args else ""
                missed.append(f"{which} at line {node.lineno} left to run time: {_why(str(what))}")
                continue
            found.append((which, node.lineno, args, kwargs, id(node) in guarded))
    return found, missed


_SITE = re.compile(r"(?:load_inline|load) at line \d{1,6}")
_MISS = re.compile(
    r"(?:load_inline|load) at line \d{1,6} (?:left to run time: (?:its argument (?:"
    + "|".join(KNOWN_ARGUMENTS)
    + r") is not known at import|its arguments are not known at import|torch "
    r"refused its arguments)|failed ahead, inside the candidate's own try: left to its handler)"
)


def reported_sites(reply: Any) -> list[str]:
    """The ``prebuilt`` lines of a worker's reply that have the form :func:`prebuild` writes, at most 8: the worker
    runs the candidate's code, so its reply is read as data of a known shape, never shown as it came."""
    lines = reply.get("prebuilt") if isinstance(reply, dict) else None
    return (
        [line for line in lines if isinstance(line, str) and _SITE.fullmatch(line)][:8]
        if isinstance(lines, list)
        else []
    )


def reported_misses(reply: Any) -> list[str]:
    """The ``deferred`` lines of a worker's reply (calls left to run time, and why) that have the form
    :func:`prebuild` writes, at most 8; read as data of a known shape, like :func:`reported_sites`."""
    lines = reply.get("deferred") if isinstance(reply, dict) else None
    return (
        [line for line in lines if isinstance(line, str) and _MISS.fullmatch(line)][:8]
        if isinstance(lines, list)
        else []
    )


def prebuild(source: str, namespace: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Build and load, through whatever ``torch.utils.cpp_extension`` is now (the hooks of ``build_hooks``), every
    deferred call of ``source`` that :func:`deferred_calls` can know. Returns one line per call built, and one per
    call left to run time with the reason (:func:`deferred_misses`). A build that fails raises, as the call itself
    would (``BuildError``): the candidate fails in its compile phase; unless the call sits in a ``try`` of the
    candidate's, whose handler then decides at run time (the failed build is cached, so that costs no second
    compile). A call whose arguments torch refuses is left to run time."""
    import torch.utils.cpp_extension as ce

    from cudaforge.eval.extensions.records import BuildError, ToolchainIncomplete

    built, missed = [], deferred_misses(source, namespace)
    for which, line, args, kwargs, guarded in deferred_calls(source, namespace):
        try:
            getattr(ce, which)(*args, **kwargs)
        except TypeError:
            missed.append(f"{which} at line {line} left to run time: torch refused its arguments")
            continue
        except BuildError as exc:  # the candidate's sources failed; the machine's faults are never left to it
            if not guarded or isinstance(exc, ToolchainIncomplete):
                raise
            missed.append(f"{which} at line {line} failed ahead, inside the candidate's own try: left to its handler")
            continue
        built.append(f"{which} at line {line}")
    return built, missed
