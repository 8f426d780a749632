"""Load KernelBench-style problem files into ``Task`` records, without running them.

Everything here reads text and the Python AST only: the parent process never executes a
task's module (the evaluator and the audit do that in isolated worker processes). From the
AST we check that ``Model``, ``get_inputs`` and ``get_init_inputs`` exist and read the
optional literal declarations ``ATOL``, ``RTOL`` and ``INPUT_VARIANTS`` (docs/tasks.md).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cudaforge import pyast
from cudaforge.types import Task

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
_FILE_RE = re.compile(r"^(\d+)_(.+)\.py$")
_LEVEL_RE = re.compile(r"^level(\d+)$")


class TaskError(ValueError):
    """A problem file or suite that cannot be used, with the file and the reason."""


def _literal(node: ast.AST, where: str, name: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError as exc:
        raise TaskError(f"{where}: {name} must be a literal value ({exc})") from None


def parse_problem(source: str, *, suite: str, level: int, problem_id: int, name: str, path: str) -> Task:
    """Check one problem source statically and return its ``Task``.

    Raises ``TaskError`` naming ``path`` when the source does not parse, lacks ``Model``,
    ``get_inputs`` or ``get_init_inputs``, or declares extensions that are not literals.
    """
    try:
        tree = pyast.parse(source, filename=path)
    except SyntaxError as exc:
        raise TaskError(f"{path}: syntax error at line {exc.lineno}: {exc.msg}") from None
    defined: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            defined[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    defined[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            defined[node.target.id] = node.value
    missing = [n for n in REQUIRED_NAMES if n not in defined]
    if missing:
        raise TaskError(f"{path}: not a problem file: no {', no '.join(missing)} defined at top level")
    if not isinstance(defined["Model"], ast.ClassDef):
        raise TaskError(f"{path}: Model must be a class (an nn.Module)")

    tolerances: dict[str, float | None] = {"ATOL": None, "RTOL": None}
    for key in tolerances:
        if key in defined:
            value = _literal(defined[key], path, key)
            if not isinstance(value, (int, float)) or value < 0:
                raise TaskError(f"{path}: {key} must be a non-negative number, got {value!r}")
            tolerances[key] = float(value)

    variants: list[str] = []
    if "INPUT_VARIANTS" in defined:
        value = _literal(defined["INPUT_VARIANTS"], path, "INPUT_VARIANTS")
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise TaskError(f"{path}: INPUT_VARIANTS must be a tuple of names, got {value!r}")
        if "get_inputs_variant" not in defined:
            raise TaskError(f"{path}: declares INPUT_VARIANTS but defines no get_inputs_variant(name)")
        variants = list(value)

    return Task(
        id=f"{suite}/level{level}/{problem_id}_{name}",
        suite=suite,
        level=level,
        problem_id=problem_id,
        name=name,
        source=source,
        path=path,
        atol=tolerances["ATOL"],
        rtol=tolerances["RTOL"],
        input_variants=variants,
    )


def load_problem_file(path: str | Path, *, suite: str = "file", level: int | None = None) -> Task:
    """Load one problem file. Its level comes from a ``level<N>`` parent folder, else ``level`` or 1."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"{path}: no such problem file")
    match = _FILE_RE.match(path.name)
    problem_id, name = (int(match.group(1)), match.group(2)) if match else (1, path.stem)
    if level is None:
        parent = _LEVEL_RE.match(path.parent.name)
        level = int(parent.group(1)) if parent else 1
    return parse_problem(path.read_text(), suite=suite, level=level, problem_id=problem_id, name=name, path=str(path))


def load_directory(root: str | Path, *, suite: str) -> list[Task]:
    """Load every ``<root>/level<L>/<id>_<Name>.py`` (KernelBench's layout, levels 1-4 and more)."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise TaskError(f"{root}: suite root does not exist or is not a directory")
    level_dirs = sorted((int(m.group(1)), d) for d in root.iterdir() if d.is_dir() and (m := _LEVEL_RE.match(d.name)))
    if not level_dirs:
        raise TaskError(f"{root}: no level<N>/ folders (expected KernelBench's layout)")
    tasks = []
    for level, folder in level_dirs:
        for path in sorted(folder.glob("*.py")):
            if not _FILE_RE.match(path.name):
                continue  # helpers such as __init__.py are not problems
            tasks.append(load_problem_file(path, suite=suite, level=level))
    return _check_unique(tasks, str(root))


def _read_export_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".jsonl":
        rows = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise TaskError(f"{path}:{number}: not JSON: {exc.msg}") from None
        return rows
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise TaskError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from None
        parquet_rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
        return parquet_rows
    raise TaskError(f"{path}: expected a .parquet or .jsonl export of KernelBench")


def load_hf_export(path: str | Path, *, suite: str) -> list[Task]:
    """Load rows ``{code, level, name, problem_id}`` of KernelBench's Hugging Face export.

    ``path`` is a local file or a folder of them (one per level, as the export ships).
    """
    path = Path(path).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".parquet", ".jsonl"))
        if not files:
            raise TaskError(f"{path}: no .parquet or .jsonl files")
    elif path.is_file():
        files = [path]
    else:
        raise TaskError(f"{path}: export file does not exist")
    tasks = []
    for file in files:
        for number, row in enumerate(_read_export_rows(file)):
            where = f"{file}#row{number}"
            missing = [k for k in ("code", "level", "name", "problem_id") if k not in row]
            if missing:
                raise TaskError(f"{where}: missing column(s) {', '.join(missing)}")
            name = re.sub(r"\.py$", "", str(row["name"]))
            name = re.sub(rf"^{int(row['problem_id'])}_", "", name)
            tasks.append(
                parse_problem(
                    row["code"],
                    suite=suite,
                    level=int(row["level"]),
                    problem_id=int(row["problem_id"]),
                    name=name,
                    path=where,
                )
            )
    return _check_unique(tasks, str(path))


def _check_unique(tasks: Iterable[Task], where: str) -> list[Task]:
    seen: dict[tuple[int, int], Task] = {}
    for task in tasks:
        key = (task.level, task.problem_id)
        if key in seen:
            raise TaskError(
                f"{where}: duplicate problem id {task.problem_id} in level {task.level}: "
                f"{seen[key].path} and {task.path}"
            )
        seen[key] = task
    return list(seen.values())
