"""What an import or an import-system change in the candidate names, and whether an ``open`` reads."""

from __future__ import annotations

import ast

from cudaforge.eval.guards.source.module import CandidateModule, under_any
from cudaforge.eval.guards.source.vocab import (
    CONCURRENCY_MODULES,
    DYNAMIC_MODULES,
    DYNAMIC_NAMES,
    IMPORT_SYSTEM,
    INTROSPECTION_MODULES,
    MUTATORS,
    NETWORK_MODULES,
)


def opens_for_reading(call: ast.Call, mode_index: int = 1) -> bool:
    mode = (
        call.args[mode_index]
        if len(call.args) > mode_index
        else next((k.value for k in call.keywords if k.arg == "mode"), None)
    )
    if mode is None:
        return True
    if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
        return True
    return "+" in mode.value or not any(c in mode.value for c in "wax")


def reexported_module(m: CandidateModule, node: ast.AST, prefixes: set[int]) -> str | None:
    """The module an attribute chain reaches through another module that holds it (``ce.subprocess``,
    ``torch.library.torch``), as an import of it would name it; None for a chain that stays in the module it starts
    from, or a part of a longer chain (``prefixes``: the ids of such parts)."""
    if not isinstance(node, ast.Attribute) or id(node) in prefixes:
        return None
    q = m.qual(node)
    first: ast.expr = node
    while isinstance(first, ast.Attribute):
        first = first.value
    start = m.qual(first) if isinstance(first, ast.Name) else None
    if not q or not start:
        return None
    reached = next((i for i, part in enumerate(q.split(".")) if part), 0)
    module = q.split(".")[reached]
    return module if module != start.split(".")[0] else None


def imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The module names an import statement loads (a relative one keeps its dots)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return ["." * node.level + (node.module or "")]


def import_guard(name: str) -> str | None:
    """The guard an import of module ``name`` is a finding of (``dynamic_code`` only for the modules it names;
    whether an unknown module is one is decided with the candidate's own names), or None."""
    root = name.split(".")[0]
    if root in CONCURRENCY_MODULES or name.startswith("torch.multiprocessing"):
        return "concurrency"
    if root in NETWORK_MODULES:
        return "io"
    if root in INTROSPECTION_MODULES:
        return "introspection"
    if root in DYNAMIC_MODULES or under_any(name, DYNAMIC_NAMES):
        return "dynamic_code"
    return None


def import_system_object(m: CandidateModule, node: ast.AST) -> str | None:
    """The import-system list or dict (``sys.path``, ``sys.modules`` ...) an expression is, or None."""
    q = m.qual(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    return under_any(q, IMPORT_SYSTEM, exact=True) if q else None


def import_system(m: CandidateModule, target: ast.AST) -> str | None:
    """The import-system list or dict that assigning to or deleting ``target`` changes, or None (rebinding a name,
    or an attribute of the candidate's own object, changes none)."""
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return None
    if isinstance(target, ast.Subscript):
        while isinstance(target, ast.Subscript):
            target = target.value
        return import_system_object(m, target)
    return import_system_object(m, target) if isinstance(target, ast.Attribute) else None


def import_system_call(m: CandidateModule, call: ast.Call) -> str | None:
    """The import-system list or dict a call changes in place (``sys.path.insert(...)``), or None."""
    func = call.func
    return import_system_object(m, func.value) if isinstance(func, ast.Attribute) and func.attr in MUTATORS else None
