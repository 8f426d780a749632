"""Names as the source guards read them: module paths rerooted (:func:`reroot`), names given as literal strings
rewritten into attributes (:class:`LiteralNames`), what a statement binds (:func:`bound_name`), and the module's
top-level statements without its ``__main__`` block (:func:`top_level`, :func:`is_main_guard`). The candidate's
module itself, read with these, is :class:`cudaforge.eval.guards.source.module.CandidateModule`."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator

REROOTS = {
    "torch",
    "os",
    "sys",
    "subprocess",
    "glob",
    "shutil",
    "io",
    "builtins",
    "importlib",
    "pickle",
    "ctypes",
    "socket",
    "threading",
    "multiprocessing",
    "pathlib",
    "tempfile",
    "signal",
    "marshal",
    "runpy",
    "inspect",
    "gc",
    "types",
    "_thread",
    "concurrent",
    "asyncio",
    "numpy",
    "triton",
}
"""Modules that other modules hold as attributes (``torch.library.torch``, ``torch.utils.cpp_extension.os``): a path
through one of them is the path from it."""


def reroot(qual: str) -> str:
    """``qual`` named from the last module of :data:`REROOTS` it passes through after its first part (and torch's
    ``_C`` from torch): ``torch.library.torch.relu`` is ``torch.relu``, ``torch.autograd.function._C.x`` is
    ``torch._C.x``."""
    parts = qual.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in REROOTS:
            return ".".join(parts[i:])
        if parts[i] == "_C" and parts[0] == "torch" and i > 1:
            return ".".join(["torch", *parts[i:]])
    return qual


def is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    parts = [node.test.left, *node.test.comparators]
    names = [p for p in parts if isinstance(p, ast.Name) and p.id == "__name__"]
    mains = [p for p in parts if isinstance(p, ast.Constant) and p.value == "__main__"]
    return bool(names and mains)


def top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Top-level statements, descending into if/try/with blocks (not into functions or classes)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.With, ast.Try)) or type(node).__name__ == "TryStar":
            for block in ("body", "orelse", "finalbody"):
                yield from top_level(getattr(node, block, []) or [])
            for handler in getattr(node, "handlers", []):
                yield from top_level(handler.body)


def bound_name(node: ast.AST) -> str | None:
    """The name a node binds (a def, class, assignment target, parameter, import or ``except ... as``), or None."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return node.id
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.alias):
        return node.asname or node.name.split(".")[0]
    return node.name if isinstance(node, ast.ExceptHandler) and node.name else None


def literal_name(node: ast.AST, dotted: bool = False) -> str | None:
    """The attribute name a string literal spells (``a.b`` too when ``dotted``), or None."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    parts = node.value.split(".") if dotted else [node.value]
    return node.value if all(part.isidentifier() for part in parts) else None


class LiteralNames:
    """Rewrites lookups of literal attribute names into plain attribute accesses, so that every guard reads
    ``getattr(x, "relu")`` as ``x.relu``, ``operator.attrgetter("relu")(F)`` as ``F.relu``,
    ``operator.methodcaller("relu", 1)(x)`` as ``x.relu(1)`` and ``F.__dict__["relu"]`` (or ``.get("relu")``) as
    ``F.relu``. Only the builtins and the operator module's own functions, as the candidate imports them (a function
    of its own called ``getattr`` is left alone). Iterative, children before parents, so that lookups nest
    (``getattr(getattr(torch, "nn"), "functional")``) and a deep expression costs no recursion. The same pass
    counts the names the candidate binds."""

    def __init__(self) -> None:
        self.operator: dict[str, str] = {}
        """Local name -> ``operator``, ``operator.attrgetter`` or ``operator.methodcaller``."""
        self.bindings: Counter[str] = Counter()
        """How often each name is bound anywhere (def, class, assignment, parameter, import, ``as``, ``for``)."""
        self.definitions: set[str] = set()
        """Names bound only by one module-level def or class: there, a bare name is the candidate's, not a builtin."""

    def rewrite(self, tree: ast.Module) -> ast.Module:
        """``tree`` with every literal lookup rewritten in place (``bindings`` and ``definitions`` filled)."""
        order: list[ast.AST] = []
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            order.append(node)
            bound = bound_name(node)
            if bound:
                self.bindings[bound] += 1
            if isinstance(node, ast.Import):
                self.operator.update(
                    (a.asname or a.name, "operator") for a in node.names if a.name in ("operator", "_operator")
                )
            elif isinstance(node, ast.ImportFrom) and node.module in ("operator", "_operator") and not node.level:
                self.operator.update((a.asname or a.name, f"operator.{a.name}") for a in node.names)
            stack.extend(ast.iter_child_nodes(node))
        self.definitions = {
            node.name
            for node in top_level(tree.body)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and self.bindings[node.name] == 1
        }
        for node in reversed(order):
            for name, value in ast.iter_fields(node):
                if isinstance(value, ast.AST):
                    setattr(node, name, self._resolve(value))
                elif isinstance(value, list):
                    value[:] = [self._resolve(v) if isinstance(v, ast.AST) else v for v in value]
        return tree

    def _resolve(self, node: ast.AST) -> ast.AST:
        for _ in range(8):  # one rewrite can make another possible: methodcaller("get", "relu")(F.__dict__)
            new = self._rewritten(node)
            if new is node:
                break
            node = new
        return node

    def _operator(self, func: ast.expr) -> str:
        """``attrgetter``/``methodcaller`` when ``func`` is the operator module's, else ``""``."""
        if isinstance(func, ast.Name):
            name = self.operator.get(func.id, "")
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            name = f"operator.{func.attr}" if self.operator.get(func.value.id) == "operator" else ""
        else:
            name = ""
        return name.removeprefix("operator.") if name in ("operator.attrgetter", "operator.methodcaller") else ""

    @staticmethod
    def _attribute(value: ast.expr, name: str, where: ast.AST) -> ast.Attribute:
        return ast.copy_location(ast.Attribute(value, name, ast.Load()), where)

    def _rewritten(self, node: ast.AST) -> ast.AST:
        """The plain attribute access ``node`` stands for, or ``node`` itself."""
        if isinstance(node, ast.Subscript):
            value = node.value
            if (
                isinstance(value, ast.Attribute)
                and value.attr == "__dict__"
                and isinstance(node.ctx, ast.Load)
                and literal_name(node.slice)
            ):
                return self._attribute(value.value, node.slice.value, node)  # type: ignore[attr-defined]
            return node
        if not isinstance(node, ast.Call):
            return node
        func, args = node.func, node.args
        if (
            isinstance(func, ast.Name)
            and func.id == "getattr"
            and "getattr" not in self.definitions
            and 2 <= len(args) <= 3
            and not node.keywords
            and literal_name(args[1])
        ):
            return self._attribute(args[0], args[1].value, node)  # type: ignore[attr-defined]
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "get"
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "__dict__"
            and 1 <= len(args) <= 2
            and not node.keywords
            and literal_name(args[0])
        ):
            return self._attribute(func.value.value, args[0].value, node)  # type: ignore[attr-defined]
        if not isinstance(func, ast.Call) or len(args) != 1 or node.keywords or not func.args:
            return node
        kind = self._operator(func.func)
        if kind == "attrgetter" and len(func.args) == 1 and not func.keywords and literal_name(func.args[0], True):
            value = args[0]
            for part in func.args[0].value.split("."):  # type: ignore[attr-defined]
                value = self._attribute(value, part, node)
            return value
        if kind == "methodcaller" and literal_name(func.args[0]):
            method = self._attribute(args[0], func.args[0].value, node)  # type: ignore[attr-defined]
            return ast.copy_location(ast.Call(method, func.args[1:], func.keywords), node)
        return node
