"""The calls of ``torch_ops=strict`` (:class:`StrictCalls`, a part of the strict reading in :mod:`.strict`): what
calling each kind of value gives, and which calls are PyTorch compute (a torch function or layer, a tensor method,
an array library's or a kernel library's op, Python's arithmetic on what may be a tensor)."""

from __future__ import annotations

import ast
import sys
from typing import TYPE_CHECKING, Any

from cudaforge.eval.guards.source.module import line_of, under_any, unparsed
from cudaforge.eval.guards.source.names import literal_name
from cudaforge.eval.guards.source.strict_vocab import (
    ARITHMETIC_BUILTINS,
    ARRAY_LAYOUT,
    ARRAY_MODULES,
    CONTAINER_READS,
    EMPTY,
    KERNEL,
    KERNEL_LIBRARY_OPS,
    KERNEL_MODULE_ROOTS,
    OPERATOR_PLAIN,
    PLAIN_BUILTINS,
    STDLIB_ARITHMETIC,
    TENSOR_LAYOUT_METHODS,
    TENSOR_SCALAR_METHODS,
    TORCH_SCALAR,
    TORCH_STRICT_NEUTRAL,
    N,
    T,
    U,
    may_tensor,
    short_torch_name,
)
from cudaforge.eval.guards.source.vocab import KERNEL_BUILDERS, TORCH_COMPILERS, TORCH_LAYOUT


class StrictCalls:
    """The call half of the strict reading: mixed into its interpreter, whose state (``_write``, ``_read``,
    ``_flag``, ``_seed``, ``_elements`` ...) these methods use."""

    launches: list[str]
    judging: bool
    mode: str
    job: Any
    seq_kind: dict
    namespaces: set[str]

    if TYPE_CHECKING:  # the interpreter's own methods (``strict._Strict``), which these use

        def _read(self, key: tuple) -> set: ...
        def _write(self, key: tuple, tokens) -> None: ...
        def _flag(self, node: ast.AST | None, text, kind: str = "call") -> None: ...
        def _seed(self, fn: ast.AST, offset: int, tokens: set) -> None: ...
        def _edge(self, fn: ast.AST) -> None: ...
        def _register(self, tokens) -> None: ...
        def _elements(self, tokens) -> frozenset: ...
        def _inst_attr(self, cls: ast.ClassDef, attr: str, skip_first: bool = False) -> set: ...

    def _apply(self, callee, args: list, kwargs: list, node: ast.Call | None) -> set:
        out: set = set()
        if KERNEL in callee:  # what a kernel call gave (tilelang's jit returns the kernel): not a tensor to call
            callee = set(callee) - {T}
        for tok in callee:
            out |= self._apply_one(tok, args, kwargs, node)
        return out

    def _callee_text(self, node: ast.Call | None) -> str:
        return unparsed(node.func) if node is not None else "a decorator"

    def _apply_one(self, tok, args: list, kwargs: list, node: ast.Call | None) -> set:
        kind = tok if isinstance(tok, str) else tok[0]
        if kind == "own":
            target, offset = tok[1], tok[2]
            if isinstance(target, ast.ClassDef):
                for init in self._inst_attr(target, "__init__"):
                    if isinstance(init, tuple) and init[0] == "own" and not isinstance(init[1], ast.ClassDef):
                        self._bind_args(init[1], init[2], args, kwargs)
                        self._edge(init[1])
                return {("inst", target)}
            self._bind_args(target, offset, args, kwargs)
            self._edge(target)
            return set(self._read(("ret", id(target))))
        if kind == "inst":
            called = {t for t in self._inst_attr(tok[1], "__call__") if t[0] in ("own", "layer")} or self._inst_attr(
                tok[1], "forward"
            )
            return self._apply(called, args, kwargs, node)
        if tok == KERNEL:
            if self.mode == "reach" and node is not None:
                self.launches.append(f"{unparsed(node.func)} ({line_of(node)})")
            self._escape(args, kwargs, node)
            return {KERNEL, T}
        if kind == "torch":
            return self._torch_call(tok[1], args, kwargs, node)
        if kind == "mod":
            return self._module_call(tok[1], args, kwargs, node)
        if kind == "builtin":
            return self._builtin_call(tok[1], args, kwargs, node)
        if kind == "tmeth":
            return self._tensor_method(tok[1], args, kwargs, node, f"{self._callee_text(node)}()")
        if kind == "umeth":
            self._escape(args, kwargs, node, layers=False)
            return {U}
        if kind == "pymeth":
            return self._container_method(tok[1], tok[2], args, kwargs)
        if kind == "layer":
            self._flag(node, f"the nn layer {self._callee_text(node)} ({tok[1].replace('torch.nn.', 'nn.')})")
            return {T}
        if kind == "tobj":
            if tok[1].startswith("torch.library"):
                self._register({t for _, tokens, _ in args for t in tokens})
                return {t for _, tokens, _ in args for t in tokens if isinstance(t, tuple) and t[0] == "own"} | {tok}
            if self._neutral(tok[1][len("torch.") :]):
                return {N}
            self._flag(node, f"{self._callee_text(node)}(...) calls a PyTorch object ({tok[1]})")
            return {T}
        if kind == "seq" and self.seq_kind.get(tok[1]) == "sequential":
            out: set = set()
            for element in self._read(("elems", tok[1])):
                out |= self._apply_one(element, args, kwargs, node)
            return out
        if tok == N:
            return {N}
        self._flag(
            node,
            f"{self._callee_text(node)}(...) calls what the guards cannot resolve to your kernel, your "
            "own code or an allowed operation: call your kernels and functions by name",
        )
        return {U}

    def _bind_args(self, fn: ast.AST, offset: int, args: list, kwargs: list) -> None:
        """Bind a call's arguments to the parameters of the candidate's ``fn`` (``offset`` already bound)."""
        a = fn.args  # type: ignore[attr-defined]
        positional = [*a.posonlyargs, *a.args]
        i, spread = offset, False
        for _, tokens, starred in args:
            if starred or spread:
                spread = True
                elements = self._elements(tokens) if starred else tokens
                for p in positional[i:]:
                    self._write(("v", id(fn), p.arg), elements)
                if a.vararg is not None:
                    self._write(("elems", id(a.vararg)), elements)
                continue
            if i < len(positional):
                self._write(("v", id(fn), positional[i].arg), tokens)
            elif a.vararg is not None:
                self._write(("elems", id(a.vararg)), tokens)
            i += 1
        names = {p.arg for p in positional + a.kwonlyargs}
        for name, _, tokens in kwargs:
            if name is None:
                elements = self._elements(tokens)
                for p in positional[offset:] + a.kwonlyargs:
                    self._write(("v", id(fn), p.arg), elements)
                if a.kwarg is not None:
                    self._write(("elems", id(a.kwarg)), elements)
            elif name in names:
                self._write(("v", id(fn), name), tokens)
            elif a.kwarg is not None:
                self._write(("elems", id(a.kwarg)), tokens)

    def _escape(self, args: list, kwargs: list, node: ast.Call | None, layers: bool = True) -> None:
        """Arguments handed to code the guards do not read (a kernel, an extension, a library): the candidate's
        functions among them may be called back (they are followed, with unknown arguments); a torch layer or
        function handed there would run PyTorch."""
        for arg, tokens, _ in args + [(value, tokens, False) for _, value, tokens in kwargs]:
            for t in tokens:
                if not isinstance(t, tuple):
                    continue
                if t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                    self._seed(t[1], t[2], {U})
                    self._edge(t[1])
                elif t[0] == "layer" and layers:
                    self._flag(
                        node,
                        f"{self._callee_text(node)}(...) is handed the nn layer {unparsed(arg)}, which "
                        "would run PyTorch when called",
                    )

    def _tensor_method(self, name: str, args: list, kwargs: list, node: ast.Call | None, what: str) -> set:
        if name in TENSOR_SCALAR_METHODS or (name == "type" and not args and not kwargs):
            return {N}
        if name in TENSOR_LAYOUT_METHODS:
            return {T}
        self._flag(node, f"{what} is a PyTorch tensor op")
        return {T}

    def _container_method(self, name: str, key, args: list, kwargs: list) -> set:
        if name in ("append", "add", "insert", "appendleft") and args:
            self._write(("elems", key), args[-1][1])
        elif name in ("extend", "update"):
            for _, tokens, _ in args:
                self._write(("elems", key), self._elements(tokens))
            for _, _, tokens in kwargs:
                self._write(("elems", key), tokens)
        elif name in ("setdefault", "__setitem__") and len(args) >= 2:
            self._write(("elems", key), args[1][1])
        if name in ("values", "keys", "items", "copy"):
            return {("seq", key)}
        if name in CONTAINER_READS:
            return set(self._read(("elems", key)))
        return {N}

    def _neutral(self, rest: str) -> bool:
        return any(rest == p or rest.startswith(p + ".") for p in TORCH_STRICT_NEUTRAL)

    def _torch_call(self, q: str, args: list, kwargs: list, node: ast.Call | None) -> set:
        rest = q[len("torch.") :] if q.startswith("torch.") else ""
        parts = rest.split(".")
        last = parts[-1]
        if last in KERNEL_BUILDERS or q == "torch.utils.cpp_extension.load":
            return {KERNEL}
        if rest.startswith("ops."):
            if len(parts) > 2 and parts[1] in self.namespaces:  # the candidate's own op
                if self.mode == "reach" and node is not None:
                    self.launches.append(f"{q} ({line_of(node)})")
                for t in self._read(("registered",)):
                    self._edge(t[1])
                self._escape(args, kwargs, node)
                return {KERNEL, T}
            self._flag(node, q)
            return {T}
        if rest.startswith(TORCH_COMPILERS):
            self._flag(node, f"{q} (its kernels are generated by torch, not written by you)")
            return {("torch", q)}
        if rest.startswith("Tensor."):
            return self._tensor_method(last, args[1:], kwargs, node, q)
        if rest.startswith("library"):
            self._register({t for _, tokens, _ in args for t in tokens})
            return {("tobj", q)}
        if rest in TORCH_SCALAR:
            return {N}
        if rest in TORCH_LAYOUT:
            return (
                {N}
                if last
                in (
                    "no_grad",
                    "enable_grad",
                    "inference_mode",
                    "set_grad_enabled",
                    "is_grad_enabled",
                    "manual_seed",
                    "is_tensor",
                    "is_floating_point",
                    "is_complex",
                )
                else {T}
            )
        if self._neutral(rest):
            if rest in ("nn.Parameter", "nn.parameter.Parameter", "nn.Buffer", "nn.parameter.Buffer"):
                return {T}
            if rest in ("nn.ModuleList", "nn.ModuleDict", "nn.ParameterList", "nn.ParameterDict", "nn.Sequential"):
                key = id(node)
                for _, tokens, _ in args:
                    self._write(("elems", key), tokens if rest == "nn.Sequential" else self._elements(tokens))
                if rest == "nn.Sequential":
                    self.seq_kind[key] = "sequential"
                return {("seq", key)}
            return {N}
        if rest.startswith("nn.") and last[:1].isupper():
            self._flag(node, f"{q.replace('torch.nn.', 'nn.')} built inside forward")
            return {("layer", q)}
        if last[:1].isupper():
            self._flag(node, f"{q} (a PyTorch object)")
            return {("tobj", q)}
        self._flag(node, short_torch_name(q))
        return {T}

    def _module_call(self, q: str, args: list, kwargs: list, node: ast.Call | None) -> set:
        parts = q.split(".")
        root, last = parts[0], parts[-1]
        tokens = [t for _, t, _ in args] + [t for _, _, t in kwargs]
        if last in KERNEL_BUILDERS or (root == "triton" and last == "jit"):
            return {KERNEL}
        if under_any(q, KERNEL_LIBRARY_OPS):
            self._flag(node, f"{q} (a library's kernel, not yours)")
            return {T}
        if root in ARRAY_MODULES:
            if last in ARRAY_LAYOUT or "cuda" in parts[1:-1]:
                return {T} if last in ARRAY_LAYOUT and last not in ("dtype", "get_array_module") else {N}
            if any(may_tensor(t) for t in tokens):
                self._flag(node, f"{q}(...) computes with {root} on what may be a tensor")
                return {T}
            return {N}
        if root in KERNEL_MODULE_ROOTS:
            self._escape(args, kwargs, node)
            return {N} if last in ("cdiv", "next_power_of_2", "ceildiv") else {KERNEL}
        if root in ("operator", "_operator"):
            if last in OPERATOR_PLAIN:
                return set(self._elements(tokens[0])) if last == "getitem" and tokens else {N}
            if any(may_tensor(t) for t in tokens):
                self._flag(node, f"{q}(...) applies Python's operators to what may be tensors")
                return {T}
            return {N}
        if root in ("math", "cmath"):
            if last in ("prod", "fsum", "sumprod") and any(may_tensor(self._elements(t)) for t in tokens):
                self._flag(node, f"{q}(...) multiplies or adds what may be tensors")
                return {T}
            return {N}
        if q.startswith(STDLIB_ARITHMETIC) and any(may_tensor(t | self._elements(t)) for t in tokens):
            self._flag(node, f"{q}(...) applies Python's operators to what may be tensors")
            return {T}
        if q in ("functools.partial", "functools.partialmethod") and args:
            out: set = set()
            for t in args[0][1]:
                if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                    self._bind_args(t[1], t[2], args[1:], kwargs)
                    out.add(("own", t[1], t[2] + len(args) - 1))
                else:
                    out.add(t)
            return out
        if q == "functools.reduce" and len(args) >= 2:
            items = self._elements(args[1][1]) | (args[2][1] if len(args) > 2 else EMPTY)
            return self._apply(args[0][1], [(None, items, False), (None, items, False)], [], node)
        if root in ("functools", "contextlib", "abc", "enum", "typing", "dataclasses"):
            return {("mod", q)} if not args else {t for t in args[0][1]} | {("mod", q)}
        if root in ("itertools", "types", "collections", "weakref", "copy", "queue", "heapq", "bisect", "array"):
            key = id(node)
            for t in tokens:
                self._write(("elems", key), t | self._elements(t))
            if root == "copy":
                return set().union(*tokens) if tokens else {N}
            return {("seq", key)}
        if root in sys.stdlib_module_names:
            return {N}
        return {U}

    def _builtin_call(self, name: str, args: list, kwargs: list, node: ast.Call | None) -> set:
        tokens = [t for _, t, _ in args]
        key = id(node) if node is not None else id(args)
        if name in PLAIN_BUILTINS:
            return {N}
        if name == "type":
            if len(args) != 1:
                return {U}
            out: set = set()
            for t in tokens[0]:
                if isinstance(t, tuple) and t[0] == "inst":
                    out.add(("own", t[1], 0))
                elif t in (T, U):
                    out.add(("torch", "torch.Tensor"))
                else:
                    out.add(N)
            return out
        if name == "super":
            cls = self.job.scope.cls if self.job is not None else None
            return {("super", cls)} if cls is not None else {U}
        if name in ("setattr",) and len(args) == 3 and node is not None and literal_name(node.args[1]):
            self._store_attr(tokens[0], node.args[1].value, tokens[2])  # type: ignore[attr-defined]
            return {N}
        if name in ARITHMETIC_BUILTINS:
            values = [self._elements(tokens[0])] if len(tokens) == 1 and name not in ("abs", "round") else tokens
            for k, _, t in kwargs:
                if k == "key":
                    self._apply(t, [(None, values[0] if values else EMPTY, False)], [], node)
                elif k in ("start", "default"):
                    values = values + [t]
            if any(may_tensor(t) for t in values):
                self._flag(node, f"{self._callee_text(node)}(...) applies Python's operators to what may be tensors")
                return {T}
            if name in ("min", "max"):
                return set().union(*values) if values else {N}
            return {("seq", key)} if name == "sorted" else {N}
        if name in ("list", "tuple", "set", "frozenset", "reversed", "iter", "dict", "sorted"):
            for t in tokens:
                self._write(("elems", key), self._elements(t))
            for _, _, t in kwargs:
                self._write(("elems", key), t)
            return {("seq", key)}
        if name in ("enumerate", "zip"):
            columns = (
                [frozenset({N}), self._elements(tokens[0])]
                if name == "enumerate" and tokens
                else [self._elements(t) for t in tokens]
            )
            row = (key, "row")
            for i, column in enumerate(columns):
                self._write(("tup", row, i), column)
                self._write(("elems", row), column)
            self._write(("elems", key), {("tup", row)})
            return {("seq", key)}
        if name in ("map", "filter") and args:
            items = [(None, self._elements(t), False) for t in tokens[1:]]
            result = self._apply(tokens[0], items, [], node) if N not in tokens[0] or len(tokens[0]) > 1 else EMPTY
            self._write(("elems", key), result if name == "map" else (items[0][1] if items else EMPTY))
            return {("seq", key)}
        if name == "next" and tokens:
            return set(self._elements(tokens[0])) | (set(tokens[1]) if len(tokens) > 1 else set())
        if name[:1].isupper():  # exceptions and warnings keep what they are given
            for t in tokens:
                self._write(("elems", key), t)
            return {("seq", key)}
        return {U}
