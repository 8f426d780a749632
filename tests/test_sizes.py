"""Size limits of the package's code (issue 55): no function over ``FUNCTION_LINES`` lines and no module over
``MODULE_LINES``. The functions and modules that are over them today are listed with their length, and may only
shrink: a new long one, or a listed one that grows, fails here. Splitting one lowers its entry (or removes it)."""

from __future__ import annotations

import ast
from pathlib import Path

import cudaforge

PACKAGE = Path(cudaforge.__file__).resolve().parent
FUNCTION_LINES = 100

OVER: dict[str, int] = {}  # module:name -> lines of a function still over the limit (none since 2026-12-07)


def long_functions() -> dict[str, int]:
    """Every function of the package over FUNCTION_LINES lines (decorators not counted), by ``module:name``."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > FUNCTION_LINES:
                    found[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = lines
    return found


def test_no_function_grows_past_the_limit_and_the_long_ones_only_shrink():
    found = long_functions()
    new = {name: lines for name, lines in found.items() if name not in OVER}
    grown = {name: (OVER[name], lines) for name, lines in found.items() if name in OVER and lines > OVER[name]}
    assert not new, f"functions over {FUNCTION_LINES} lines: {new} (split them)"
    assert not grown, f"listed long functions that grew (listed, now): {grown}"


def test_the_list_of_long_functions_is_current():
    """A listed function that was split, or shrank under the limit, leaves the list (or lowers its count)."""
    found = long_functions()
    stale = {name: lines for name, lines in OVER.items() if found.get(name, 0) < lines}
    assert not stale, f"lower or remove these entries of OVER (listed, now): { ({n: found.get(n) for n in stale}) }"


MODULE_LINES = 700

MODULES_OVER: dict[str, int] = {}  # module -> lines of a module still over the limit (none since 2026-12-07)


def long_modules() -> dict[str, int]:
    """Every module of the package (its data under resources/ aside) over MODULE_LINES lines."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "resources" in path.relative_to(PACKAGE).parts:
            continue
        lines = len(path.read_text().splitlines())
        if lines > MODULE_LINES:
            found[path.relative_to(PACKAGE).as_posix()] = lines
    return found


def test_no_module_grows_past_the_limit_and_the_long_ones_only_shrink():
    found = long_modules()
    new = {name: lines for name, lines in found.items() if name not in MODULES_OVER}
    grown = {n: (MODULES_OVER[n], lines) for n, lines in found.items() if n in MODULES_OVER and lines > MODULES_OVER[n]}
    assert not new, f"modules over {MODULE_LINES} lines: {new} (split them)"
    assert not grown, f"listed long modules that grew (listed, now): {grown}"
    stale = {n: found.get(n) for n, lines in MODULES_OVER.items() if found.get(n, 0) < lines}
    assert not stale, f"lower or remove these entries of MODULES_OVER (now): {stale}"
