"""Problem-set identity: which problems a run ran, named so that two runs (or a run and a paper) can be compared.

``problem_set(tasks, root)`` names the selected tasks' problem set: a KernelBench (or other) git commit when
``root`` lies in a git checkout that tracks it, ``<repo>@<commit>`` with ``+dirty`` when the checkout has local
changes under ``root``, else ``hashes:<digest>``. The digest is a hash over each task's level, problem number,
name and the content hash of its reference (``Task.source_hash``), so it does not depend on the suite's name
in the task ids: the same problems loaded under two suite names have the same digest.

``cudaforge run`` writes the record as ``problem_set.json`` in the run directory; ``run_problem_set`` reads it
back (None for runs made before problem-set identity) and ``version_line`` names it. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cudaforge.types import Task

PROBLEM_SET_FILE = "problem_set.json"
"""The record's name in a run directory."""

UNKNOWN = "problem set unknown (run made before problem-set identity)"
"""What a report says for a run directory without ``problem_set.json``."""

GIT_TIMEOUT_S = 10.0
"""Seconds each git call may take before the checkout is treated as not a git checkout."""

_ID = re.compile(r"(?:^|/)level(\d+)/(\d+)_")


def digest(tasks: Iterable[Task]) -> str:
    """Hash (sha256, 16 hex digits) over the sorted ``level/problem_id/name:source_hash`` entries."""
    entries = sorted(f"{t.level}/{t.problem_id}/{t.name}:{t.source_hash}" for t in tasks)
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()[:16]


def record_digest(tasks: dict[str, str]) -> str:
    """``digest`` from a record's ``tasks`` map (task id -> source hash), as the tasks themselves would give it
    (ids are ``<suite>/level<L>/<problem_id>_<name>``); used for a merged run's problem set."""
    entries = []
    for task_id, source_hash in tasks.items():
        match = re.search(r"(?:^|/)level(\d+)/(\d+)_(.*)$", task_id)
        entry = f"{match.group(1)}/{match.group(2)}/{match.group(3)}" if match else task_id
        entries.append(f"{entry}:{source_hash}")
    return hashlib.sha256("\n".join(sorted(entries)).encode()).hexdigest()[:16]


def _git(folder: Path, *args: str) -> str | None:
    """Stdout of ``git -C folder ARGS`` (stripped), or None when git is missing, fails or times out."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_checkout(root: str | Path) -> dict[str, Any] | None:
    """``{"name", "commit", "dirty"}`` of the git checkout that tracks files under ``root``, else None.

    ``root`` may be a folder or a file (its folder is asked). A folder inside a checkout that tracks nothing in
    it (say an untracked copy) is not versioned by that checkout: None. ``name`` is the ``origin`` remote's
    repository name, else the checkout's folder name. ``dirty``: ``git status --porcelain`` lists changes,
    untracked files included, under ``root``. Never raises.
    """
    path = Path(root).expanduser()
    folder = path if path.is_dir() else path.parent
    if not folder.is_dir():
        return None
    head = _git(folder, "rev-parse", "--show-toplevel", "HEAD")
    lines = head.splitlines() if head else []
    if len(lines) != 2 or not re.fullmatch(r"[0-9a-f]{40,64}", lines[1]):
        return None  # not a repository, or one without a commit
    pathspec = "." if path.is_dir() else path.name
    if not _git(folder, "ls-files", "--", pathspec):
        return None
    status = _git(folder, "status", "--porcelain", "--untracked-files=normal", "--", pathspec)
    remote = _git(folder, "config", "--get", "remote.origin.url") or ""
    name = re.sub(r"\.git$", "", remote.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]) or Path(lines[0]).name
    return {"name": name, "commit": lines[1], "dirty": None if status is None else bool(status)}


def problem_set(tasks: Iterable[Task], root: str | None) -> dict[str, Any]:
    """The identity of the problem set that ``tasks`` (loaded from ``root``) make up.

    Returns ``{"version", "kind", "commit", "dirty", "root", "digest", "tasks"}``: ``kind`` is ``git`` (``root``
    is tracked by a git checkout: ``version`` is ``<repo>@<commit[:7]>``, ``+dirty`` with local changes under
    ``root``) or ``hashes`` (no root, no git, not a checkout: ``version`` is ``hashes:<digest[:12]>``); ``tasks``
    maps each task id to its ``source_hash``.
    """
    tasks = list(tasks)
    value = digest(tasks)
    where = str(Path(root).expanduser().resolve()) if root else None
    checkout = git_checkout(where) if where else None
    record: dict[str, Any] = {
        "version": f"hashes:{value[:12]}",
        "kind": "hashes",
        "commit": None,
        "dirty": None,
        "root": where,
        "digest": value,
        "tasks": {t.id: t.source_hash for t in tasks},
    }
    if checkout:
        dirty = "+dirty" if checkout["dirty"] else ""
        record.update(
            version=f"{checkout['name']}@{checkout['commit'][:7]}{dirty}",
            kind="git",
            commit=checkout["commit"],
            dirty=checkout["dirty"],
        )
    return record


PIN_MIN_DIGITS = 12
"""The shortest prefix of a digest a pin may give (48 bits)."""


def pin_digest(tasks: Iterable[Task], levels: Iterable[int] = ()) -> str:
    """The digest a pin compares: ``digest`` over the tasks of ``levels`` (every task when empty)."""
    keep = set(levels)
    return digest(t for t in tasks if not keep or t.level in keep)


def pin_status(tasks: Iterable[Task], levels: Iterable[int], expected: str, allow_other: bool) -> dict[str, Any]:
    """Whether a suite's tasks (before selection) are the pinned problem set: ``{"expected", "digest", "levels",
    "matches", "allowed_other"}``. Raises ValueError for a pin that is not 12 to 16 hex digits."""
    pin = str(expected).strip().lower()
    if not re.fullmatch(rf"[0-9a-f]{{{PIN_MIN_DIGITS},16}}", pin):
        raise ValueError(
            f"suite.expected_problem_set={expected!r}: expected {PIN_MIN_DIGITS} to 16 hex digits, as "
            "`cudaforge tasks pin ROOT` prints them"
        )
    levels = sorted(set(levels))
    value = pin_digest(tasks, levels)
    return {
        "expected": pin,
        "digest": value,
        "levels": levels,
        "matches": value.startswith(pin),
        "allowed_other": bool(allow_other),
    }


def pin_refusal(status: dict[str, Any]) -> str | None:
    """The one line a run stops with on another problem set than its pin (None when it may run)."""
    if status["matches"] or status["allowed_other"]:
        return None
    levels = ", ".join(map(str, status["levels"])) or "all"
    return (
        f"the suite's problem set (levels {levels}) has digest {status['digest']}, not the pinned "
        f"{status['expected']} (suite.expected_problem_set): another copy of the problems; point suite.root at the "
        "pinned copy, or set suite.allow_other_problem_set=true to run it anyway (the report marks the run)"
    )


def other_problem_set(record: dict[str, Any] | None) -> str | None:
    """``pinned X, ran Y`` for a run recorded on another problem set than its pin, else None."""
    pin = (record or {}).get("pin") or {}
    if pin and not pin.get("matches"):
        return f"pinned {pin.get('expected')}, ran {pin.get('digest')}"
    return None


def main_pin(args: list[str]) -> int:
    """``cudaforge tasks pin ROOT [LEVEL ...]``: the digest of a KernelBench-layout folder's problems (of the levels
    given, else all), to set as ``suite.expected_problem_set``; exit 2 for a usage error."""
    import sys

    from cudaforge.tasks.loader import TaskError, load_directory

    if not args or args[0].startswith("-") or "=" in args[0] or not all(a.isdigit() for a in args[1:]):
        print(
            "cudaforge tasks pin: say a problem-set folder and optionally levels: cudaforge tasks pin ROOT [1 2 3]",
            file=sys.stderr,
        )
        return 2
    try:
        tasks = load_directory(args[0], suite="pin")
    except TaskError as exc:
        print(f"cudaforge tasks pin: error: {exc}", file=sys.stderr)
        return 2
    levels = sorted({int(a) for a in args[1:]})
    kept = [t for t in tasks if not levels or t.level in levels]
    if not kept:
        print(f"cudaforge tasks pin: error: {args[0]} holds no problem of level(s) {levels}", file=sys.stderr)
        return 2
    counts: dict[int, int] = {}
    for t in kept:
        counts[t.level] = counts.get(t.level, 0) + 1
    print(f"{args[0]}: " + ", ".join(f"level {k}: {v}" for k, v in sorted(counts.items())))
    print(pin_digest(kept))
    return 0


def _problem_key(task_id: str) -> str:
    """A task id without its suite name: ``(level, problem number)`` when the id has them, else the rest."""
    match = _ID.search(task_id)
    return f"level{match.group(1)}/{match.group(2)}" if match else task_id.split("/", 1)[-1]


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, int]:
    """How two problem-set records' tasks differ, matched by level and problem number (suite names ignored).

    Returns ``{"changed", "only_a", "only_b", "same"}`` counts; ``changed``: another reference source.
    """
    ha = {_problem_key(k): v for k, v in (a.get("tasks") or {}).items()}
    hb = {_problem_key(k): v for k, v in (b.get("tasks") or {}).items()}
    shared = set(ha) & set(hb)
    changed = sum(ha[k] != hb[k] for k in shared)
    return {
        "changed": changed,
        "only_a": len(set(ha) - shared),
        "only_b": len(set(hb) - shared),
        "same": len(shared) - changed,
    }


def difference_text(a: dict[str, Any], b: dict[str, Any]) -> str:
    """``3 task(s) differ (2 changed, 1 only in one)`` for two records (``0 task(s) differ`` when none do)."""
    c = compare(a, b)
    n = c["changed"] + c["only_a"] + c["only_b"]
    if not n:
        return "0 task(s) differ"
    return f"{n} task(s) differ ({c['changed']} changed, {c['only_a'] + c['only_b']} only in one)"


def read_problem_set(run_dir: str | Path) -> dict[str, Any] | None:
    """The ``problem_set.json`` of a run directory; None when it has none (or it cannot be read)."""
    path = Path(run_dir) / PROBLEM_SET_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "digest" in data else None


def version_line(record: dict[str, Any] | None) -> str:
    """A run's problem set in words: ``problem set KernelBench@6b1cea2``, the one it changed to on a resume
    after it, or ``UNKNOWN`` for a run without a record."""
    if record is None:
        return UNKNOWN
    text = f"problem set {record.get('version', '?')}"
    later = [r for r in record.get("changed_on_resume") or [] if isinstance(r, dict)]
    if later:
        text += f", changed on resume to {later[-1].get('version', '?')} ({difference_text(record, later[-1])})"
    return text


def run_version(run_dir: str | Path) -> str | None:
    """The problem-set version a run directory records (None for runs made before problem-set identity)."""
    record = read_problem_set(run_dir)
    return None if record is None else str(record.get("version"))
