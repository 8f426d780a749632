"""``torch_ops=strict`` (:func:`strict_compute`): an abstract interpretation of the code ModelNew runs that allows
only kernel launches and plain data handling."""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from cudaforge.eval.guards.source.module import CandidateModule, bound_name, literal_name, reroot, top_level, unparsed
from cudaforge.eval.guards.source.strict_calls import StrictCalls
from cudaforge.eval.guards.source.strict_vocab import (
    BUILTIN_NAMES,
    CONTAINER_METHODS,
    EMPTY,
    KERNEL,
    LAYER_DATA,
    MODEL_ENTRIES,
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
from cudaforge.eval.guards.source.vocab import ATEN_NAMESPACES, TORCH_COMPILERS, TORCH_LAYOUT


class _BindTarget:
    """A step of an evaluation: bind a comprehension's target once its iterable is known."""

    __slots__ = ("comp",)

    def __init__(self, comp: ast.comprehension) -> None:
        self.comp = comp


@dataclass(eq=False)
class _Scope:
    """A module, function or lambda: the names it binds, and where names it does not bind are looked up."""

    node: ast.AST
    parent: _Scope | None
    cls: ast.ClassDef | None
    """The class a function is a method of (or a function nested in one is)."""
    bound: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    @property
    def key(self) -> int:
        return 0 if isinstance(self.node, ast.Module) else id(self.node)


@dataclass(eq=False)
class _Job:
    """One statement (its header, for compound ones) or one lambda's body, evaluated in ``scope``; ``cls`` when the
    statement is in that class's body (its assignments and defs are the class's attributes)."""

    scope: _Scope
    node: ast.AST
    cls: ast.ClassDef | None = None


class _Strict(StrictCalls):
    """``torch_ops=strict`` as an allow-list over the code ModelNew runs.

    Every statement of the candidate (but its kernels' bodies and its ``__main__`` block) is interpreted over
    abstract values, flow-insensitively, to a fixed point: what each name, ``self.<attr>``, container element,
    parameter and return value may hold. A value is a set of tokens: ``N`` plain data (ints, sizes, strings, None),
    ``T`` maybe a tensor, ``U`` unknown, ``KERNEL``, and tuples: ``("own", def, offset)`` a function, lambda or
    class of the candidate (``offset`` parameters already bound), ``("inst", class)``, ``("torch", qual)``,
    ``("mod", qual)``, ``("layer", qual)`` a torch nn layer, ``("tobj", qual)`` another torch object,
    ``("tmeth", name)`` a tensor's bound method, ``("umeth", name)`` a method of something unknown, ``("pymeth",
    name, container)``, ``("seq", key)``/``("tup", key)`` a container, ``("builtin", name)``, ``("super", class)``.
    Calls of the candidate's own code bind its parameters and are followed; what forward reaches that way (lambdas
    and nested defs kept on ``self`` or in containers, ``functools.partial``, properties, grids, hooks and the
    Python implementations of its custom ops included) is then judged: a call there must be a kernel launch, a
    ``TORCH_LAYOUT``/``TORCH_STRICT_NEUTRAL`` call, a layout or size method of a tensor, plain Python or the
    candidate's own code; an operator may not apply to what may be a tensor. PyTorch functions taken as values
    anywhere ModelNew's construction or forward runs are compute too (they are called elsewhere)."""

    BUDGET = 40
    """Evaluations per statement before the fixed point is given up (what is known by then is judged)."""

    def __init__(self, m: CandidateModule, cls: ast.ClassDef) -> None:
        self.m, self.cls = m, cls
        self.loc: dict[tuple, set] = {}
        self.readers: dict[tuple, set[int]] = {}
        self.jobs: list[_Job] = []
        self.unit_jobs: dict[int, list[int]] = {}
        self.units: dict[int, ast.AST] = {}
        self.edges: dict[int, set[ast.AST]] = {}
        self.seq_kind: dict[object, str] = {}
        self.callees: set[int] = set()
        self.prefixes: set[int] = set()
        self.subclasses: dict[int, list[ast.ClassDef]] = {}
        self.queue: deque[int] = deque()
        self.queued: set[int] = set()
        self.current: int | None = None
        self.job: _Job | None = None
        self.judging = False
        self.mode = ""
        self.flags: list[tuple[ast.AST, str | Callable[[], str], str]] = []
        self.launches: list[str] = []
        """The launches of the candidate's kernels in what ModelNew runs, as ``what (line N)``."""
        self.namespaces = self._own_namespaces()
        classes = [n for n in ast.walk(m.tree) if isinstance(n, ast.ClassDef)]
        for c in classes:
            for base in m.bases(c):
                self.subclasses.setdefault(id(base), []).append(c)
        self.module = _Scope(m.tree, None, None)
        self.units[0] = m.tree
        self.unit_jobs[0] = []
        self._index_body(m.tree.body, self.module, None)
        self.seeded: set[int] = set()
        for name, tokens in (("__init__", {N}), *((name, {T}) for name in MODEL_ENTRIES)):
            method = m.method(cls, name)
            if method is not None and id(method) in self.units:
                self._seed(method, 1, tokens)
        self._solve()
        for _ in range(3):  # forward bound some other way (ModelNew.forward = ..., forward = fn in the body)
            new = [t for t in self._starts() if id(t[1]) not in self.seeded]
            if not new:
                break
            for _, fn, offset in new:
                self._seed(fn, offset, {T})
            self._solve()

    # ---------------------------------------------------------------- index

    def _own_namespaces(self) -> set[str]:
        """``torch.ops`` namespaces the candidate defines (``TORCH_LIBRARY(ns, m)``, ``Library("ns", "DEF")``,
        ``custom_op("ns::op")``): their ops are its own."""
        found = set()
        for node in ast.walk(self.m.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if "TORCH_LIBRARY" in node.value:
                    found.update(re.findall(r"\bTORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)", node.value))
                match = re.match(r"(\w+)::\w+", node.value)
                if match:
                    found.add(match.group(1))
            elif isinstance(node, ast.Call) and (self.m.qual(node.func) or "").startswith("torch.library.Library"):
                if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    found.add(node.args[0].value)
        return found - ATEN_NAMESPACES - {"aten", "std", "at", "c10", "torch", "cute", "cutlass", "cuda"}

    def _index_body(self, body: list[ast.stmt], scope: _Scope, cls: ast.ClassDef | None) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._add_job(stmt, scope, cls)
                if id(stmt) not in self.m.kernel_defs:
                    inner = self._new_scope(stmt, scope, cls)
                    self._index_body(stmt.body, inner, None)
            elif isinstance(stmt, ast.ClassDef):
                self._add_job(stmt, scope, cls)
                self._index_body(stmt.body, scope, stmt)
            else:
                if not isinstance(stmt, (ast.Pass, ast.Break, ast.Continue)):
                    self._add_job(stmt, scope, cls)
                for block in ("body", "orelse", "finalbody"):
                    inner_body = getattr(stmt, block, None)
                    if isinstance(inner_body, list):
                        self._index_body(inner_body, scope, cls)
                for part in (getattr(stmt, "handlers", None) or []) + (getattr(stmt, "cases", None) or []):
                    self._index_body(part.body, scope, cls)

    def _new_scope(self, fn: ast.AST, parent: _Scope, cls: ast.ClassDef | None) -> _Scope:
        scope = _Scope(fn, parent, cls or (parent.cls if parent.node is not self.m.tree else None))
        self.units[id(fn)] = fn
        self.unit_jobs[id(fn)] = []
        args = fn.args  # type: ignore[attr-defined]
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
        scope.bound.update(a.arg for a in params)
        for a in (args.vararg, args.kwarg):
            if a is not None:
                self._write(("v", id(fn), a.arg), {("seq", id(a))})
        if not isinstance(fn, ast.Lambda):
            stack: list[ast.AST] = list(fn.body)  # type: ignore[attr-defined]
            while stack:
                node = stack.pop()
                if isinstance(node, ast.Global):
                    scope.globals.update(node.names)
                elif isinstance(node, ast.Nonlocal):
                    scope.nonlocals.update(node.names)
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    stack.extend(ast.iter_child_nodes(node))
            self.module.bound.update(scope.globals)
            first = [*args.posonlyargs, *args.args][:1]
            decorators = {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}  # type: ignore[attr-defined]
            if cls is not None and first and "staticmethod" not in decorators:
                family = self._family(cls)
                if "classmethod" in decorators:
                    self._write(("v", id(fn), first[0].arg), {("own", c, 0) for c in family})
                else:
                    self._write(("v", id(fn), first[0].arg), {("inst", c) for c in family})
        return scope

    def _family(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """``cls`` and the candidate's classes that derive from it."""
        found, queue = [], [cls]
        while queue:
            c = queue.pop()
            if c not in found:
                found.append(c)
                queue += self.subclasses.get(id(c), [])
        return found

    def _add_job(self, node: ast.AST, scope: _Scope, cls: ast.ClassDef | None) -> None:
        index = len(self.jobs)
        self.jobs.append(_Job(scope, node, cls))
        self.unit_jobs[scope.key].append(index)
        roots: list[ast.AST] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots = [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]
            if cls is None:
                self._bind_name(node.name, scope)
        elif isinstance(node, ast.ClassDef):
            roots = [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
            if cls is None:
                self._bind_name(node.name, scope)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    self._bind_name(bound_name(alias), scope)  # type: ignore[arg-type]
        elif isinstance(node, (ast.Try, ast.TryStar)):
            roots = [h.type for h in node.handlers if h.type is not None]
            for h in node.handlers:
                if h.name:
                    self._bind_name(h.name, scope)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            roots = [node.iter, node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            roots = [x for item in node.items for x in (item.context_expr, item.optional_vars) if x is not None]
        elif isinstance(node, (ast.If, ast.While)):
            roots = [node.test]
        elif isinstance(node, ast.Match):
            roots = [node.subject]
        elif isinstance(node, ast.Assign):
            roots = [node.value, *node.targets]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            roots = [x for x in (node.value, node.target) if x is not None]
        else:
            roots = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        if cls is not None and isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            direct = node.targets if isinstance(node, ast.Assign) else [node.target]
            roots = [r for r in roots if not (isinstance(r, ast.Name) and r in direct)]
        self._scan(roots, scope)

    def _bind_name(self, name: str, scope: _Scope) -> None:
        (self.module if name in scope.globals else scope).bound.add(name)

    def _scan(self, roots: list[ast.AST], scope: _Scope) -> None:
        """Bind the names ``roots`` store into ``scope``; make every lambda among them a unit with its own job."""
        stack = list(roots)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Lambda):
                inner = self._new_scope(node, scope, None)
                index = len(self.jobs)
                self.jobs.append(_Job(inner, node))
                self.unit_jobs[id(node)].append(index)
                self._scan([node.body], inner)
                stack.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self._bind_name(node.id, scope)
            stack.extend(ast.iter_child_nodes(node))

    def _seed(self, fn: ast.AST, offset: int, tokens: set) -> None:
        """Give every parameter of ``fn`` after the first ``offset`` these tokens (what the evaluator passes)."""
        self.seeded.add(id(fn))
        args = fn.args  # type: ignore[attr-defined]
        for a in [*args.posonlyargs, *args.args][offset:] + args.kwonlyargs:
            self._write(("v", id(fn), a.arg), tokens)
        for a in (args.vararg, args.kwarg):
            if a is not None:
                self._write(("elems", id(a)), tokens)

    # ---------------------------------------------------------------- the fixed point

    def _read(self, key: tuple) -> set:
        if self.current is not None:
            self.readers.setdefault(key, set()).add(self.current)
        return self.loc.get(key, EMPTY)  # type: ignore[arg-type]  # EMPTY (a frozenset) for none, never changed

    def _write(self, key: tuple, tokens) -> None:
        known = self.loc.get(key)
        if known is None:
            known = self.loc[key] = set()
        if tokens and not known.issuperset(tokens):
            known.update(tokens)
            for job in self.readers.get(key, ()):
                if job not in self.queued:
                    self.queued.add(job)
                    self.queue.append(job)

    def _solve(self) -> None:
        for index in range(len(self.jobs)):
            if index not in self.queued:
                self.queued.add(index)
                self.queue.append(index)
        budget = self.BUDGET * len(self.jobs) + 100
        while self.queue and budget > 0:
            budget -= 1
            index = self.queue.popleft()
            self.queued.discard(index)
            self.current = index
            self._run(self.jobs[index])
        self.current = None
        self.queue.clear()
        self.queued.clear()

    def _edge(self, fn: ast.AST) -> None:
        """The job being run calls (or hands on to be called) the candidate's ``fn``."""
        if self.job is not None and id(fn) in self.units:
            self.edges.setdefault(self.job.scope.key, set()).add(fn)

    # ---------------------------------------------------------------- statements

    def _run(self, job: _Job) -> None:
        self.job = job
        node = job.node
        if isinstance(node, ast.Lambda):
            self._write(("ret", id(node)), self._eval(node.body, job))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is not None:
                value = self._eval(node.value, job)
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    self._assign(target, value, job, top=True)
        elif isinstance(node, ast.AugAssign):
            current = self._eval(node.target, job)
            value = self._eval(node.value, job)
            self._assign(node.target, self._binop(node.op, current, value, node), job, top=True)
        elif isinstance(node, ast.Return):
            self._write(("ret", job.scope.key), self._eval(node.value, job) if node.value else {N})
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._assign(node.target, self._elements(self._eval(node.iter, job)), job)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                value = self._eval(item.context_expr, job)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, value, job)
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                self._write(("raised",), self._eval(node.exc, job))
            if node.cause is not None:
                self._eval(node.cause, job)
        elif isinstance(node, (ast.Try, ast.TryStar)):
            for h in node.handlers:
                if h.type is not None:
                    self._eval(h.type, job)
                if h.name:
                    self._write(self._store_key(h.name, job.scope), self._read(("raised",)) | {U})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    continue
                if isinstance(node, ast.Import):
                    q = alias.name if alias.asname else alias.name.split(".")[0]
                else:
                    q = f"{'.' * node.level}{node.module or ''}.{alias.name}"
                if not getattr(node, "level", 0):
                    q = reroot(q)
                root = q.split(".")[0]
                self._store(bound_name(alias), {("torch" if root == "torch" else "mod", q)}, job)  # type: ignore[arg-type]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._define(node, job)
        elif isinstance(node, ast.ClassDef):
            for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                self._eval(expr, job)
            self._store(node.name, {("own", node, 0)}, job)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    self._eval(target, job)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            pass
        else:  # Expr, If, While, Assert, Match: their expressions
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._eval(child, job)
                elif isinstance(node, ast.Match) and child is node.subject:
                    self._eval(child, job)

    def _define(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, job: _Job) -> None:
        decorators = [self._eval(d, job) for d in fn.decorator_list]
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        for param, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
            self._write(("v", id(fn), param.arg), self._eval(default, job))
        for param, kw_default in zip(args.kwonlyargs, args.kw_defaults):
            if kw_default is not None:
                self._write(("v", id(fn), param.arg), self._eval(kw_default, job))
        if id(fn) in self.m.kernel_defs:
            tokens: set = {KERNEL}
        else:
            tokens = {("own", fn, 0)}
            for decorator in reversed(decorators):
                tokens = self._decorate(decorator, tokens, fn)
        self._store(fn.name, tokens, job)

    def _decorate(self, decorator: set, function: set, fn: ast.AST) -> set:
        """What a decorator makes of a function: the candidate's decorators are called; torch's compilers make torch's
        code; ``torch.library`` registers it (it is read as the candidate's op); the rest hand it through."""
        out: set = set()
        for d in decorator:
            kind = d[0] if isinstance(d, tuple) else d
            if kind == "own" and not isinstance(d[1], ast.ClassDef):
                out |= self._apply({d}, [(None, frozenset(function), False)], [], None)
            elif d == KERNEL:
                out.add(KERNEL)
            elif kind == "torch" and d[1][len("torch.") :].startswith(TORCH_COMPILERS):
                out.add(d)
            elif kind in ("torch", "tobj") and d[1].startswith("torch.library"):
                self._register(function)
                out |= function
            else:
                out |= function
        return out or set(function)

    def _register(self, tokens) -> None:
        """Functions registered as custom-op implementations: forward calling the op runs them."""
        for t in tokens:
            if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                self._write(("registered",), {t})
                self._seed(t[1], t[2], {T})

    # ---------------------------------------------------------------- names and stores

    def _lookup(self, name: str, scope: _Scope) -> tuple | None:
        if name in scope.globals:
            return ("v", 0, name) if name in self.module.bound else None
        s: _Scope | None = scope
        while s is not None:
            if name in s.bound and name not in s.nonlocals:
                return ("v", s.key, name)
            s = s.parent
        return None

    def _store_key(self, name: str, scope: _Scope) -> tuple:
        if name in scope.globals:
            return ("v", 0, name)
        if name in scope.nonlocals and scope.parent is not None:
            return self._lookup(name, scope.parent) or ("v", scope.key, name)
        return ("v", scope.key, name)

    def _store(self, name: str, tokens, job: _Job, top: bool = True) -> None:
        if top and job.cls is not None:
            self._write(("cls", id(job.cls), name), tokens)
        else:
            self._write(self._store_key(name, job.scope), tokens)

    def _name(self, name: str, job: _Job) -> set:
        key = self._lookup(name, job.scope)
        if key is not None:
            return self._read(key)
        if name in BUILTIN_NAMES:
            return (
                {N}
                if name in ("None", "True", "False", "Ellipsis", "__debug__")
                or (name.startswith("__") and name not in ("__import__", "__build_class__"))
                else {("builtin", name)}
            )
        return {U}

    def _assign(self, target: ast.AST, tokens, job: _Job, top: bool = False) -> None:
        if isinstance(target, ast.Name):
            self._store(target.id, tokens, job, top)
        elif isinstance(target, ast.Attribute):
            self._store_attr(self._eval(target.value, job), target.attr, tokens)
        elif isinstance(target, ast.Subscript):
            base = self._eval(target.value, job)
            index = self._eval(target.slice, job)
            for b in base:
                if isinstance(b, tuple) and b[0] in ("seq", "tup"):
                    self._write(("elems", b[1]), tokens)
            self._tensor_index(base, index, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    self._write(("elems", id(element)), self._elements(tokens))
                    self._assign(element.value, {("seq", id(element))}, job)
                else:
                    self._assign(element, self._unpack(tokens, i), job)
        elif isinstance(target, ast.Starred):
            self._write(("elems", id(target)), self._elements(tokens))
            self._assign(target.value, {("seq", id(target))}, job)

    def _store_attr(self, base, attr: str, tokens) -> None:
        for b in base:
            if isinstance(b, tuple) and b[0] == "inst":
                self._write(("self", id(b[1]), attr), tokens)
            elif isinstance(b, tuple) and b[0] == "own" and isinstance(b[1], ast.ClassDef):
                self._write(("cls", id(b[1]), attr), tokens)
            else:
                self._write(("attr", attr), tokens)

    def _elements(self, tokens) -> frozenset:
        """What iterating (or indexing) a value with these tokens gives."""
        out: set = set()
        for t in tokens:
            if t in (N, T, U) or t == KERNEL:
                out.add(t)
            elif t[0] in ("seq", "tup"):
                out |= self._read(("elems", t[1]))
            elif t[0] == "layer":
                out.add(t)
            else:
                out.add(U)
        return frozenset(out)

    def _unpack(self, tokens, i: int) -> frozenset:
        out: set = set()
        for t in tokens:
            if isinstance(t, tuple) and t[0] == "tup" and ("tup", t[1], i) in self.loc:
                out |= self._read(("tup", t[1], i))
            else:
                out |= self._elements({t})
        return frozenset(out)

    # ---------------------------------------------------------------- expressions

    def _eval(self, expr: ast.AST | None, job: _Job) -> frozenset:
        """The tokens of ``expr``, its parts evaluated first (iteratively: a deep expression costs no recursion)."""
        if expr is None:
            return frozenset({N})
        values: dict[int, frozenset] = {}
        stack: list[tuple[object, bool]] = [(expr, False)]
        while stack:
            node, done = stack.pop()
            if isinstance(node, _BindTarget):
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
                order += [g.iter, _BindTarget(g), *g.ifs]
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

    def _value(self, node: ast.AST, values: dict[int, frozenset], job: _Job) -> set:
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

    def _call(self, node: ast.Call, values: dict[int, frozenset], job: _Job) -> set:
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

    def _starts(self) -> list[tuple]:
        """What runs when ModelNew is called: its ``forward`` (or ``__call__``) however bound, and its hooks."""
        self.judging, self.current = True, None
        tokens = self._read(("hooks",)).union(*(self._inst_attr(self.cls, name) for name in MODEL_ENTRIES))
        self.judging = False
        return [t for t in tokens if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef)]

    def findings(self) -> list[str]:
        """``line N: what`` for each place the code ModelNew runs computes with PyTorch (one per line, the outermost
        expression first)."""
        starts = self._starts()
        own_forward = set().union(*(self._inst_attr(self.cls, name) for name in MODEL_ENTRIES))
        reach: list[ast.AST] = [t[1] for t in starts]
        if not reach and not any(isinstance(t, tuple) and t[0] == "layer" for t in own_forward):
            reach = [fn for fn in self.m.methods(self.cls) if fn.name != "__init__" and id(fn) in self.units]
        seen = {id(fn) for fn in reach}
        for fn in reach:  # grows while it is walked
            for callee in self.edges.get(id(fn), ()):
                if id(callee) not in seen:
                    seen.add(id(callee))
                    reach.append(callee)
        self.judging, self.flags = True, []
        for t in own_forward:
            if isinstance(t, tuple) and t[0] == "layer":
                self.flags.append((self.cls, f"ModelNew's forward is {t[1].replace('torch.nn.', 'nn.')}'s", "call"))
        self.mode = "reach"
        for fn in reach:
            for index in self.unit_jobs.get(id(fn), []):
                self._run(self.jobs[index])
        self.mode = "kept"
        kept = [0] + [
            key for key, unit in self.units.items() if getattr(unit, "name", "") == "__init__" and key not in seen
        ]
        for key in kept:
            for index in self.unit_jobs.get(key, []):
                self._run(self.jobs[index])
        self.mode, self.judging = "", False
        return self._evidence()

    def _evidence(self) -> list[str]:
        by_line: dict[int, list[tuple[ast.AST, str | Callable[[], str], str]]] = {}
        for node, text, kind in self.flags:
            by_line.setdefault(getattr(node, "lineno", 0), []).append((node, text, kind))
        lines = []
        for line in sorted(by_line):
            kept: list[tuple[ast.AST, str, str]] = []
            for node, text, kind in sorted(by_line[line], key=lambda f: -self._span(f[0])):
                if kind == "op" and any(k[2] == "op" and self._inside(node, k[0]) for k in kept):
                    continue
                words = text() if callable(text) else text
                if words not in [k[1] for k in kept]:
                    kept.append((node, words, kind))
            lines += [f"line {line}: {words}" for _, words, _ in kept]
        return lines

    @staticmethod
    def _span(node: ast.AST) -> int:
        start, end = getattr(node, "col_offset", 0), getattr(node, "end_col_offset", 0) or 0
        lines = (getattr(node, "end_lineno", 0) or 0) - (getattr(node, "lineno", 0) or 0)
        return lines * 10_000 + end - start

    @staticmethod
    def _inside(inner: ast.AST, outer: ast.AST) -> bool:
        a = (getattr(inner, "lineno", 0), getattr(inner, "col_offset", 0))
        b = (getattr(inner, "end_lineno", 0), getattr(inner, "end_col_offset", 0))
        return (getattr(outer, "lineno", 0), getattr(outer, "col_offset", 0)) <= a and b <= (
            getattr(outer, "end_lineno", 0),
            getattr(outer, "end_col_offset", 0),
        )


def strict_compute(m: CandidateModule, cls: ast.ClassDef | None, launches: list[str] | None = None) -> list[str]:
    """torch_ops=strict: every place the code ModelNew runs computes with PyTorch (``line N: what``), star imports
    from torch, and a ModelNew the guards cannot find. ``launches`` gets the kernel launches found on the way."""
    found = [
        f"line {n.lineno}: from {n.module} import * puts PyTorch's functions under bare names the guards cannot "
        "tell from yours; import the module and name what you use"
        for n in top_level(m.tree.body)
        if isinstance(n, ast.ImportFrom)
        and not n.level
        and (n.module or "").split(".")[0] == "torch"
        and any(a.name == "*" for a in n.names)
    ]
    if cls is None:
        return found + [
            "ModelNew is not a class the candidate's text defines (class ModelNew(nn.Module): ...), so "
            "what its forward runs cannot be read"
        ]
    strict = _Strict(m, cls)
    found += strict.findings()
    if launches is not None:
        launches += strict.launches
    return found
