"""Turn a suite config into the selected list of tasks."""

from __future__ import annotations

import fnmatch
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from cudaforge.tasks.loader import TaskError, load_directory, load_hf_export, load_problem_file
from cudaforge.tasks.subsets import resolve_subset
from cudaforge.types import Task

BUNDLED_SUITES_DIR = Path(__file__).resolve().parents[1] / "resources" / "suites"


def selection(name: str, kind: str = "bundled", root: str | None = None, **filters: Any) -> SimpleNamespace:
    """A suite selection with the fields of ``cudaforge.config.SuiteConfig``, for code without Hydra.

    ``filters``: ``levels``, ``problem_ids``, ``names``, ``subset``, ``first_n``, ``shuffle_seed``.
    """
    fields = dict(levels=[], problem_ids=[], names=[], subset=None, first_n=None, shuffle_seed=None)
    unknown = set(filters) - set(fields)
    if unknown:
        raise TypeError(f"unknown suite selection field(s): {', '.join(sorted(unknown))}")
    return SimpleNamespace(name=name, kind=kind, root=root, **{**fields, **filters})


def _kind(cfg: Any) -> str:
    kind = cfg.kind
    return str(getattr(kind, "value", kind))


def load_all(cfg: Any) -> list[Task]:
    """Load every task of the suite that ``cfg`` (a ``SuiteConfig``) names, before selection."""
    kind = _kind(cfg)
    if kind == "bundled":
        root = Path(cfg.root) if cfg.root else BUNDLED_SUITES_DIR / cfg.name
        if not root.is_dir():
            known = sorted(p.name for p in BUNDLED_SUITES_DIR.iterdir() if p.is_dir())
            raise TaskError(f"{root}: no bundled suite {cfg.name!r} (bundled: {', '.join(known)})")
        return load_directory(root, suite=cfg.name)
    if not cfg.root:
        raise TaskError(f"suite.kind={kind} needs suite.root (a path); it is not set")
    if kind == "kernelbench":
        return load_directory(cfg.root, suite=cfg.name)
    if kind == "hf_export":
        return load_hf_export(cfg.root, suite=cfg.name)
    if kind == "file":
        return [load_problem_file(cfg.root, suite=cfg.name)]
    raise TaskError(f"unknown suite.kind {kind!r}")


def select(tasks: list[Task], cfg: Any) -> list[Task]:
    """Apply levels, problem_ids, names (globs), subset, shuffle_seed and first_n, in that order."""
    chosen = sorted(tasks, key=lambda t: (t.level, t.problem_id))
    if cfg.levels:
        chosen = [t for t in chosen if t.level in set(cfg.levels)]
    if cfg.problem_ids:
        chosen = [t for t in chosen if t.problem_id in set(cfg.problem_ids)]
    if cfg.names:
        chosen = [
            t for t in chosen if any(fnmatch.fnmatch(t.name.lower(), g.lower()) for g in cfg.names)
        ]
    if cfg.subset:
        subset = resolve_subset(cfg.subset)
        chosen = [t for t in chosen if t.problem_id in subset.get(t.level, ())]
        found = {(t.level, t.problem_id) for t in chosen}
        absent = [f"level{lv}/{i}" for lv, ids in subset.items() for i in ids if (lv, i) not in found]
        if absent and not (cfg.levels or cfg.problem_ids or cfg.names):
            raise TaskError(f"subset {cfg.subset!r}: not in this suite: {', '.join(absent)}")
    if cfg.shuffle_seed is not None:
        random.Random(cfg.shuffle_seed).shuffle(chosen)
    if cfg.first_n is not None:
        if cfg.first_n < 1:
            raise TaskError(f"suite.first_n must be at least 1, got {cfg.first_n}")
        chosen = chosen[: cfg.first_n]
    if not chosen:
        raise TaskError(f"suite {cfg.name!r}: the selection is empty (check levels, problem_ids, names, subset)")
    return chosen


def load_suite(cfg: Any) -> list[Task]:
    """Load and select the tasks of a suite config."""
    return select(load_all(cfg), cfg)


def find_task(cfg: Any, task_id: str) -> Task:
    """The task with id ``task_id`` (or a unique id suffix such as ``level1/1_ReLU``) in the suite."""
    tasks = load_all(cfg)
    exact = [t for t in tasks if t.id == task_id]
    matches = exact or [t for t in tasks if t.id.endswith("/" + task_id) or t.id.endswith(task_id)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise TaskError(f"no task {task_id!r} in suite {cfg.name!r} (see `cudaforge tasks list`)")
    raise TaskError(f"task id {task_id!r} is ambiguous: {', '.join(t.id for t in matches)}")
