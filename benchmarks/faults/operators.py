"""Fault operators: each takes an honest kernel's source and returns faulty versions of it, one fault per version.

The operators are generic source transforms, written without looking at which faults the checker catches: they
find every site of their kind in a kernel and change it the way a real bug would. Triton kernels are changed through
Python's AST (inside ``@triton.jit`` functions, or in the host code of ``ModelNew.forward``); CUDA kernels through
their source string (inside ``__global__`` functions). Host-level faults (a parameter ignored, a size baked to the
scored shape, a stale output) apply to any language, as they change ``ModelNew.forward``.

Kinds (``KINDS``): ``bounds`` (an off-by-one or a dropped bound in a mask or a guard), ``grid`` (a launch grid rounded
down), ``dropped_term`` (one operand of a sum or difference left out), ``ignored_parameter`` (a parameter or buffer
that is constant when built replaced by its initial value), ``baked_shape`` (a size read from an input replaced by
its value at the scored shape), ``unsafe_numerics`` (the max left out of an exp, the epsilon left out of a root),
``precision`` (loads, the accumulator, the product or the store in fp16 or bf16), ``stale_output`` (an output kept
and returned again when the input's address repeats), and on a GPU ``missing_sync`` (a ``__syncthreads`` removed).
"""

from __future__ import annotations

import ast
import copy
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

KINDS = (
    "bounds",
    "grid",
    "dropped_term",
    "ignored_parameter",
    "baked_shape",
    "unsafe_numerics",
    "precision",
    "stale_output",
    "missing_sync",
)


@dataclass
class Fault:
    """One faulty version of a kernel."""

    kind: str
    operator: str
    site: str
    """Where in the source: a line and what was changed, in a few words."""
    source: str

    @property
    def name(self) -> str:
        return f"{self.operator}@{self.site}"


# ----------------------------------------------------------------------------------------------- AST helpers


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def jit_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    """The ``@triton.jit`` functions of a module."""
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_jit(n)]


def forward_function(tree: ast.Module) -> ast.FunctionDef | None:
    """``ModelNew.forward``."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return item
    return None


def host_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    """Functions that run on the host: ``ModelNew``'s methods and module-level functions that are not kernels."""
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and not _is_jit(n)]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            found += [i for i in node.body if isinstance(i, ast.FunctionDef)]
    return found


def _mutants(
    source: str,
    scope: Callable[[ast.Module], list[ast.FunctionDef]],
    match: Callable[[ast.AST], bool],
    change: Callable[[ast.AST], ast.AST | None],
) -> Iterator[tuple[int, str, str]]:
    """For every node of ``scope`` that ``match``es, the source with that one node replaced by ``change(node)``:
    (line, what the node was, the new source). A change that returns None is skipped."""
    tree = ast.parse(source)
    count = sum(1 for fn in scope(tree) for node in ast.walk(fn) if match(node))
    for index in range(count):
        mutated = ast.parse(source)
        seen = 0
        for fn in scope(mutated):
            done = False
            for parent in ast.walk(fn):
                for field, value in ast.iter_fields(parent):
                    items = value if isinstance(value, list) else [value]
                    for position, child in enumerate(items):
                        if not isinstance(child, ast.AST) or not match(child):
                            continue
                        if seen == index:
                            before = ast.unparse(child)
                            new = change(copy.deepcopy(child))
                            if new is not None:
                                ast.copy_location(new, child)
                                if isinstance(value, list):
                                    value[position] = new
                                else:
                                    setattr(parent, field, new)
                                ast.fix_missing_locations(mutated)
                                yield child.lineno, before, ast.unparse(mutated)
                            done = True
                            break
                        seen += 1
                    if done:
                        break
                if done:
                    break
            if done:
                break


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------------------------- Triton kernels


def triton_bounds(source: str) -> list[Fault]:
    """Every ``a < b`` in a kernel: ``a < b - 1`` (the last element dropped) and ``a <= b`` (one past the end)."""
    faults = []

    def is_lt(node: ast.AST) -> bool:
        return isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Lt)

    def minus_one(node: ast.Compare) -> ast.AST:
        node.comparators[0] = ast.BinOp(node.comparators[0], ast.Sub(), ast.Constant(1))
        return node

    def to_le(node: ast.Compare) -> ast.AST:
        node.ops[0] = ast.LtE()
        return node

    for operator, change in (("lt_minus_one", minus_one), ("lt_to_le", to_le)):
        for line, before, new in _mutants(source, jit_functions, is_lt, change):
            faults.append(Fault("bounds", operator, f"L{line} {_short(before)}", new))
    return faults


def triton_grid(source: str) -> list[Fault]:
    """Every ``triton.cdiv(a, b)`` of the host code: ``a // b`` (the last partial block never launched)."""

    def is_cdiv(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and ast.unparse(node.func).endswith("cdiv") and len(node.args) == 2

    def floor(node: ast.Call) -> ast.AST:
        return ast.BinOp(node.args[0], ast.FloorDiv(), node.args[1])

    return [
        Fault("grid", "cdiv_to_floor", f"L{line} {_short(before)}", new)
        for line, before, new in _mutants(source, host_functions, is_cdiv, floor)
    ]


def _is_sum(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))


def triton_dropped_term(source: str) -> list[Fault]:
    """Every ``a + b`` and ``a - b`` in a kernel: ``a`` alone (a term left out: a bias, an offset, a mean)."""
    return [
        Fault("dropped_term", "drop_right_operand", f"L{line} {_short(before)}", new)
        for line, before, new in _mutants(source, jit_functions, _is_sum, lambda node: node.left)
    ]


def _max_names(fn: ast.FunctionDef) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if ast.unparse(node.value.func).endswith(".max") and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    names.add(target.id)
    return names


def triton_unsafe_numerics(source: str) -> list[Fault]:
    """A kernel's row maximum (``m = tl.max(x)``) replaced by 0 (exp of the raw values: overflows on large ones),
    and every ``+ eps`` dropped (a root or a division of a value that can be 0)."""
    faults = []

    def is_max_assign(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func).endswith(".max")
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        )

    def zero(node: ast.Assign) -> ast.AST:
        node.value = ast.Constant(0.0)
        return node

    for line, before, new in _mutants(source, jit_functions, is_max_assign, zero):
        faults.append(Fault("unsafe_numerics", "max_not_subtracted", f"L{line} {_short(before)}", new))

    def is_eps_add(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and any("eps" in ast.unparse(side).lower() for side in (node.left, node.right))
        )

    def drop_eps(node: ast.BinOp) -> ast.AST:
        return node.right if "eps" in ast.unparse(node.left).lower() else node.left

    for line, before, new in _mutants(source, jit_functions, is_eps_add, drop_eps):
        faults.append(Fault("unsafe_numerics", "eps_dropped", f"L{line} {_short(before)}", new))
    return faults


def _cast(node: ast.AST, dtype: str) -> ast.AST:
    down = ast.Call(ast.Attribute(node, "to", ast.Load()), [ast.parse(f"tl.{dtype}", mode="eval").body], [])
    return ast.Call(ast.Attribute(down, "to", ast.Load()), [ast.parse("tl.float32", mode="eval").body], [])


def triton_precision(source: str) -> list[Fault]:
    """Each ``tl.load`` of a kernel rounded through fp16 and through bf16; each ``tl.dot``'s operands in fp16; each
    ``tl.store``'s value rounded through fp16."""
    faults = []

    def is_call(suffix: str) -> Callable[[ast.AST], bool]:
        return lambda node: isinstance(node, ast.Call) and ast.unparse(node.func).endswith(suffix)

    for dtype in ("float16", "bfloat16"):
        for line, before, new in _mutants(source, jit_functions, is_call("tl.load"), lambda n, d=dtype: _cast(n, d)):
            faults.append(Fault("precision", f"load_{dtype}", f"L{line} {_short(before)}", new))

    def dot_half(node: ast.Call) -> ast.AST:
        node.args = [_cast(a, "float16") for a in node.args[:2]] + node.args[2:]
        return node

    for line, before, new in _mutants(source, jit_functions, is_call("tl.dot"), dot_half):
        faults.append(Fault("precision", "dot_float16", f"L{line} {_short(before)}", new))

    def store_half(node: ast.Call) -> ast.AST | None:
        if len(node.args) < 2:
            return None
        node.args[1] = _cast(node.args[1], "float16")
        return node

    for line, before, new in _mutants(source, jit_functions, is_call("tl.store"), store_half):
        faults.append(Fault("precision", "store_float16", f"L{line} {_short(before)}", new))
    return faults


# ----------------------------------------------------------------------------------------------- host code (any language)


PARAM_ATTRIBUTE = re.compile(r"^self(\.\w+)+$")


def host_ignored_parameter(source: str, constants: dict[str, float]) -> list[Fault]:
    """Each read in ``forward`` of a parameter or buffer that is constant when built (``constants``: its dotted
    name under ``self``, e.g. ``self.ln.weight``, and that constant) replaced by a tensor of its initial value: the
    kernel behaves as if the parameter never changed."""

    def is_param(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and ast.unparse(node) in constants

    def initial(node: ast.Attribute) -> ast.AST:
        value = constants[ast.unparse(node)]
        return ast.parse(f"torch.full_like({ast.unparse(node)}, {value!r})", mode="eval").body

    return [
        Fault("ignored_parameter", "parameter_as_built", f"L{line} {_short(before)}", new)
        for line, before, new in _mutants(source, lambda t: [f for f in [forward_function(t)] if f], is_param, initial)
    ]


SIZE_CALL = re.compile(r"\.(shape|size\(|numel\(|stride\()")


def host_baked_shape(source: str, scored: dict[str, int]) -> list[Fault]:
    """Each name ``forward`` assigns from an input's sizes (``n_rows, n_cols = x.shape``, ``n = x.numel()``) set again,
    right after, to its value at the scored shape (``scored``: the name's value when ``forward`` ran on the task's
    inputs)."""
    tree = ast.parse(source)
    forward = forward_function(tree)
    if forward is None:
        return []
    faults = []
    for position, stmt in enumerate(list(forward.body)):
        if not isinstance(stmt, ast.Assign) or not SIZE_CALL.search(ast.unparse(stmt.value)):
            continue
        names = [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        for name in names:
            if not isinstance(scored.get(name), int):
                continue
            mutated = ast.parse(source)
            body = forward_function(mutated).body
            body.insert(position + 1, ast.parse(f"{name} = {scored[name]}").body[0])
            ast.fix_missing_locations(mutated)
            faults.append(
                Fault("baked_shape", "size_as_scored", f"L{stmt.lineno} {name} = {scored[name]}", ast.unparse(mutated))
            )
    return faults


STALE_GUARD = (
    "_stale_key = tuple((a.data_ptr(), tuple(a.shape)) for a in args if isinstance(a, torch.Tensor))\n"
    "if getattr(self, '_stale_key', None) == _stale_key:\n"
    "    return self._stale_out\n"
)


def host_stale_output(source: str) -> list[Fault]:
    """``forward`` memoised on its inputs' addresses and shapes: the output of the previous call is returned again
    when the new inputs sit where the old ones did (a cache keyed on pointers, not values)."""
    tree = ast.parse(source)
    forward = forward_function(tree)
    if forward is None or forward.args.vararg is not None:
        return []
    params = [a.arg for a in forward.args.args[1:]]
    body = forward.body
    guard = ast.parse(STALE_GUARD.replace("args", f"({', '.join(params)},)")).body
    inner = ast.FunctionDef(
        name="_forward_once",
        args=copy.deepcopy(forward.args),
        body=body,
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    call = ast.parse(f"_out = _forward_once({', '.join(['self'] + params)})").body[0]
    keep = ast.parse("self._stale_key, self._stale_out = _stale_key, _out\nreturn _out").body
    forward.body = guard + [inner, call] + keep
    ast.fix_missing_locations(tree)
    return [Fault("stale_output", "memoised_on_address", f"L{forward.lineno} forward", ast.unparse(tree))]


# ----------------------------------------------------------------------------------------------- CUDA kernels

GLOBAL_BODY = re.compile(r"__global__[^{]*\{", re.S)


def _cuda_spans(source: str) -> list[tuple[int, int]]:
    """(start, end) of each ``__global__`` function's body in ``source``."""
    spans = []
    for match in GLOBAL_BODY.finditer(source):
        depth, i = 1, match.end()
        while i < len(source) and depth:
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            i += 1
        spans.append((match.end(), i - 1))
    return spans


def _cuda_subs(
    source: str, pattern: str, repl: Callable[[re.Match[str]], str], kind: str, operator: str
) -> list[Fault]:
    faults = []
    for start, end in _cuda_spans(source):
        for match in re.finditer(pattern, source[start:end]):
            a, b = start + match.start(), start + match.end()
            line = source.count("\n", 0, a) + 1
            new = source[:a] + repl(match) + source[b:]
            faults.append(Fault(kind, operator, f"L{line} {_short(match.group(0))}", new))
    return faults


def cuda_faults(source: str) -> list[Fault]:
    """The kernel-level operators on the ``__global__`` functions of CUDA source strings: bounds, dropped terms,
    the max and the epsilon, fp16 loads and stores, ``__syncthreads`` removed; and the grid rounded down in the host
    code of the CUDA source (``(n + b - 1) / b``)."""
    faults = []
    faults += _cuda_subs(
        source,
        r"(?<![<>=!])<(?![<=])(\s*)([\w.\[\]]+)",
        lambda m: f"<{m.group(1)}{m.group(2)} - 1",
        "bounds",
        "lt_minus_one",
    )
    faults += _cuda_subs(source, r"(?<![<>=!])<(?![<=])", lambda m: "<=", "bounds", "lt_to_le")
    faults += _cuda_subs(
        source, r"\s[+-]\s*([\w.]+(\[[^\]]*\])?)(?=\s*[;)])", lambda m: "", "dropped_term", "drop_right_operand"
    )
    faults += _cuda_subs(source, r"\+\s*eps\b", lambda m: "", "unsafe_numerics", "eps_dropped")
    faults += _cuda_subs(
        source, r"-\s*(row_max|max_val|m)\b", lambda m: "- 0.0f", "unsafe_numerics", "max_not_subtracted"
    )
    faults += _cuda_subs(
        source,
        r"=\s*(\w+\[[^\];]+\])\s*;",
        lambda m: f"= __half2float(__float2half({m.group(1)}));",
        "precision",
        "load_float16",
    )
    faults += _cuda_subs(source, r"__syncthreads\(\);", lambda m: "", "missing_sync", "syncthreads_removed")
    for match in re.finditer(r"\(\s*(\w+)\s*\+\s*(\w+)\s*-\s*1\s*\)\s*/\s*(\w+)", source):
        if match.group(2) == match.group(3):
            line = source.count("\n", 0, match.start()) + 1
            new = source[: match.start()] + f"{match.group(1)} / {match.group(3)}" + source[match.end() :]
            faults.append(Fault("grid", "cdiv_to_floor", f"L{line} {_short(match.group(0))}", new))
    if faults and "cuda_fp16.h" not in source:
        faults = [
            Fault(
                f.kind,
                f.operator,
                f.site,
                f.source.replace(
                    "#include <torch/extension.h>", "#include <torch/extension.h>\n#include <cuda_fp16.h>", 1
                ),
            )
            if f.kind == "precision"
            else f
            for f in faults
        ]
    return faults


# ----------------------------------------------------------------------------------------------- all of them


def language_of(source: str) -> str:
    """``cuda`` when the source builds CUDA with ``load_inline``, else ``triton``."""
    return "cuda" if "load_inline" in source else "triton"


def all_faults(source: str, constants: dict[str, float], scored: dict[str, int]) -> list[Fault]:
    """Every fault the operators make of ``source`` (duplicates, and faults that change nothing, left out)."""
    language = language_of(source)
    faults: list[Fault] = []
    if language == "triton":
        for operator in (triton_bounds, triton_grid, triton_dropped_term, triton_unsafe_numerics, triton_precision):
            faults += operator(source)
    else:
        faults += cuda_faults(source)
    faults += host_ignored_parameter(source, constants)
    faults += host_baked_shape(source, scored)
    faults += host_stale_output(source)
    plain = ast.unparse(ast.parse(source)) if language == "triton" else source
    seen: set[str] = {plain, source}
    unique = []
    for fault in faults:
        if fault.source not in seen:
            seen.add(fault.source)
            unique.append(fault)
    return unique


def main(argv: list[str]) -> int:  # pragma: no cover - a look at one kernel's faults
    """``python benchmarks/faults/operators.py KERNEL.py``: the faults of one kernel, one line each."""
    source = open(argv[1]).read()
    for fault in all_faults(source, {}, {}):
        print(f"{fault.kind:18} {fault.name}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv))
