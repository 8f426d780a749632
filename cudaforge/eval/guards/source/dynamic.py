"""The ``dynamic_code`` guard and the files a candidate writes (:class:`_Paths`): code made from strings, modules
loaded from files, names computed at run time."""

from __future__ import annotations

import ast
import re
from typing import cast

from cudaforge.eval.guards.source.imports import (
    import_guard,
    import_system,
    import_system_call,
    import_system_object,
    imported_modules,
    reexported_module,
)
from cudaforge.eval.guards.source.module import CandidateModule, line_of, module_rooted, under_any, unparsed
from cudaforge.eval.guards.source.names import bound_name, literal_name
from cudaforge.eval.guards.source.vocab import (
    DYNAMIC_BUILTINS,
    DYNAMIC_DUNDERS,
    DYNAMIC_NAMES,
    DYNAMIC_SUBMODULES,
    IMPORT_MACHINERY,
    INTERNAL_NAMES,
    INTERPRETER_INTERNALS,
    KNOWN_MODULES,
    LOADABLE_SUFFIXES,
    LOOKUP_BUILTINS,
    MAX_LISTED,
    PATH_CALLS,
    TEMP_FILES,
)


class _Paths:
    """The files a candidate's calls write, and how their names end as far as its text says. Indexed in one pass
    and resolved with a memo, so its cost grows with the source, not with the product of its names and writes."""

    def __init__(self, m: CandidateModule) -> None:
        self.m = m
        self.owner: dict[int, ast.AST | None] = {}
        """id(node) -> the function it is in (None: the module level)."""
        self.values: dict[tuple[int, str], list[ast.expr]] = {}
        """(id of a scope (0: the module level), name) -> the values the scope gives the name."""
        self.self_values: dict[str, list[ast.expr]] = {}
        """``self.<attr>`` -> the values assigned to it."""
        self.calls: dict[str, list[ast.Call]] = {}
        """Called name (``f`` of ``f(...)`` and ``obj.f(...)``) -> the calls."""
        self.methods: set[int] = set()
        """ids of functions defined directly in a class body (called with ``self`` bound)."""
        self.memo: dict[int, set[str | None]] = {}
        stack: list[tuple[ast.AST, ast.AST | None]] = [(m.tree, None)]
        while stack:
            node, scope = stack.pop()
            self.owner[id(node)] = scope
            self._index(node, scope)
            inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else scope
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))

    def _index(self, node: ast.AST, scope: ast.AST | None) -> None:
        """Record what ``node`` binds (assignment, ``with ... as``, ``for`` over a literal list), calls or defines."""
        if isinstance(node, ast.ClassDef):
            self.methods.update(id(n) for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            self.calls.setdefault(name, []).append(node)
        pairs: list[tuple[ast.AST, ast.expr]] = []
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
            pairs = [(t, node.value) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            pairs = [(node.optional_vars, node.context_expr)]
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, (ast.List, ast.Tuple)):
            pairs = [(node.target, element) for element in node.iter.elts]
        for target, value in pairs:
            if isinstance(target, ast.Name):
                self.values.setdefault((id(scope) if scope else 0, target.id), []).append(value)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                self.self_values.setdefault(target.attr, []).append(value)
            elif isinstance(target, ast.Tuple):
                for index, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):  # a literal tuple's element, or a call's whole result
                        literal = isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts)
                        given = value.elts[index] if literal else value  # type: ignore[attr-defined]
                        self.values.setdefault((id(scope) if scope else 0, element.id), []).append(given)

    def writes(self, call: ast.Call) -> list[tuple[str, ast.expr, bool]]:
        """``(what, expression, is_suffix)`` for each file ``call`` creates or renames into: the expression is
        the file's path, or (``is_suffix``) the suffix a temporary file is given."""
        m, func, args = self.m, call.func, call.args
        q = m.qual(func) or ""
        what = f"{unparsed(func, 60)}(...)"
        path = args[0] if args else next((k.value for k in call.keywords if k.arg == "file"), None)
        if (isinstance(func, ast.Name) and func.id == "open" and m.builtin("open")) or q in ("io.open", "codecs.open"):
            return [(what, path, False)] if path is not None and _opens_for_writing(call, 1) else []
        if q in TEMP_FILES:
            suffix = next((k.value for k in call.keywords if k.arg == "suffix"), None)
            return [(what, suffix, True)] if suffix is not None else []
        if (
            q
            in (
                "os.rename",
                "os.replace",
                "os.renames",
                "os.link",
                "os.symlink",
                "shutil.copy",
                "shutil.copy2",
                "shutil.copyfile",
                "shutil.move",
            )
            and len(args) >= 2
        ):
            return [(what, args[1], False)]
        if q == "torch.save" and len(args) >= 2:
            return [(what, args[1], False)]
        if q == "numpy.savetxt" and args:
            return [(what, args[0], False)]
        if not isinstance(func, ast.Attribute) or q:
            return []
        if func.attr in ("write_text", "write_bytes", "symlink_to", "hardlink_to", "touch"):
            return [(what, func.value, False)]
        if func.attr == "open" and _opens_for_writing(call, 0):
            return [(what, func.value, False)]
        if func.attr in ("rename", "replace", "tofile") and len(args) == 1:
            return [(what, args[0], False)]
        return []

    def tails(self, expr: ast.AST, depth: int = 0) -> set[str | None]:
        """How the name ``expr`` stands for ends, as literal text (None: computed, the guards cannot tell)."""
        if id(expr) not in self.memo:
            self.memo[id(expr)] = {None}  # while it is worked out: a name defined through itself is computed
            self.memo[id(expr)] = self._tails(expr, depth) if depth <= 8 else {None}
        return self.memo[id(expr)]

    def _union(self, values: list[ast.expr], depth: int) -> set[str | None]:
        return set().union(*(self.tails(v, depth) for v in values)) if values else {None}

    def _tails(self, expr: ast.AST, depth: int) -> set[str | None]:
        more = depth + 1
        if isinstance(expr, ast.Constant):
            return {expr.value} if isinstance(expr.value, str) else {None}
        if isinstance(expr, ast.JoinedStr):
            last = expr.values[-1] if expr.values else ast.Constant("")
            return {cast(str, last.value)} if isinstance(last, ast.Constant) else {None}  # an f-string's text is str
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, (ast.Add, ast.Div)):
                return self.tails(expr.right, more)
            left = expr.left
            if isinstance(expr.op, ast.Mod) and isinstance(left, ast.Constant) and isinstance(left.value, str):
                return {None} if PERCENT_FORMAT_AT_END.search(left.value[-256:]) else {left.value}
            return {None}
        if isinstance(expr, ast.Call):
            return self._call_tails(expr, more)
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Call):
            return self._call_tails(expr.value, more)  # tempfile.mkstemp(suffix=...)[1]
        if isinstance(expr, ast.Attribute) and expr.attr == "name":
            return self.tails(expr.value, more)  # a temporary file's name
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return self._union(self.self_values.get(expr.attr, []), more)
        if isinstance(expr, ast.Name):
            return self._name_tails(expr, more)
        return {None}

    def _call_tails(self, call: ast.Call, depth: int) -> set[str | None]:
        func, args = call.func, call.args
        q = self.m.qual(func) or ""
        if q in TEMP_FILES or q == "tempfile.mkdtemp":
            suffix = next((k.value for k in call.keywords if k.arg == "suffix"), None)
            return self.tails(suffix, depth) if suffix is not None else {""}
        if q in PATH_CALLS or (isinstance(func, ast.Name) and func.id == "str" and not self.m.bindings["str"]):
            return self.tails(args[-1], depth) if args else {""}
        if isinstance(func, ast.Attribute) and not q:
            if func.attr == "format" and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
                return {None} if func.value.value.endswith("}") else {func.value.value}
            if func.attr in ("joinpath", "with_suffix", "with_name") and args:
                return self.tails(args[-1], depth)
            if func.attr in ("resolve", "absolute", "expanduser") and not args:
                return self.tails(func.value, depth)
        return {None}

    def _name_tails(self, name: ast.Name, depth: int) -> set[str | None]:
        scope = self.owner.get(id(name))
        values = self.values.get((id(scope) if scope else 0, name.id))
        if values:
            return self._union(values, depth)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if name.id in [a.arg for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs]:
                return self._argument_tails(scope, name.id, depth)
            return self._union(self.values.get((0, name.id), []), depth)  # a global
        return {None}

    def _argument_tails(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str, depth: int) -> set[str | None]:
        """The tails of what every call of ``fn`` in the module passes as ``param`` (None when it is never called)."""
        positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        bound = 1 if id(fn) in self.methods and positional[:1] in (["self"], ["cls"]) else 0  # staticmethods: 0
        defaults = dict(zip(positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults))
        defaults.update({a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None})
        index = positional.index(param) - bound if param in positional else -1
        found: set[str | None] = set()
        method = id(fn) in self.methods
        for call in self.calls.get(fn.name, []):
            if isinstance(call.func, ast.Attribute) != method:  # f.write(...) is no call of a function write
                continue
            value = next((k.value for k in call.keywords if k.arg == param), None)
            if value is None and 0 <= index < len(call.args) and not isinstance(call.args[index], ast.Starred):
                value = call.args[index]
            value = value if value is not None else defaults.get(param)
            found |= self.tails(value, depth) if value is not None else {None}
        return found or {None}


PERCENT_FORMAT_AT_END = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[diouxXeEfFgGcrsa]$")
"""A ``%`` conversion ending a format string: the formatted name ends with a value, not a literal."""


def _opens_for_writing(call: ast.Call, mode_index: int) -> bool:
    """Whether an ``open`` call's mode (argument ``mode_index`` or ``mode=``) is a literal that writes."""
    mode = (
        call.args[mode_index]
        if len(call.args) > mode_index
        else next((k.value for k in call.keywords if k.arg == "mode"), None)
    )
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")


DYNAMIC_ADVICE = "write that code in the candidate itself"
"""What every ``dynamic_code`` finding about code kept elsewhere tells the Coder."""


def _lookup(what: str) -> str:
    """The evidence for an attribute lookup the guards cannot follow."""
    return (
        f"{what} looks an attribute up by a name the guards cannot read, so they cannot tell what it reaches; "
        "name the attribute in the code (index an nn.ModuleList or a list by number)"
    )


def _dynamic_imports(node: ast.Import | ast.ImportFrom, built: set[str]) -> list[str]:
    """What an import loads that the guards cannot see: a module that imports, unpickles or runs code; a relative
    import; a module neither the evaluator provides nor the candidate builds (``built``: its extensions' names)."""
    found = []
    for name in imported_modules(node):
        root = name.split(".")[0]
        if import_guard(name) == "dynamic_code":
            found.append(
                f"import {name} loads or rebuilds code the guards cannot see (modules, pickles, code "
                f"objects); {DYNAMIC_ADVICE}"
            )
        elif not root:
            found.append(
                f"from {name} import ...: the candidate is a single file with nothing beside it to import; "
                f"{DYNAMIC_ADVICE}"
            )
        elif import_guard(name) is None and root not in KNOWN_MODULES and root not in built:
            found.append(
                f"import {name}: {root} is neither a package the evaluator provides (the standard library, "
                "torch, triton, numpy, cupy, cutlass, tilelang ...) nor built by the candidate, so only a "
                f"module the candidate wrote could answer; {DYNAMIC_ADVICE}"
            )
    return found


def _own_prefixed(obj: ast.expr, name: ast.expr) -> bool:
    """``getattr(self, f"scale_{i}")``: the model's own attribute under a name with a literal start (buffers and
    layers registered in a loop), common in honest code. It is not dynamic code: under ``torch_ops=strict`` what it
    returns is unknown to the analysis, and a call of an unknown is judged as compute there."""
    return (
        isinstance(obj, ast.Name)
        and obj.id == "self"
        and isinstance(name, ast.JoinedStr)
        and bool(name.values)
        and isinstance(name.values[0], ast.Constant)
        and str(name.values[0].value).isidentifier()
        and not str(name.values[0].value).startswith("_")
    )


def _dynamic_call(m: CandidateModule, call: ast.Call, paths: _Paths) -> list[str]:
    """What a call does that the guards cannot follow: change where imports come from, look an attribute up by a
    computed name, keep a ``methodcaller``/``attrgetter`` for later, write a file Python could load."""
    func, args = call.func, call.args
    found = []
    changed = import_system_call(m, call) or next(
        ("sys.path" for a in args if import_system_object(m, a) == "sys.path"), None
    )
    if changed:
        found.append(
            f"{unparsed(func, 60)}(...) can change {changed}, where imports come from; import only the "
            "standard library and the kernel languages' packages"
        )
    elif (
        isinstance(func, ast.Name)
        and func.id in LOOKUP_BUILTINS
        and m.builtin(func.id)
        and len(args) >= 2
        and not literal_name(args[1])
        and not module_rooted(m, args[0])
        and not _own_prefixed(args[0], args[1])
    ):
        found.append(_lookup(f"{func.id}({unparsed(args[0], 40)}, {unparsed(args[1], 40)})"))
    elif under_any(
        m.qual(func) or "",
        ("operator.methodcaller", "operator.attrgetter", "_operator.methodcaller", "_operator.attrgetter"),
        exact=True,
    ):
        found.append(
            f"{unparsed(call, 60)} is kept or passed instead of applied at once (or its name is "
            "computed), so the guards cannot tell what it calls; call the method itself"
        )
    for what, expr, is_suffix in paths.writes(call):
        tails = paths.tails(expr)
        loadable = sorted(t for t in tails if t is not None and t.lower().endswith(LOADABLE_SUFFIXES))
        if loadable:
            written = f"a file ending in {loadable[0]!r}" if is_suffix else repr(loadable[0][-60:])
            found.append(
                f"{what} writes {written}, which Python can import or load; the candidate is one file: {DYNAMIC_ADVICE}"
            )
        elif None in tails:
            found.append(
                f"{what} writes a file whose name the guards cannot work out (it may be a module the "
                "candidate then loads); write only CUDA/C++ sources, under a name that ends in a literal "
                ".cu, .cpp, .h or .cuh"
            )
    return found


def _dynamic_name(m: CandidateModule, node: ast.AST, called: set[int], prefixes: set[int]) -> list[str]:
    """What a name or attribute reaches that the guards cannot see: builtins that run strings or look names up
    (called, taken as values, or rebound), the import machinery, modules and functions that load or build code,
    ``__dict__``-like lookups. ``called``: ids of called expressions; ``prefixes``: ids of the bases of longer
    attribute chains (only the whole chain is judged)."""
    bound = bound_name(node)
    if bound in LOOKUP_BUILTINS and m.builtin(bound):
        return [f"binds {bound}, a builtin the guards read by name, to something else; choose another name"]
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and m.builtin(node.id):
        if node.id in DYNAMIC_BUILTINS:
            shown = f"{node.id}(...)" if id(node) in called else f"{node.id}, taken as a value,"
            return [f"{shown} runs code the guards cannot see; {DYNAMIC_ADVICE}"]
        if node.id in (*LOOKUP_BUILTINS, "open") and id(node) not in called:
            return [_lookup(f"{node.id}, taken as a value,")]
        if node.id in IMPORT_MACHINERY:
            return [f"{node.id} hands the import machinery (a loader for any file) to the candidate; {DYNAMIC_ADVICE}"]
    if isinstance(node, ast.Attribute) and node.attr in DYNAMIC_DUNDERS:
        return [_lookup(unparsed(node, 60))]
    if isinstance(node, ast.Attribute) and (
        node.attr in INTERPRETER_INTERNALS
        or (
            isinstance(node.value, ast.Attribute)
            and node.value.attr == "__class__"
            and node.attr.startswith("__")
            and node.attr not in ("__name__", "__qualname__", "__module__", "__doc__")
        )
    ):
        return [
            f"{unparsed(node)} reaches the interpreter's internals (a function's globals and builtins, a class's "
            f"subclasses), from which any code runs; {DYNAMIC_ADVICE}"
        ]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in INTERNAL_NAMES:
        return [
            f"the string {node.value!r} names an interpreter internal: code that looks names up from strings "
            f"(torch.fx's call_method, a lookup by name) reaches anything through it; {DYNAMIC_ADVICE}"
        ]
    if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in prefixes:
        return []
    q = m.qual(node) or ""
    if under_any(q, DYNAMIC_NAMES) or any(part in DYNAMIC_SUBMODULES for part in q.split(".")[1:]):
        return [
            f"{q} builds or loads code, a module or a library the guards cannot see; build kernels from source "
            "in the candidate (load_inline, @triton.jit)"
        ]
    if under_any(q, ("sys.meta_path", "sys.path_hooks", "sys.path_importer_cache")):
        return [f"{q} is the import machinery; import only the standard library and the kernel languages' packages"]
    return []


def dynamic_code_lines(m: CandidateModule) -> list[str]:
    """What the ``dynamic_code`` guard sees: code that runs without being in the candidate's text (strings run as code, modules it wrote
    or loads, pickles, imports of anything but the packages the evaluator provides), and attribute lookups by
    names the guards cannot read, anywhere in the candidate. One finding per line (the outermost thing found
    there), at most ``MAX_LISTED``, each starting ``line N:``."""
    paths = _Paths(m)
    nodes = list(ast.walk(m.tree))
    prefixes = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    built = {
        name
        for n in nodes
        if isinstance(n, ast.Call) and m.is_builder(n)
        for name in map(literal_name, [*n.args[:1], *(k.value for k in n.keywords if k.arg == "name")])
        if name
    }
    items: list[tuple[ast.AST, str]] = []
    for node in nodes:
        found = _dynamic_name(m, node, called, prefixes)
        reached = reexported_module(m, node, prefixes)
        if reached and import_guard(reached) == "dynamic_code":
            found.append(
                f"{unparsed(node, 60)} reaches {reached} through another module; import only the standard "
                "library and the kernel languages' packages, and load nothing at run time"
            )
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += _dynamic_imports(node, built)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            found += [
                f"{unparsed(t, 60)} = ... changes where imports come from; import only the standard "
                "library and the kernel languages' packages"
                for t in targets
                if import_system(m, t)
            ]
        elif isinstance(node, ast.Call):
            found += _dynamic_call(m, node, paths)
        items += [(node, text) for text in found]
    first: dict[str, str] = {}
    for node, text in sorted(items, key=lambda item: getattr(item[0], "lineno", 0)):
        first.setdefault(line_of(node), f"{line_of(node)}: {text}")
    lines = list(first.values())
    if len(lines) > MAX_LISTED:
        lines = lines[: MAX_LISTED - 1] + [f"{lines[MAX_LISTED - 1]} (and {len(lines) - MAX_LISTED} more such places)"]
    return [line + "." for line in lines]
