"""``torch_ops=strict`` (:func:`strict_compute`): an abstract interpretation of the code ModelNew runs that allows
only kernel launches and plain data handling."""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Callable

from cudaforge.eval.guards.source.module import CandidateModule
from cudaforge.eval.guards.source.names import bound_name, reroot, top_level
from cudaforge.eval.guards.source.strict_values import Job, Scope, StrictValues
from cudaforge.eval.guards.source.strict_vocab import (
    BUILTIN_NAMES,
    EMPTY,
    KERNEL,
    MODEL_ENTRIES,
    N,
    T,
    U,
)
from cudaforge.eval.guards.source.vocab import ATEN_NAMESPACES, TORCH_COMPILERS


class _Strict(StrictValues):
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
        self.jobs: list[Job] = []
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
        self.job: Job | None = None
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
        self.module = Scope(m.tree, None, None)
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

    def _index_body(self, body: list[ast.stmt], scope: Scope, cls: ast.ClassDef | None) -> None:
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

    def _new_scope(self, fn: ast.AST, parent: Scope, cls: ast.ClassDef | None) -> Scope:
        scope = Scope(fn, parent, cls or (parent.cls if parent.node is not self.m.tree else None))
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

    def _add_job(self, node: ast.AST, scope: Scope, cls: ast.ClassDef | None) -> None:
        index = len(self.jobs)
        self.jobs.append(Job(scope, node, cls))
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

    def _bind_name(self, name: str, scope: Scope) -> None:
        (self.module if name in scope.globals else scope).bound.add(name)

    def _scan(self, roots: list[ast.AST], scope: Scope) -> None:
        """Bind the names ``roots`` store into ``scope``; make every lambda among them a unit with its own job."""
        stack = list(roots)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Lambda):
                inner = self._new_scope(node, scope, None)
                index = len(self.jobs)
                self.jobs.append(Job(inner, node))
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

    def _run(self, job: Job) -> None:
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

    def _define(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, job: Job) -> None:
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

    def _lookup(self, name: str, scope: Scope) -> tuple | None:
        if name in scope.globals:
            return ("v", 0, name) if name in self.module.bound else None
        s: Scope | None = scope
        while s is not None:
            if name in s.bound and name not in s.nonlocals:
                return ("v", s.key, name)
            s = s.parent
        return None

    def _store_key(self, name: str, scope: Scope) -> tuple:
        if name in scope.globals:
            return ("v", 0, name)
        if name in scope.nonlocals and scope.parent is not None:
            return self._lookup(name, scope.parent) or ("v", scope.key, name)
        return ("v", scope.key, name)

    def _store(self, name: str, tokens, job: Job, top: bool = True) -> None:
        if top and job.cls is not None:
            self._write(("cls", id(job.cls), name), tokens)
        else:
            self._write(self._store_key(name, job.scope), tokens)

    def _name(self, name: str, job: Job) -> set:
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

    def _assign(self, target: ast.AST, tokens, job: Job, top: bool = False) -> None:
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

    # ---------------------------------------------------------------- judging

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
