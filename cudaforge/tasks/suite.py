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

    ``filters``: ``levels``, ``problem_ids``, ``names``, ``subset``, ``first_n``, ``shuffle_seed``, ``shard_count``,
    ``shard_index``, ``exclude_flagged``, ``audit_report``.
    """
    fields: dict[str, Any] = dict(
        levels=[],
        problem_ids=[],
        names=[],
        subset=None,
        first_n=None,
        shuffle_seed=None,
        shard_count=1,
        shard_index=0,
        exclude_flagged=False,
        audit_report=None,
    )
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
    """Apply levels, problem_ids, names (globs), subset, the audit (``exclude_flagged``), shuffle_seed, first_n and the
    shard, in that order."""
    chosen = sorted(tasks, key=lambda t: (t.level, t.problem_id))
    if cfg.levels:
        chosen = [t for t in chosen if t.level in set(cfg.levels)]
    if cfg.problem_ids:
        chosen = [t for t in chosen if t.problem_id in set(cfg.problem_ids)]
    if cfg.names:
        chosen = [t for t in chosen if any(fnmatch.fnmatch(t.name.lower(), g.lower()) for g in cfg.names)]
    if cfg.subset:
        subset = resolve_subset(cfg.subset)
        chosen = [t for t in chosen if t.problem_id in subset.get(t.level, ())]
        found = {(t.level, t.problem_id) for t in chosen}
        absent = [f"level{lv}/{i}" for lv, ids in subset.items() for i in ids if (lv, i) not in found]
        if absent and not (cfg.levels or cfg.problem_ids or cfg.names):
            raise TaskError(f"subset {cfg.subset!r}: not in this suite: {', '.join(absent)}")
    if getattr(cfg, "exclude_flagged", False):
        chosen = without_flagged(chosen, getattr(cfg, "audit_report", None))
    if cfg.shuffle_seed is not None:
        random.Random(cfg.shuffle_seed).shuffle(chosen)
    if cfg.first_n is not None:
        if cfg.first_n < 1:
            raise TaskError(f"suite.first_n must be at least 1, got {cfg.first_n}")
        chosen = chosen[: cfg.first_n]
    if not chosen:
        raise TaskError(f"suite {cfg.name!r}: the selection is empty (check levels, problem_ids, names, subset)")
    return shard(chosen, getattr(cfg, "shard_index", 0), getattr(cfg, "shard_count", 1))


SHIPPED_AUDITS = {"kernelbench_h200": "kernelbench_audit_h200.json"}
"""Audit reports shipped with the package (``cudaforge/resources/published/``), usable by name as
``suite.audit_report=NAME``: ``kernelbench_h200`` is KernelBench 423217d, levels 1-3, on an NVIDIA H200."""


def audit_report_path(report: str) -> str:
    """``suite.audit_report``: a file, or the name of a shipped report (``SHIPPED_AUDITS``)."""
    if report in SHIPPED_AUDITS and not Path(report).exists():
        return str(Path(__file__).resolve().parents[1] / "resources" / "published" / SHIPPED_AUDITS[report])
    return report


def without_flagged(tasks: list[Task], report: str | None) -> list[Task]:
    """``suite.exclude_flagged``: ``tasks`` less those the audit report flags ``hack_enabling`` or ``broken``. The
    report must cover every task, and for the same problem files (by content hash): a stale or partial audit
    cannot vouch for a task, so it is a ``TaskError`` naming what to audit again."""
    from cudaforge.tasks.audit import flagged_ids, read_report  # noqa: PLC0415

    if not report:
        raise TaskError(
            "suite.exclude_flagged=true needs suite.audit_report=FILE: write one with "
            "`cudaforge tasks audit <the same suite> output=FILE`"
        )
    try:
        records = {r["task_id"]: r for r in read_report(audit_report_path(report))}
    except ValueError as exc:
        raise TaskError(str(exc)) from None
    missing = [t.id for t in tasks if t.id not in records]
    stale = [
        t.id for t in tasks if t.id in records and records[t.id].get("source_hash") not in (None, "", t.source_hash)
    ]
    for what, ids in (("does not cover", missing), ("audited another version of", stale)):
        if ids:
            shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            raise TaskError(
                f"suite.audit_report={report} {what} {len(ids)} selected task(s) ({shown}): audit them "
                f"again with `cudaforge tasks audit ... output=FILE`"
            )
    flagged = flagged_ids(list(records.values()))
    return [t for t in tasks if t.id not in flagged]


def shard(tasks: list[Task], index: int, count: int) -> list[Task]:
    """The tasks of shard ``index`` of ``count``: every ``count``-th task from the ``index``-th, so shards differ
    in size by one at most and together hold every task once (a ``TaskError`` for an impossible shard)."""
    if count < 1:
        raise TaskError(f"suite.shard_count must be at least 1, got {count}")
    if not 0 <= index < count:
        raise TaskError(f"suite.shard_index must be in 0..{count - 1} (suite.shard_count={count}), got {index}")
    if count > len(tasks):
        raise TaskError(
            f"suite.shard_count={count} is more shards than the {len(tasks)} selected tasks: use at most {len(tasks)}"
        )
    return tasks[index::count]


def load_suite(cfg: Any) -> list[Task]:
    """Load and select the tasks of a suite config."""
    return select(load_all(cfg), cfg)


def _matches(tasks: list[Task], task_id: str) -> list[Task]:
    exact = [t for t in tasks if t.id == task_id]
    return exact or [t for t in tasks if t.id.endswith("/" + task_id) or t.id.endswith(task_id)]


def bundled_suites() -> list[str]:
    """The names of the suites that ship with cudaforge."""
    return sorted(p.name for p in BUNDLED_SUITES_DIR.iterdir() if p.is_dir())


def find_task(cfg: Any, task_id: str) -> Task:
    """The task that ``task_id`` names: a path to a problem file (KernelBench format), an id of the suite ``cfg``
    selects (``main/level1/1_GELU``) or a unique suffix of one (``level1/1_GELU``, ``1_GELU``); an id or suffix
    found in no task of that suite is looked up in every bundled suite, and must be unique there."""
    spec = str(task_id).strip()
    path = Path(spec).expanduser()
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise TaskError(f"task={spec}: no such problem file")
        return load_problem_file(path)
    tasks = load_all(cfg)
    matches = _matches(tasks, spec)
    where = f"suite {cfg.name!r}"
    if not matches and _kind(cfg) == "bundled" and not cfg.root:
        others = [
            t
            for name in bundled_suites()
            if name != cfg.name
            for t in load_directory(BUNDLED_SUITES_DIR / name, suite=name)
        ]
        matches, where = _matches(others, spec), "any bundled suite"
        tasks = tasks + others
    if len(matches) == 1:
        return matches[0]
    if not matches:
        import difflib

        by_tail = {t.id.split("/", 1)[-1]: t.id for t in tasks} | {t.id.rsplit("/", 1)[-1]: t.id for t in tasks}
        near = [by_tail[m] for m in difflib.get_close_matches(spec, list(by_tail), n=3, cutoff=0.6)]
        near += [i for i in difflib.get_close_matches(spec, [t.id for t in tasks], n=3, cutoff=0.6) if i not in near]
        near = list(dict.fromkeys(near))[:3]
        near += [t.id for t in tasks if spec.lower() in t.id.lower() and t.id not in near][: 3 - len(near)]
        hint = f"; did you mean {', '.join(near)}?" if near else " (see `cudaforge tasks list`)"
        raise TaskError(f"no task {spec!r} in {where}{hint}")
    raise TaskError(f"task {spec!r} is ambiguous: {', '.join(t.id for t in matches)} (give more of the id)")
