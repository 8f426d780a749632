"""The import graph of the package: layers that import only layers below them, and no module importing itself back
through others. Lazy imports inside functions and ``TYPE_CHECKING`` imports count as much as the ones at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import cudaforge

PACKAGE = Path(cudaforge.__file__).resolve().parent

LAYERS = [
    ["cudaforge", "types", "profile_types", "paths", "pyast", "plugins", "registry"],
    ["languages"],
    ["vendors"],
    ["hardware"],
    ["caches"],
    ["proc"],
    ["tasks"],
    ["llm"],
    ["track"],
    ["eval"],
    ["profile"],
    ["agents"],
    ["graph"],
    ["run"],
    ["search"],
    ["report"],
    ["teach"],
    ["config"],
    ["cache_admin"],
    ["doctor"],
    ["cli"],
]
"""Each layer (a package, or a module directly under cudaforge/) may import only the layers before it and itself."""

RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def _modules() -> dict[str, Path]:
    return {
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in PACKAGE.rglob("*.py")
        if "resources" not in p.relative_to(PACKAGE).parts
    }


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The cudaforge modules ``path`` imports anywhere (``from pkg import submodule`` is the submodule alone)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "cudaforge":
            subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
            found.update(subs if len(subs) == len(node.names) else [*subs, node.module])
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "cudaforge")
    return {m for m in found if m in modules}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "cudaforge"


def test_every_package_and_top_level_module_has_a_layer():
    names = {_layer(m) for m in _modules()}
    assert names <= set(RANK), sorted(names - set(RANK))


def test_no_layer_imports_a_layer_above_it():
    modules = _modules()
    upward = sorted(
        f"{m} -> {d}"
        for m, path in modules.items()
        for d in _imports(path, modules)
        if RANK[_layer(d)] > RANK[_layer(m)]
    )
    assert not upward, upward


def test_no_module_imports_itself_back_through_others():
    modules = _modules()
    graph = {m: _imports(p, modules) - {m} for m, p in modules.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, [" -> ".join(c) for c in cycles]


def test_no_module_imports_a_private_name_of_another():
    """``from cudaforge.x import _name`` is refused: what another module needs is public there (issue 38). Tests
    may reach into privates; the package may not."""
    modules = _modules()
    private = sorted(
        f"{module}: from {node.module} import {alias.name}"
        for module, path in modules.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("cudaforge")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    )
    assert private == []


PROC_ORDER = {"files": 0, "text": 0, "sandbox": 1, "isolation": 2, "child": 2}
"""The process wing's own order: the atomic writer, the sandbox, then the child runner and its child side."""


def test_the_process_wing_keeps_its_own_order_and_the_launcher_stays_plain():
    """Inside ``cudaforge.proc`` a module imports only what comes before it (``PROC_ORDER``); the sandbox's launcher
    and its parts (run while a candidate's sandbox is being set up) import nothing of cudaforge beyond the sandbox's
    own modules."""
    modules = _modules()
    upward, launcher = [], []
    for module, path in modules.items():
        parts = module.split(".")
        if parts[:2] != ["cudaforge", "proc"] or len(parts) < 3:
            continue
        for dep in _imports(path, modules):
            dparts = dep.split(".")
            if (
                dparts[:2] == ["cudaforge", "proc"]
                and len(dparts) >= 3
                and PROC_ORDER[dparts[2]] > PROC_ORDER[parts[2]]
            ):
                upward.append(f"{module} -> {dep}")
        if parts[2:3] == ["sandbox"] and len(parts) == 4:  # launch, linux, rootfs, seccomp
            launcher += [
                f"{module} -> {d}" for d in _imports(path, modules) if not d.startswith("cudaforge.proc.sandbox")
            ]
    assert set(PROC_ORDER) == {m.split(".")[2] for m in modules if m.startswith("cudaforge.proc.")}
    assert not upward, upward
    assert not launcher, launcher


APART = [("teach", "run"), ("teach", "graph")]
"""Layers the order would let import each other that stay apart: ``teach`` reads run directories through ``track``
and the records of ``types``, never the code that made them (issue 55: the exports do not depend on the runner)."""


def test_layers_kept_apart_do_not_import_each_other():
    modules = _modules()
    crossing = sorted(
        f"{m} -> {d}" for m, path in modules.items() for d in _imports(path, modules) if (_layer(m), _layer(d)) in APART
    )
    assert not crossing, crossing


def _spelled(word: str, allowed: tuple[str, ...]) -> list[str]:
    """Where code (not a docstring) of a module outside ``allowed`` (module-name prefixes) spells ``word``."""
    spelled = []
    for module, path in _modules().items():
        if module.startswith(allowed):
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        docstrings |= {  # attribute docstrings: a string expression right after an assignment
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        }
        spelled += [
            f"{module}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and word in node.value
            and id(node) not in docstrings
        ]
    return spelled


def test_the_gpu_visibility_variable_is_spelled_only_by_the_vendor():
    """``CUDA_VISIBLE_DEVICES`` is NVIDIA's: code outside ``cudaforge/vendors/`` pins and reads GPUs through
    ``vendors.pin_env`` and ``vendors.pinned`` (docstrings may name it)."""
    assert _spelled("CUDA_VISIBLE_DEVICES", ("cudaforge.vendors",)) == []


def test_a_languages_switches_are_spelled_only_by_its_module():
    """Triton's interpreter switch and cache variable are its language module's (``interpret_env``,
    ``jit_cache_env``): the evaluator asks ``cudaforge.languages``. The one exception is the verifier's own Triton
    kernel, its output screen (``eval/fastclose.py``), a tool of ours rather than a candidate's language."""
    for word in ("TRITON_INTERPRET", "TRITON_CACHE_DIR"):
        assert _spelled(word, ("cudaforge.languages", "cudaforge.eval.fastclose")) == [], word


def test_code_outside_the_evaluator_uses_its_face_only():
    """``cudaforge.eval`` has a public face (``__all__``, loaded lazily): a module outside the package imports from
    it, never from one of its submodules (tests may)."""
    import cudaforge.eval as face

    assert face.__all__ == sorted(face._FACE) and all(hasattr(face, n) for n in face.__all__)
    modules = _modules()
    reaching = sorted(
        f"{m} -> {d}"
        for m, path in modules.items()
        if not m.startswith("cudaforge.eval")
        for d in _imports(path, modules)
        if d.startswith("cudaforge.eval.")
    )
    assert reaching == [], reaching
