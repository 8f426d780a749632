"""The candidate's module as the guards read it (:class:`CandidateModule`): its imports and aliases resolved, names
given as literal strings read as attributes, the code ``ModelNew`` runs, and small helpers on AST nodes."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeGuard, cast

from cudaforge import pyast
from cudaforge.eval.guards.source import vocab
from cudaforge.eval.guards.source.names import LiteralNames, bound_name, is_main_guard, literal_name, reroot, top_level
from cudaforge.eval.guards.source.strict_vocab import KERNEL_MODULE_ROOTS

# --------------------------------------------------------------------------- the candidate's module

_Decorated: TypeAlias = list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, tuple[ast.AST, ...]]]  # decorated defs


def line_of(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def listing(items: list[str]) -> str:
    unique = list(dict.fromkeys(items))
    shown = ", ".join(unique[: vocab.MAX_LISTED])
    return shown + (f" and {len(unique) - vocab.MAX_LISTED} more" if len(unique) > vocab.MAX_LISTED else "")


def strip_c_comments(text: str) -> str:
    text = re.sub(r"/\*.*?(?:\*/|\Z)", " ", text, flags=re.S)  # an unclosed one runs to the end (linear, not n^2)
    return re.sub(r"//[^\n]*", " ", text)


def looks_like_c(text: str) -> bool:
    return any(
        k in text
        for k in (
            "#include",
            "__global__",
            "torch::",
            'extern "C"',
            "<<<",
            "__device__",
            "#define",
            "#pragma",
            "std::",
            "PYBIND11_MODULE",
            "TORCH_LIBRARY",
            "__host__",
            "__shared__",
        )
    )


def build_source_ids(m: CandidateModule) -> set[int]:
    """ids of the string literals a kernel build is given, directly or through module-level names (``cpp_sources=
    CPP``, ``CUDA = HEADER + BODY``): C, C++ or CUDA sources, whatever they look like."""
    values: dict[str, list[ast.expr]] = {}
    for node in top_level(m.tree.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
    queue: list[ast.AST] = [
        a
        for n in ast.walk(m.tree)
        if isinstance(n, ast.Call) and m.is_builder(n)
        for a in [*n.args, *(k.value for k in n.keywords)]
    ]
    found: set[int] = set()
    seen: set[str] = set()
    while queue:
        for sub in ast.walk(queue.pop()):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                found.add(id(sub))
            elif isinstance(sub, ast.Name) and sub.id in values and sub.id not in seen:
                seen.add(sub.id)
                queue += values[sub.id]
    return found


@dataclass
class CandidateModule:
    """The candidate's AST (without its ``__main__`` block) and what its names mean."""

    tree: ast.Module
    aliases: dict[str, str] = field(default_factory=dict)
    """Local name -> qualified name (``F`` -> ``torch.nn.functional``, ``S`` -> ``torch.cuda.Stream``)."""
    self_aliases: dict[str, str] = field(default_factory=dict)
    """``self.<attr>`` -> qualified name, where some method assigned it one."""
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    kernels: set[str] = field(default_factory=set)
    """Functions decorated as GPU kernels (``@triton.jit`` ...)."""
    kernel_defs: set[int] = field(default_factory=set)
    """ids of those functions' defs (a def of another name's body is read even if a kernel shares its name)."""
    _decorated: tuple[dict[int, Counter[str]], dict[int, Counter[str]], _Decorated] | None = None
    """What finding the kernels needs, scanned once."""
    extensions: set[str] = field(default_factory=set)
    """Names bound to built kernels or extensions (load_inline results, RawKernels, kernels' aliases)."""
    self_extensions: set[str] = field(default_factory=set)
    """``self.<attr>`` names bound to built kernels or extensions."""
    self_refs: dict[str, set[str]] = field(default_factory=dict)
    """``self.<attr>`` -> local names assigned to it (functions, classes, kernels)."""
    layers: set[str] = field(default_factory=set)
    """``self.<attr>`` (and module names) bound to ``torch.nn`` layers."""
    bindings: Counter[str] = field(default_factory=Counter)
    """How often each name is bound anywhere (def, class, assignment, parameter, import, ``as``, ``for``)."""
    definitions: set[str] = field(default_factory=set)
    """Names bound only by one module-level def or class: there, a bare name is the candidate's, not a builtin."""

    @classmethod
    def parse(cls, source: str) -> CandidateModule:
        tree = pyast.parse(source)
        tree.body = [n for n in tree.body if not is_main_guard(n)]
        names = LiteralNames()
        tree = names.rewrite(tree)
        module = cls(tree, bindings=names.bindings, definitions=names.definitions)
        module._index()
        return module

    # ---------------------------------------------------------------- names

    def qual(self, node: ast.AST | None) -> str | None:
        """The qualified name an expression stands for (``torch.nn.functional.relu``), or None; a path through a
        module that re-exports another (``torch.library.torch.relu``, ``cpp_extension.os.environ``) is named by the
        module it reaches (``torch.relu``, ``os.environ``)."""
        if isinstance(node, ast.Name):
            found = self.aliases.get(node.id)
            return reroot(found) if found else None
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self.self_aliases.get(node.attr)
            base = self.qual(node.value)
            return reroot(f"{base}.{node.attr}") if base else None
        return None

    def _index(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        self.aliases[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in top_level(self.tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node  # type: ignore[assignment]
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        self._find_kernels()
        self._bind_values()
        if self._find_kernels():  # a decorator aliased by assignment (jit = triton.jit) resolves only now
            self._bind_values()

    def _bind_values(self) -> None:
        for _ in range(4):  # value aliases and bindings, to a fixed point (chains are short)
            before = (len(self.aliases), len(self.self_aliases), len(self.extensions), len(self.self_extensions))
            for node in ast.walk(self.tree):
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    self._bind(node.targets if isinstance(node, ast.Assign) else [node.target], node.value)
                elif self.literal_setattr(node):  # setattr(self, "act", F.relu) binds as self.act = F.relu does
                    obj, name, value = node.args  # name: a str constant (literal_setattr)
                    self._bind([ast.Attribute(obj, cast(str, cast(ast.Constant, name).value), ast.Store())], value)
            after = (len(self.aliases), len(self.self_aliases), len(self.extensions), len(self.self_extensions))
            if after == before:
                break

    def builtin(self, name: str) -> bool:
        """Whether a bare ``name`` may be the builtin of that name: unless the candidate's one binding of it is a
        module-level def or class, it is taken to be (a parameter or an assignment can hold the builtin itself:
        ``def f(run=exec)``, ``eval = eval``)."""
        return name not in self.definitions

    def literal_setattr(self, node: ast.AST) -> TypeGuard[ast.Call]:
        """``setattr(obj, "<name>", value)`` with the builtin ``setattr`` and a literal name."""
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and self.builtin("setattr")
            and len(node.args) == 3
            and not node.keywords
            and literal_name(node.args[1]) is not None
        )

    def _find_kernels(self) -> bool:
        """Find the defs a kernel language's own decorator makes kernels; True when some are new."""
        if self._decorated is None:
            self._decorated = self._scan_decorated()
        binds, imports, decorated = self._decorated
        before = len(self.kernel_defs)
        for node, chain in decorated:
            if any(self._is_kernel_decorator(d, chain, binds, imports) for d in node.decorator_list):
                self.kernels.add(node.name)
                self.kernel_defs.add(id(node))
        return len(self.kernel_defs) != before

    def _scan_decorated(self) -> tuple[dict[int, Counter[str]], dict[int, Counter[str]], _Decorated]:
        """(scope id -> how often it binds each name; the same for imports; decorated defs with their scopes)."""
        binds: dict[int, Counter[str]] = {}
        imports: dict[int, Counter[str]] = {}
        decorated: _Decorated = []
        stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(self.tree, (self.tree,))]
        while stack:
            node, chain = stack.pop()
            name = bound_name(node)
            if name:
                binds.setdefault(id(chain[-1]), Counter())[name] += 1
                if isinstance(node, ast.alias):
                    imports.setdefault(id(chain[-1]), Counter())[name] += 1
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                binds.setdefault(id(self.tree), Counter()).update(node.names)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
                decorated.append((node, chain))
            inner = (
                chain + (node,)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
                else chain
            )
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))
        return binds, imports, decorated

    def _is_kernel_decorator(
        self,
        node: ast.expr,
        chain: tuple[ast.AST, ...],
        binds: dict[int, Counter[str]],
        imports: dict[int, Counter[str]],
    ) -> bool:
        """Whether a decorator is a kernel language's (``triton.jit``, ``cute.kernel``, ``T.prim_func``,
        ``numba.cuda.jit`` ...): its name must resolve, where the decorated def is, to that language's module through imports only
        (or one module-level assignment such as ``jit = triton.jit``). A decorator of the candidate's own named
        ``jit``, or a name it also binds to something else, makes no kernel: the function's body is then read."""
        target = node.func if isinstance(node, ast.Call) else node
        root = target
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        scopes = list(reversed(chain))
        for depth, scope in enumerate(scopes):
            if isinstance(scope, ast.ClassDef) and depth > 0:
                continue  # a class's names are seen by its body, not by the functions in it
            count = binds.get(id(scope), Counter())[root.id]
            if count:
                break
        else:
            return False
        if imports.get(id(scope), Counter())[root.id] != count and (count != 1 or scope is not self.tree):
            return False
        parts = (self.qual(target) or "").split(".")
        if parts[-1] not in vocab.KERNEL_DECORATORS or parts[0] not in KERNEL_MODULE_ROOTS:
            return False
        return parts[0] != "numba" or "cuda" in parts

    def is_builder(self, call: ast.Call) -> bool:
        """A call that builds kernels from source (load_inline, torch.utils.cpp_extension.load, RawKernel ...)."""
        q = self.qual(call.func) or ""
        last = q.split(".")[-1] if q else (call.func.attr if isinstance(call.func, ast.Attribute) else "")
        return (
            last in vocab.KERNEL_BUILDERS
            or q == "torch.utils.cpp_extension.load"
            or (q.startswith("triton.") and last == "jit")
        )

    def _refers_to_kernel(self, value: ast.AST) -> bool:
        for node in ast.walk(value):
            if isinstance(node, ast.Call) and self.is_builder(node):
                return True
            if isinstance(node, ast.Name) and node.id in self.kernels | self.extensions:
                return True
            if self._is_self_attr(node) and node.attr in self.self_extensions:
                return True
        return False

    @staticmethod
    def _is_self_attr(node: ast.AST) -> TypeGuard[ast.Attribute]:
        return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"

    def _bind(self, targets: list[ast.expr], value: ast.expr) -> None:
        q = self.qual(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        layer = isinstance(value, ast.Call) and self._is_layer(value)
        kernel = self._refers_to_kernel(value)
        refs = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        for target in targets:
            if isinstance(target, ast.Name):
                if q and target.id not in self.aliases:
                    self.aliases[target.id] = q
                if kernel:
                    self.extensions.add(target.id)
                if layer:
                    self.layers.add(target.id)
            elif self._is_self_attr(target):
                attr = target.attr
                if q:
                    self.self_aliases.setdefault(attr, q)
                if kernel:
                    self.self_extensions.add(attr)
                if layer:
                    self.layers.add(attr)
                self.self_refs.setdefault(attr, set()).update(refs)

    def _is_layer(self, call: ast.Call) -> bool:
        q = self.qual(call.func) or ""
        if not q.startswith("torch.nn.") or q.startswith("torch.nn.functional"):
            return False
        last = q.split(".")[-1]
        containers = {"Parameter", "ParameterList", "ParameterDict", "Module", "Identity", "Buffer"}
        return last[:1].isupper() and last not in containers

    # ---------------------------------------------------------------- ModelNew

    def model_new(self) -> tuple[ast.ClassDef | None, ast.expr | None]:
        """(the class ModelNew is, or None; the value of ``ModelNew = ...`` when it is an assignment)."""
        assigned = None
        for node in top_level(self.tree.body):
            if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
                return node, None
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "ModelNew" for t in node.targets
            ):
                assigned = node.value
        if isinstance(assigned, ast.Name) and assigned.id in self.classes:
            return self.classes[assigned.id], assigned
        return None, assigned

    def bases(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """``cls`` and its candidate-defined bases, nearest first."""
        chain, queue = [], [cls]
        while queue:
            c = queue.pop(0)
            if c in chain:
                continue
            chain.append(c)
            queue += [self.classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in self.classes]
        return chain

    def method(self, cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
        """The method ``name`` of ``cls`` or of its candidate-defined bases."""
        for c in self.bases(cls):
            for node in c.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                    return node  # type: ignore[return-value]
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    if isinstance(node.value, ast.Name) and node.value.id in self.functions:
                        return self.functions[node.value.id]
        return None

    def methods(self, cls: ast.ClassDef) -> list[ast.FunctionDef]:
        return [n for c in self.bases(cls) for n in c.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]  # type: ignore[misc]

    def reachable(self, cls: ast.ClassDef) -> list[ast.FunctionDef]:
        """``forward`` (or, without one, every method but ``__init__``) and everything it refers to."""
        forward = self.method(cls, "forward") or self.method(cls, "__call__")
        start = [forward] if forward else [m for m in self.methods(cls) if m.name != "__init__"]
        return self.closure(start, cls)

    def closure(self, start: Sequence[ast.AST], cls: ast.ClassDef | None = None) -> list[Any]:
        """``start`` and the functions and methods it refers to, transitively (``self.`` resolves in ``cls``)."""
        seen: list[Any] = []
        queue = list(start)
        while queue:
            fn = queue.pop(0)
            if fn in seen:
                continue
            seen.append(fn)
            for node in ast.walk(fn):
                names: set[str] = set()
                if isinstance(node, ast.Name):
                    names.add(node.id)
                elif self._is_self_attr(node):
                    attr = node.attr
                    found = self.method(cls, attr) if cls is not None else None
                    if found:
                        queue.append(found)
                    names |= self.self_refs.get(attr, set())
                elif (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in self.classes
                ):
                    names.add(node.value.id)
                for name in names:
                    if name in self.functions and name not in self.kernels:
                        queue.append(self.functions[name])
                    elif name in self.classes:
                        queue += self.methods(self.classes[name])
        return seen

    def uses_kernel(self, functions: list[ast.FunctionDef]) -> list[str]:
        """How ``functions`` launch or refer to the candidate's kernels (empty: they do not)."""
        uses = []
        for fn in functions:
            for node in ast.walk(fn):
                if isinstance(node, ast.Name) and node.id in self.kernels | self.extensions:
                    uses.append(f"{node.id} ({line_of(node)})")
                elif isinstance(node, ast.Attribute) and node.attr in self.kernels and self.qual(node) is None:
                    # a kernel kept in a class or an instance; not a module's function of the same name (torch.relu)
                    uses.append(f"{unparsed(node, 80)} ({line_of(node)})")
                elif self._is_self_attr(node) and node.attr in self.self_extensions:
                    uses.append(f"self.{node.attr} ({line_of(node)})")
                elif isinstance(node, ast.Call) and self.is_builder(node):
                    uses.append(f"a kernel build ({line_of(node)})")
                elif isinstance(node, ast.Attribute):
                    q = self.qual(node) or ""
                    parts = q.split(".")
                    if q.startswith("torch.ops.") and len(parts) >= 4 and parts[2] not in vocab.ATEN_NAMESPACES:
                        uses.append(f"{q} ({line_of(node)})")
        return uses

    def defines_kernels(self) -> list[str]:
        """The kernels and kernel builds the module has, wherever they are."""
        found = sorted(self.kernels)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and self.is_builder(node):
                found.append(f"{self.qual(node.func) or 'a kernel build'} ({line_of(node)})")
        return found

    # ---------------------------------------------------------------- torch compute

    def torch_compute(self, nodes: Sequence[ast.AST], calls: bool = True) -> list[str]:
        """PyTorch compute in ``nodes`` (kernels' own bodies are skipped), as ``what (line N)``: calls (unless not
        ``calls``) and compute functions taken as values (``map(torch.relu, xs)``, ``@torch.compile``)."""
        found: list[str] = []
        for top in nodes:
            called = set()
            for node in self._walk_outside_kernels(top):
                if isinstance(node, ast.Call):
                    called.add(id(node.func))
                elif isinstance(node, ast.Attribute):
                    called.add(id(node.value))  # a prefix of a longer name, not a value of its own
                what = self._compute_call(node) if calls else None
                if what is None and id(node) not in called:
                    what = self._compute_value(node)
                if what:
                    found.append(f"{what} ({line_of(node)})")
        return found

    def kept_values(self, functions: Sequence[ast.AST]) -> list[ast.expr]:
        """The values the module level and ``self.<attr> = ...`` assignments give the names ``functions`` read:
        a compute function kept there (``ACTS = {"relu": torch.relu}``) is called from ``functions``."""
        names = {n.id for fn in functions for n in ast.walk(fn) if isinstance(n, ast.Name)}
        attrs = {n.attr for fn in functions for n in ast.walk(fn) if self._is_self_attr(n)}
        values = []
        for stmt in top_level(self.tree.body):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id in names for t in targets):
                    values.append(stmt.value)
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(self._is_self_attr(t) and t.attr in attrs for t in targets):
                    values.append(node.value)
            elif self.literal_setattr(node):
                obj, name, value = node.args
                if isinstance(obj, ast.Name) and obj.id == "self" and cast(ast.Constant, name).value in attrs:
                    values.append(value)
        return values

    def _walk_outside_kernels(self, top: ast.AST) -> Iterator[ast.AST]:
        stack = [top]
        while stack:
            node = stack.pop()
            if id(node) in self.kernel_defs:
                continue
            yield node
            stack.extend(reversed(list(ast.iter_child_nodes(node))))

    def _compute_call(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return "the @ operator (a matmul)"
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        q = self.qual(func)
        if q and q.startswith("torch."):
            return self._torch_call(q)
        if isinstance(func, ast.Name) and func.id in self.layers:
            return f"the nn layer {func.id}"
        if self._is_self_attr(func) and func.attr in self.layers:
            return f"the nn layer self.{func.attr}"
        if isinstance(func, ast.Subscript) and self._is_self_attr(func.value) and func.value.attr in self.layers:
            return f"the nn layers in self.{func.value.attr}"
        if isinstance(func, ast.Attribute) and func.attr in vocab.TENSOR_COMPUTE_METHODS and q is None:
            root = func.value
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                if self._is_self_attr(root) and root.attr in self.self_extensions:
                    return None
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and (root.id in self.kernels | self.extensions or root.id in self.aliases):
                return None
            return f".{func.attr}()"
        return None

    def _compute_value(self, node: ast.AST) -> str | None:
        """A compute function named but not called here (it is called wherever the value goes), or None."""
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            return None
        q = self.qual(node)
        if q and q.startswith("torch.") and not q.split(".")[-1].startswith("__"):
            what, rest = self._torch_call(q), q[len("torch.") :]
            function = q.split(".")[-1] in vocab.TENSOR_COMPUTE_METHODS or rest.startswith(
                ("nn.functional.", "special.", "linalg.", "fft.", "Tensor.", *vocab.TORCH_COMPILERS)
            )
            return f"{what} (taken as a value)" if what and function else None
        if isinstance(node, ast.Attribute) and node.attr in vocab.TENSOR_COMPUTE_METHODS and q is None:
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if (
                isinstance(root, ast.Name)
                and root.id != "self"
                and not (root.id in self.kernels or root.id in self.extensions or root.id in self.aliases)
            ):
                return f".{node.attr} (a bound method taken as a value)"
        return None

    def _torch_call(self, q: str) -> str | None:
        rest = q[len("torch.") :]
        short = q.replace("torch.nn.functional.", "F.")
        if rest.startswith("ops."):
            parts = rest.split(".")
            return q if len(parts) > 1 and parts[1] in vocab.ATEN_NAMESPACES else None
        if rest.startswith(vocab.TORCH_COMPILERS):
            return f"{q} (its kernels are generated by torch, not written by you)"
        if rest.startswith("nn.functional."):
            return short
        if rest.startswith("Tensor."):
            return q if rest.split(".")[-1] in vocab.TENSOR_COMPUTE_METHODS else None
        if rest.startswith(("special.", "linalg.", "fft.", "sparse.", "nested.")):
            return q
        if rest.startswith(vocab.TORCH_NEUTRAL_PREFIXES) or rest in vocab.TORCH_LAYOUT:
            return None
        if rest.startswith("nn.") and rest.split(".")[-1][:1].isupper():
            return f"{q} built inside forward"
        return q if "." not in rest else None


def unparsed(node: ast.AST, limit: int = 60) -> str:
    """``node`` as source, on one line, at most ``limit`` characters."""
    try:
        text = " ".join(ast.unparse(node).split())
    except (RecursionError, ValueError, AttributeError):
        text = type(node).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def under_any(q: str, names: tuple[str, ...], exact: bool = False) -> str | None:
    """The entry of ``names`` that ``q`` is (or, unless ``exact``, lies under), matched at any depth of ``q``
    (``os.sys.path`` is ``sys.path``); None when none is."""
    parts = q.split(".")
    for i in range(len(parts)):
        tail = ".".join(parts[i:])
        for name in names:
            if tail == name or (not exact and tail.startswith(name + ".")):
                return name
    return None


def module_rooted(m: CandidateModule, node: ast.AST) -> str | None:
    """The module an expression is reached from (``torch`` for ``torch.nn.functional``), or None."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return m.aliases.get(node.id) if isinstance(node, ast.Name) else None
