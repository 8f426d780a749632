"""Packages that extend cudaforge: the entry points of installed packages, by group (``GROUPS``).

A package adds a kernel language by naming a :class:`~cudaforge.languages.base.KernelLanguage` in the group
``cudaforge.languages`` (``numba = "cudaforge_numba_lang:LANGUAGE"`` under ``[project.entry-points."cudaforge.languages"]``
in its pyproject.toml), a GPU vendor by naming a :class:`~cudaforge.vendors.base.GpuVendor` in
``cudaforge.vendors``, and likewise a static guard, a loop shape or a report section; ``tests/fixtures/out_of_tree_language/``
and ``tests/fixtures/out_of_tree_guard/`` are worked examples (docs/architecture.md, docs/guards.md). Each kind is
read through one :class:`~cudaforge.registry.Registry`.

Only installed packages count: a distribution found through the working directory is ignored, since a process
started with ``python -m`` has that folder on ``sys.path`` and a working directory may be a candidate's scratch.
A module an entry point names is not imported from there either. The first scan in a process tree is passed down to
its children in ``CUDAFORGE_ENTRY_POINTS``, so the evaluator's short-lived children do not scan the installed
packages again (a variable exported by hand is trusted as it is: unset it after installing a package). A package
that fails to load is left out of its registry with a warning; asking for it by name raises.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache

LANGUAGES = "cudaforge.languages"
VENDORS = "cudaforge.vendors"
GUARDS = "cudaforge.guards"
STRATEGIES = "cudaforge.strategies"
REPORT_SECTIONS = "cudaforge.report_sections"
GROUPS = (LANGUAGES, VENDORS, GUARDS, STRATEGIES, REPORT_SECTIONS)
ENV = "CUDAFORGE_ENTRY_POINTS"
"""Set by the first process that scanned: ``{group: {name: "module:attribute"}}`` for its children (a group missing
from it, as in one written before the group existed, reads as empty)."""


def _scan() -> dict[str, dict[str, str]]:
    from importlib.metadata import distributions

    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # a working directory already removed
        here = ""
    paths = [p for p in sys.path if p and os.path.realpath(p) != here]
    found: dict[str, dict[str, str]] = {group: {} for group in GROUPS}
    for dist in distributions(path=paths):
        for group in GROUPS:
            for ep in dist.entry_points.select(group=group):
                found[group].setdefault(ep.name, ep.value)
    return found


@cache
def declared() -> dict[str, dict[str, str]]:
    """Every entry point of the groups, by group and name (``module:attribute``), from the environment when an
    ancestor scanned (a group it did not name has none), else from the installed packages."""
    inherited = os.environ.get(ENV)
    if inherited:
        try:
            data = json.loads(inherited)
            if isinstance(data, dict) and all(isinstance(data.get(g, {}), dict) for g in GROUPS):
                return {g: {str(k): str(v) for k, v in data.get(g, {}).items()} for g in GROUPS}
        except ValueError:
            pass  # not ours: scan
    found = _scan()
    os.environ[ENV] = json.dumps(found, sort_keys=True)
    return found


def load(group: str, name: str) -> object:
    """The object the entry point ``name`` of ``group`` names (ValueError when it cannot be imported)."""
    value = declared()[group][name]
    try:
        return resolve(value, installed=True)
    except Exception as exc:  # noqa: BLE001 - whatever a package's import raises, said as one line
        raise ValueError(f"the {group} entry point {name} = {value!r} cannot be loaded: {exc}") from exc


def resolve(value: str, *, installed: bool = False) -> object:
    """The object ``value`` (``module:attribute``, the attribute dotted or empty) names; with ``installed``, a module
    the working directory shadows is refused (ImportError) rather than imported. Whatever the import raises is raised."""
    import importlib
    import importlib.util

    module, _, attribute = (part.strip() for part in value.partition(":"))
    if installed:
        spec = importlib.util.find_spec(module.split(".")[0])
        folder = next(iter(spec.submodule_search_locations or []), None) if spec else None
        entry = os.path.dirname(folder) if folder else os.path.dirname(spec.origin) if spec and spec.origin else None
        if entry and _is_working_directory(entry):  # shadowed by a file of the working directory: never loaded
            raise ImportError(f"{module} is found in the working directory, not in an installed package")
    target: object = importlib.import_module(module)
    for part in filter(None, attribute.split(".")):
        target = getattr(target, part)
    return target


def _is_working_directory(path: str) -> bool:
    try:
        return os.path.realpath(path) == os.path.realpath(os.getcwd())
    except OSError:
        return False
