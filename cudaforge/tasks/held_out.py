"""Held-out shapes: task inputs the Coder never saw, derived from the sizes a task module sets at top level.

KernelBench-style problem files name their sizes as module globals (``batch_size = 128``, ``dim = 1024``) that
``get_inputs`` and ``get_init_inputs`` read when they are called. A held-out shape is the same file with some of those
numbers changed in place, so every size derived from them follows:

- ``odd``: every size global set to a smaller number that is not a power of two (1024 -> 769, 128 -> 97), the shape
  a kernel written for the scored one most often gets wrong (a block size that no longer divides the row);
- ``odd_<name>``: one size at a time, when changing them all at once breaks the reference (sizes that must divide
  each other);
- ``large``: the batch size doubled (the first global named like a batch, else the first size): larger than scored.

Only the reference decides which shapes are valid: each is built and run on torch's ``meta`` device in an isolated
child (``held_out_child.py``), which allocates nothing, so a shape the reference refuses is dropped before any
kernel is judged on it. A size global is a top-level ``name = <int>`` (or arithmetic on integers, ``N = 2048 * 2``)
of at least ``MIN_SIZE`` whose name is not ALL CAPS beyond two letters (``N``, ``M``, ``K`` are sizes; ``ATOL``,
``INPUT_VARIANTS`` are not) and does not name a kernel size, stride, padding, dilation, group or head
count, layer count, axis, seed or top-k. Pure text here; nothing of the task runs in this module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cudaforge.pyast import parse

MIN_SIZE = 4
"""Smaller integers are left alone: they are more often an axis, a kernel size or a count than a size."""

NOT_SIZES = re.compile(r"kernel|stride|pad|dilation|group|axis|seed|top_?k|layers|heads", re.I)
"""Names of top-level integers that are no tensor size (an axis such as ``dim = 1`` is below ``MIN_SIZE``)."""

BATCH = re.compile(r"^(batch(_?size)?|bs|n|b|num_samples|batch_count)$", re.I)
"""Names of a batch size: the one ``large`` doubles."""

MAX_SINGLES = 3
"""At most this many ``odd_<name>`` shapes, when ``odd`` itself is invalid."""


@dataclass
class SizeGlobal:
    """One top-level integer of the task module that sizes its inputs."""

    name: str
    value: int
    start: tuple[int, int]
    """(line, column) of the literal, 1-based lines as ``ast`` gives them."""
    end: tuple[int, int]


@dataclass
class HeldOutShape:
    """One held-out shape: which sizes change, and the task source with them changed."""

    name: str
    """``odd``, ``odd_<global>`` or ``large``."""
    sizes: dict[str, int]
    """The changed globals and their new values."""
    source: str
    why: str
    """In words: what the shape tests."""
    meta: dict[str, Any] = field(default_factory=dict)
    """What the meta-device check found: ``input_bytes``, ``inputs`` and ``outputs`` (shapes)."""


def size_globals(source: str) -> list[SizeGlobal]:
    """The module's size globals (see the module text), in source order; the last assignment of a name wins."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    found: dict[str, SizeGlobal] = {}
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign))
            else []
        )
        for target in targets:  # reassigned in any way: only a last plain literal assignment counts
            for named in ast.walk(target):
                if isinstance(named, ast.Name):
                    found.pop(named.id, None)
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        number = int_value(value)
        if number is None or (name.upper() == name and len(name) > 2) or NOT_SIZES.search(name) or number < MIN_SIZE:
            continue
        if (value.end_lineno or value.lineno) != value.lineno:
            continue  # a literal over several lines: not rewritten, so not a size
        found[name] = SizeGlobal(
            name,
            number,
            (value.lineno, value.col_offset),
            (value.end_lineno or value.lineno, value.end_col_offset or value.col_offset),
        )
    return sorted(found.values(), key=lambda g: g.start)


_OPS: dict[type[ast.operator], Callable[[int, int], int | None]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b if b else None,
    ast.Pow: lambda a, b: a**b if 0 <= b <= 64 else None,
    ast.LShift: lambda a, b: a << b if 0 <= b <= 64 else None,
}


def int_value(node: ast.expr) -> int | None:
    """The value of an integer literal or of arithmetic on them (``2048 * 2``, ``1 << 14``); None for anything else."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = int_value(node.left), int_value(node.right)
        value = None if left is None or right is None else _OPS[type(node.op)](left, right)
        return value if value is None or abs(value) < 1 << 63 else None  # no size is larger: never a huge number
    return None


def odd_size(value: int) -> int:
    """A smaller size near three quarters of ``value`` that is odd, so never a power of two (nor a multiple of any
    block size), and at least 3."""
    smaller = max(3, value * 3 // 4 + 1)
    return smaller if smaller % 2 else (smaller - 1 if smaller > 3 else smaller + 1)


def with_sizes(source: str, sizes: list[SizeGlobal], new: dict[str, int]) -> str:
    """``source`` with the literals of ``sizes`` named in ``new`` replaced by their new values (in place, so every
    global computed from them follows), and a comment line saying so at the end."""
    lines = re.findall(r".*?(?:\r\n|\r|\n)|.+\Z", source, flags=re.S)  # lines as ast counts them, no others
    for g in sorted((g for g in sizes if g.name in new), key=lambda g: g.start, reverse=True):
        (line, col), (end_line, end_col) = g.start, g.end
        if line != end_line:
            continue  # a literal over several lines (size_globals leaves these out)
        text = lines[line - 1].encode()  # ast's columns count UTF-8 bytes
        lines[line - 1] = (text[:col] + str(int(new[g.name])).encode() + text[end_col:]).decode()
    changed = ", ".join(f"{k}={v}" for k, v in new.items())
    tail = "" if not lines or lines[-1].endswith("\n") else "\n"
    return "".join(lines) + f"{tail}# cudaforge held-out shape: {changed}\n"


def batch_global(sizes: list[SizeGlobal]) -> SizeGlobal | None:
    """The batch size: the first global named like one, else the first size."""
    return next((g for g in sizes if BATCH.match(g.name)), sizes[0] if sizes else None)


def proposals(source: str) -> list[HeldOutShape]:
    """Every held-out shape to try, in order of preference (``odd``, then ``odd_<name>`` one at a time, then
    ``large``); the meta-device check keeps the valid ones."""
    sizes = size_globals(source)
    if not sizes:
        return []
    out = []
    odd = {g.name: odd_size(g.value) for g in sizes}
    out.append(
        HeldOutShape(
            "odd", odd, with_sizes(source, sizes, odd), "every size a smaller number that is not a power of two"
        )
    )
    if len(sizes) > 1:
        for g in sizes:
            one = {g.name: odd_size(g.value)}
            out.append(
                HeldOutShape(
                    f"odd_{g.name}",
                    one,
                    with_sizes(source, sizes, one),
                    f"{g.name} alone a smaller number that is not a power of two",
                )
            )
    batch = batch_global(sizes)
    if batch is not None:
        large = {batch.name: batch.value * 2}
        out.append(
            HeldOutShape("large", large, with_sizes(source, sizes, large), f"{batch.name} doubled: larger than scored")
        )
    return out


def shape_signature(shape_or_meta: Any) -> Any:
    """What the meta-device check saw of a shape: its input and output shapes (equal to the scored shape's: the
    changed sizes reach neither, so the shape tests nothing new)."""
    meta = shape_or_meta.meta if isinstance(shape_or_meta, HeldOutShape) else shape_or_meta
    return (meta.get("inputs"), meta.get("outputs"))


def choose(checked: list[HeldOutShape], valid: dict[str, bool], scored: Any = None) -> list[HeldOutShape]:
    """The shapes kept from ``checked`` given which ones the reference accepted (and, with ``scored``, the scored
    shape's ``shape_signature``: a shape that equals it is dropped): ``odd`` when valid, else up to ``MAX_SINGLES``
    valid ``odd_<name>``; then ``large``."""
    ok = {s.name for s in checked if valid.get(s.name) and (scored is None or shape_signature(s) != scored)}
    chosen = [s for s in checked if s.name == "odd" and s.name in ok]
    if not chosen:
        chosen = [s for s in checked if s.name.startswith("odd_") and s.name in ok][:MAX_SINGLES]
    chosen += [s for s in checked if s.name == "large" and s.name in ok]
    return chosen
