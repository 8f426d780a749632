"""``cudaforge tasks diff ROOT_A ROOT_B``: which problems two problem sets (KernelBench-layout folders) hold
differently. Problems are matched by level and problem number; each side's content hash (``Task.source_hash``)
says whether the reference changed, and a changed name is said too (KernelBench renumbered and rewrote some
problems between releases: the CudaForge authors' copy differs from today's, docs/reproducing.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from cudaforge.tasks.loader import load_directory
from cudaforge.types import Task


@dataclass
class ProblemDiff:
    level: int
    problem_id: int
    change: str
    """``changed`` (same number, another reference), ``only_a``, ``only_b``."""
    a: Task | None
    b: Task | None

    def line(self) -> str:
        where = f"level{self.level}/{self.problem_id}"
        # ``change`` says which sides hold the problem (``diff_roots``): only those are read
        if self.change == "only_a":
            a = cast(Task, self.a)
            return f"only in A  {where}_{a.name}  {a.source_hash[:12]}"
        if self.change == "only_b":
            b = cast(Task, self.b)
            return f"only in B  {where}_{b.name}  {b.source_hash[:12]}"
        a, b = cast(Task, self.a), cast(Task, self.b)
        names = a.name if a.name == b.name else f"{a.name} -> {b.name}"
        return f"changed    {where}_{names}  {a.source_hash[:12]} -> {b.source_hash[:12]}"


def diff_roots(root_a: str, root_b: str) -> tuple[list[ProblemDiff], int]:
    """The problems that differ between two KernelBench-layout folders, and how many are the same."""
    a = {(t.level, t.problem_id): t for t in load_directory(root_a, suite="a")}
    b = {(t.level, t.problem_id): t for t in load_directory(root_b, suite="b")}
    diffs, same = [], 0
    for key in sorted(set(a) | set(b)):
        ta, tb = a.get(key), b.get(key)
        if ta is None or tb is None:
            diffs.append(ProblemDiff(*key, "only_b" if ta is None else "only_a", ta, tb))
        elif ta.source_hash != tb.source_hash or ta.name != tb.name:
            diffs.append(ProblemDiff(*key, "changed", ta, tb))
        else:
            same += 1
    return diffs, same


def main_diff(args: list[str]) -> int:
    """``cudaforge tasks diff ROOT_A ROOT_B``: one line per differing problem, then a count; exit 0 when the two
    hold the same problems, 1 when some differ, 2 for a usage error."""
    import sys

    from cudaforge.tasks.loader import TaskError

    if len(args) != 2 or any(a.startswith("-") or "=" in a for a in args):
        print("cudaforge tasks diff: say two problem-set folders: cudaforge tasks diff ROOT_A ROOT_B", file=sys.stderr)
        return 2
    try:
        diffs, same = diff_roots(args[0], args[1])
    except TaskError as exc:
        print(f"cudaforge tasks diff: error: {exc}", file=sys.stderr)
        return 2
    print(f"A: {args[0]}\nB: {args[1]}")
    for d in diffs:
        print(d.line())
    print(
        f"{same} problems the same, {sum(d.change == 'changed' for d in diffs)} changed, "
        f"{sum(d.change == 'only_a' for d in diffs)} only in A, {sum(d.change == 'only_b' for d in diffs)} only in B"
    )
    return 1 if diffs else 0
