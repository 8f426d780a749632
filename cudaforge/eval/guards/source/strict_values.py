"""The expressions of ``torch_ops=strict`` (:class:`StrictValues`, a part of the strict reading in :mod:`.strict`):
what each expression may evaluate to (names, attributes, subscripts, operators, calls), and the flags on the
PyTorch compute found in them; with the units the interpreter works in (:class:`Scope`, :class:`Job`)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cudaforge.eval.guards.source.module import CandidateModule, unparsed
from cudaforge.eval.guards.source.names import literal_name, reroot
from cudaforge.eval.guards.source.strict_calls import StrictCalls
from cudaforge.eval.guards.source.strict_vocab import (
    CONTAINER_METHODS,
    EMPTY,
    KERNEL,
    LAYER_DATA,
    NN_MODULE_METHODS,
    OPERATOR_SYMBOLS,
    STATE_STORES,
    TENSOR_ATTRIBUTES,
    TENSOR_LAYOUT_METHODS,
    TENSOR_SCALAR_ATTRIBUTES,
    TENSOR_SCALAR_METHODS,
    TENSOR_VIEW_ATTRIBUTES,
    TORCH_CONSTANT,
    TORCH_MODULES,
    TORCH_SCALAR,
    N,
    T,
    U,
    may_tensor,
    short_torch_name,
)
from cudaforge.eval.guards.source.vocab import TORCH_COMPILERS, TORCH_LAYOUT


class BindTarget:
    """A step of an evaluation: bind a comprehension's target once its iterable is known."""

    __slots__ = ("comp",)

    def __init__(self, comp: ast.comprehension) -> None:
        self.comp = comp


@dataclass(eq=False)
class Scope:
    """A module, function or lambda: the names it binds, and where names it does not bind are looked up."""

    node: ast.AST
    parent: Scope | None
    cls: ast.ClassDef | None
    """The class a function is a method of (or a function nested in one is)."""
    bound: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    @property
    def key(self) -> int:
        return 0 if isinstance(self.node, ast.Module) else id(self.node)


@dataclass(eq=False)
class Job:
    """One statement (its header, for compound ones) or one lambda's body, evaluated in ``scope``; ``cls`` when the
    statement is in that class's body (its assignments and defs are the class's attributes)."""

    scope: Scope
    node: ast.AST
    cls: ast.ClassDef | None = None


class StrictValues(StrictCalls):
    """The expression half of the strict reading: mixed into its interpreter (``strict._Strict``), whose state and
    methods (``_read``, ``_write``, ``_assign``, ``_name`` ...) these use."""

    m: CandidateModule
    loc: dict[tuple, set]
    callees: set[int]
    prefixes: set[int]
    flags: list[tuple[ast.AST, str | Callable[[], str], str]]

    if TYPE_CHECKING:  # the interpreter's own methods, which these use

        def _assign(self, target: ast.AST, tokens, job: Job, top: bool = False) -> None: ...
        def _name(self, name: str, job: Job) -> set: ...
        def _store_attr(self, base, attr: str, tokens) -> None: ...

    # ---------------------------------------------------------------- expressions

    def _eval(self, expr: ast.AST | None, job: Job) -> frozenset:
        """The tokens of ``expr``, its parts evaluated first (iteratively: a deep expression costs no recursion)."""
        if expr is None:
            return frozenset({N})
        values: dict[int, frozenset] = {}
        stack: list[tuple[object, bool]] = [(expr, False)]
        while stack:
            node, done = stack.pop()
            if isinstance(node, BindTarget):
                self._assign(node.comp.target, self._elements(values.get(id(node.comp.iter), EMPTY)), job)
                continue
            if not done:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(self._children(node)))  # type: ignore[arg-type]
            else:
                values[id(node)] = frozenset(self._value(node, values, job))  # type: ignore[arg-type]
        return values[id(expr)]

    def _children(self, node: ast.AST) -> list:
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            order: list = []
            for g in node.generators:
                order += [g.iter, BindTarget(g), *g.ifs]
            return order + ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
        if isinstance(node, ast.Lambda):
            return [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
        if isinstance(node, ast.NamedExpr):
            return [node.value]
        if isinstance(node, ast.Call):
            self.callees.add(id(node.func))
            return [node.func, *node.args, *(k.value for k in node.keywords)]
        if isinstance(node, ast.Attribute):
            self.prefixes.add(id(node.value))
            return [node.value]
        if isinstance(node, ast.Dict):
            return [*(k for k in node.keys if k is not None), *node.values]
        return [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]

    def _value(self, node: ast.AST, values: dict[int, frozenset], job: Job) -> set:
        def v(child: ast.AST | None) -> frozenset:
            return values.get(id(child), EMPTY) if child is not None else EMPTY

        if isinstance(node, (ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.Slice)):
            return {N}
        if isinstance(node, ast.Name):
            tokens = self._name(node.id, job)
            tokens = tokens or ({U} if self.judging else tokens)
            self._value_flag(node, tokens)
            return tokens
        if isinstance(node, ast.Attribute):
            base = v(node.value) or ({U} if self.judging else EMPTY)
            tokens = self._attr(base, node.attr)
            self._value_flag(node, tokens)
            return tokens
        if isinstance(node, ast.Subscript):
            return self._subscript(v(node.value), v(node.slice), node)
        if isinstance(node, ast.Call):
            return self._call(node, values, job)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr)):
                return {N}  # "%d" % n: string formatting
            return self._binop(node.op, v(node.left), v(node.right), node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return {N}
            operand = v(node.operand)
            if may_tensor(operand):
                symbol = OPERATOR_SYMBOLS[type(node.op)]
                self._flag(node, lambda: f"{unparsed(node)} applies PyTorch's unary {symbol}", "op")
                return {T}
            return set(operand) or {N}
        if isinstance(node, ast.Compare):
            parts = [v(node.left), *(v(c) for c in node.comparators)]
            if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return {N}
            if any(may_tensor(p) for p in parts):
                symbol = next(
                    OPERATOR_SYMBOLS.get(type(op), "comparison")
                    for op in node.ops
                    if not isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn))
                )
                self._flag(node, lambda: f"{unparsed(node)} compares with PyTorch's {symbol} operator", "op")
                return {T}
            return {N}
        if isinstance(node, ast.BoolOp):
            return set().union(*(v(x) for x in node.values))
        if isinstance(node, ast.IfExp):
            return set(v(node.body) | v(node.orelse))
        if isinstance(node, ast.Tuple):
            key = id(node)
            for i, element in enumerate(node.elts):
                if isinstance(element, ast.Starred):
                    self._write(("elems", key), self._elements(v(element)))
                else:
                    self._write(("tup", key, i), v(element))
                    self._write(("elems", key), v(element))
            return {("tup", key)}
        if isinstance(node, (ast.List, ast.Set)):
            for element in node.elts:
                self._write(
                    ("elems", id(node)), self._elements(v(element)) if isinstance(element, ast.Starred) else v(element)
                )
            return {("seq", id(node))}
        if isinstance(node, ast.Dict):
            for k, value in zip(node.keys, node.values):
                self._write(("elems", id(node)), v(value) | v(k) if k is not None else self._elements(v(value)))
            return {("seq", id(node))}
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            self._write(("elems", id(node)), v(node.elt))
            return {("seq", id(node))}
        if isinstance(node, ast.DictComp):
            self._write(("elems", id(node)), v(node.key) | v(node.value))
            return {("seq", id(node))}
        if isinstance(node, ast.Lambda):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            for param, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
                self._write(("v", id(node), param.arg), v(default))
            return {("own", node, 0)}
        if isinstance(node, ast.NamedExpr):
            self._assign(node.target, v(node.value), job)
            return set(v(node.value))
        if isinstance(node, (ast.Starred, ast.Await)):
            return set(v(node.value))
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            yielded = v(node.value) if node.value is not None else frozenset({N})
            self._write(("ret", job.scope.key), self._elements(yielded) if isinstance(node, ast.YieldFrom) else yielded)
            return {U}
        return {U}

    def _attr(self, base, attr: str) -> set:
        """The tokens of ``<base>.<attr>``."""
        out: set = set()
        for b in base:
            kind = b if isinstance(b, str) else b[0]
            if b == N:
                out.add(N)
            elif b in (T, U):
                if attr in TENSOR_SCALAR_ATTRIBUTES:
                    out.add(N)
                elif attr in TENSOR_VIEW_ATTRIBUTES:
                    out.add(T)
                elif attr == "__class__":
                    out.add(("torch", "torch.Tensor"))
                elif attr in TENSOR_ATTRIBUTES:
                    out.add(("tmeth", attr))
                else:
                    out.add(("umeth", attr))
                    out |= self._read(("attr", attr))
            elif kind in ("torch", "mod"):
                q = reroot(f"{b[1]}.{attr}")  # torch.library.torch.relu is torch.relu
                out.add(("torch" if q.split(".")[0] == "torch" else "mod", q))
            elif kind == "inst":
                out |= self._inst_attr(b[1], attr)
            elif kind == "super":
                out |= self._inst_attr(b[1], attr, skip_first=True)
            elif kind == "own":
                if isinstance(b[1], ast.ClassDef):
                    out |= self._class_attr(b[1], attr)
                else:
                    out.add(N)  # a function's __name__, __doc__ ...
            elif kind == "layer":
                if attr in NN_MODULE_METHODS or attr.startswith("_"):
                    out.add(b)
                elif LAYER_DATA.fullmatch(attr):
                    out.add(T)
                else:
                    out.add(U)
            elif kind == "tobj":
                out.add(b)
            elif kind in ("seq", "tup"):
                if attr in CONTAINER_METHODS:
                    out.add(("pymeth", attr, b[1]))
                else:  # an attribute of a namespace-like object: what it was given
                    out |= self._read(("elems", b[1])) | self._read(("attr", attr))
            elif b == KERNEL:
                out.add(KERNEL)
                out |= self._read(("attr", attr))
            else:
                out.add(N)
        return out

    def _inst_attr(self, cls: ast.ClassDef, attr: str, skip_first: bool = False) -> set:
        """``self.<attr>`` on an instance of the candidate's ``cls`` (``super().<attr>`` with ``skip_first``)."""
        out: set = set()
        chain = self.m.bases(cls)[1 if skip_first else 0 :]
        for c in chain:
            for t in self._read(("cls", id(c), attr)):
                out |= self._bound(t)
            if not skip_first:
                out |= self._read(("self", id(c), attr))
        if out:
            return out
        if attr not in ("__getattr__", "__getattribute__"):  # a lookup that fails goes to the class's __getattr__
            for t in self._inst_attr(cls, "__getattr__") | self._inst_attr(cls, "__getattribute__"):
                if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                    self._bind_args(t[1], t[2], [(None, frozenset({N}), False)], [])
                    self._edge(t[1])
                    out |= self._read(("ret", id(t[1])))
            if out:
                return out
        base = self._torch_base(cls)
        if base and (attr in NN_MODULE_METHODS or attr in ("__call__", "forward") or attr.startswith("_")):
            return {("layer", base)}
        if base and LAYER_DATA.fullmatch(attr):
            return {T}
        return {("umeth", attr)}

    def _bound(self, t) -> set:
        """A class attribute read through an instance: the candidate's functions become bound methods (properties
        are called)."""
        if not (isinstance(t, tuple) and t[0] == "own") or isinstance(t[1], ast.ClassDef):
            return {t}
        fn = t[1]
        names = {unparsed(d) for d in getattr(fn, "decorator_list", [])}
        if "staticmethod" in names:
            return {t}
        if names & {"property", "functools.cached_property", "cached_property"}:
            self._edge(fn)
            return set(self._read(("ret", id(fn))))
        return {("own", fn, t[2] + 1)}

    def _class_attr(self, cls: ast.ClassDef, attr: str) -> set:
        """``Class.<attr>``: ``Function.apply`` of an autograd.Function runs its ``forward`` with ``ctx`` bound."""
        out: set = set()
        for c in self.m.bases(cls):
            for t in self._read(("cls", id(c), attr)):
                decorators = (
                    {unparsed(d) for d in getattr(t[1], "decorator_list", [])}
                    if isinstance(t, tuple) and t[0] == "own"
                    else set()
                )
                out.add(("own", t[1], t[2] + 1) if "classmethod" in decorators else t)
        if not out and attr == "apply" and self._autograd_function(cls):
            for t in self._class_attr(cls, "forward"):
                out.add(("own", t[1], t[2] + 1) if isinstance(t, tuple) and t[0] == "own" else t)
        return out or {("umeth", attr)}

    def _autograd_function(self, cls: ast.ClassDef) -> bool:
        return any((self.m.qual(b) or "").startswith("torch.autograd") for c in self.m.bases(cls) for b in c.bases)

    def _torch_base(self, cls: ast.ClassDef) -> str | None:
        """The torch nn layer a candidate class derives from (``class ModelNew(nn.Linear)``), if any."""
        for c in self.m.bases(cls):
            for b in c.bases:
                q = self.m.qual(b) or ""
                last = q.split(".")[-1]
                if (
                    q.startswith("torch.nn.")
                    and last[:1].isupper()
                    and last not in ("Module", "ModuleList", "ModuleDict", "Sequential")
                ):
                    return q
        return None

    def _subscript(self, base, index, node: ast.Subscript) -> set:
        out: set = set()
        constant = node.slice.value if isinstance(node.slice, ast.Constant) else None
        for b in base:
            if b in (N, T, U):
                out.add(b)
            elif b[0] == "tup" and isinstance(constant, int) and ("tup", b[1], constant) in self.loc:
                out |= self._read(("tup", b[1], constant))
            elif b[0] in ("seq", "tup"):
                out |= self._read(("elems", b[1]))
            elif b == KERNEL:  # kernel[grid]: triton calls a grid function with its meta-parameters (plain data)
                out.add(KERNEL)
                for t in set(index) | set(self._elements(index)):
                    if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                        self._seed(t[1], t[2], {N})
                        self._edge(t[1])
            elif b[0] == "layer":
                out.add(b)
            else:
                out.add(U)
        self._tensor_index(base, index, node)
        return out

    def _tensor_index(self, base, index, node: ast.AST) -> None:
        if T in base and (T in index or T in self._elements(index)):
            self._flag(
                node, lambda: f"{unparsed(node)} indexes a tensor with a tensor (a PyTorch gather or scatter)", "op"
            )

    def _binop(self, op: ast.operator, left, right, node: ast.AST) -> set:
        symbol = OPERATOR_SYMBOLS.get(type(op), "?")
        if isinstance(op, ast.MatMult) or may_tensor(left) or may_tensor(right):
            augmented = "=" if isinstance(node, ast.AugAssign) else ""
            self._flag(node, lambda: f"{unparsed(node)} computes with PyTorch's {symbol}{augmented} operator", "op")
            return {T}
        containers = {t for t in set(left) | set(right) if isinstance(t, tuple) and t[0] in ("seq", "tup")}
        return containers or {N}

    # ---------------------------------------------------------------- calls

    def _call(self, node: ast.Call, values: dict[int, frozenset], job: Job) -> set:
        callee = values.get(id(node.func), EMPTY) or ({U} if self.judging else EMPTY)
        args = [
            (a.value if isinstance(a, ast.Starred) else a, values.get(id(a), EMPTY), isinstance(a, ast.Starred))
            for a in node.args
        ]
        kwargs = [(k.arg, k.value, values.get(id(k.value), EMPTY)) for k in node.keywords]
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and len(args) >= 2
            and literal_name(node.args[0])
            and func.attr in STATE_STORES
        ):
            name = node.args[0].value  # type: ignore[attr-defined]
            self._store_attr(values.get(id(func.value), EMPTY), name, args[1][1])
        if isinstance(func, ast.Attribute) and func.attr.startswith("register_") and "hook" in func.attr:
            for _, tokens, _ in args:
                for t in tokens:
                    if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                        self._write(("hooks",), {t})
                        self._seed(t[1], t[2], {U})
        return self._apply(callee, args, kwargs, node)

    # ---------------------------------------------------------------- judging

    def _flag(self, node: ast.AST | None, text, kind: str = "call") -> None:
        """Note PyTorch compute at ``node`` (``kind``: call, op for Python's operators, value for a function taken as a
        value, which counts in what ModelNew's construction runs too). ``text``: the words, or a function making them
        (made only for what the evidence keeps: an operator nested in another on its line is not shown)."""
        if node is not None and (self.mode == "reach" or (kind == "value" and self.mode == "kept")):
            self.flags.append((node, text, kind))

    def _value_flag(self, node: ast.AST, tokens) -> None:
        """A PyTorch compute function (or a tensor's compute method) taken as a value: it is called elsewhere."""
        if (
            not self.mode
            or id(node) in self.callees
            or id(node) in self.prefixes
            or not isinstance(getattr(node, "ctx", None), ast.Load)
        ):
            return
        for t in tokens:
            if isinstance(t, tuple) and t[0] == "torch" and self._torch_function(t[1]):
                self._flag(node, f"{short_torch_name(t[1])} (taken as a value)", kind="value")
            elif isinstance(t, tuple) and t[0] == "tmeth" and t[1] not in TENSOR_LAYOUT_METHODS | TENSOR_SCALAR_METHODS:
                self._flag(node, f"{unparsed(node)} (a tensor's PyTorch method taken as a value)", kind="value")

    def _torch_function(self, q: str) -> bool:
        """Whether ``torch.<...>`` named as a value is a compute function (not a module, class, dtype or constant)."""
        rest = q[len("torch.") :]
        last = rest.split(".")[-1]
        if not rest or rest in TORCH_MODULES or TORCH_CONSTANT.match(last) or last[:1].isupper():
            return False
        if rest.startswith("ops."):
            parts = rest.split(".")
            return len(parts) >= 3 and parts[1] not in self.namespaces
        if rest.startswith(TORCH_COMPILERS):
            return True
        if rest.startswith("Tensor."):
            return (
                last in TENSOR_ATTRIBUTES
                and last
                not in TENSOR_LAYOUT_METHODS | TENSOR_SCALAR_METHODS | TENSOR_SCALAR_ATTRIBUTES | TENSOR_VIEW_ATTRIBUTES
            )
        return not (rest in TORCH_LAYOUT or rest in TORCH_SCALAR or self._neutral(rest))
