"""What cudaforge caches, where, how big; clearing it; keeping the build cache under its size limit.

The kinds of cached data (:func:`cache_kinds`, one line each in :func:`_registry`):

- ``build``: compiled CUDA extensions, one folder per build key (``<build cache>/<48 hex digits>/``, with its
  ``build.json``); the build cache is ``eval.build_cache_dir`` (default ``~/.cache/cudaforge/build``);
- ``pch``: the precompiled ``torch/extension.h`` headers, one folder per host-flag set (~0.8 GB each), in
  ``$CUDAFORGE_PCH_DIR`` or ``<build cache>/pch``;
- ``triton``: what Triton compiled in a candidate's worker, kept for the next evaluation of the same source
  (``<build cache>/triton-own/<source hash>/``);
- ``profiles``: Nsight Compute profiles and task costs (``profile.cache_dir``, ``$CUDAFORGE_PROFILE_CACHE`` or
  ``~/.cache/cudaforge/profile``);
- ``llm``: the LLM record/replay file. It is per run by default (``<run dir>/llm_cache.sqlite``, part of the
  run's record), so only the file that ``llm_cache.path`` names is managed here; ``clear`` with no kinds leaves
  it alone (a recording costs money to make again).

Each kind is a folder (``root``) and a pattern that its entries' names match; only those entries count and only
they are ever removed, so a cache folder set to a shared directory by mistake loses nothing else. Links are
never followed: a link inside a cache is removed as a link, its target is not touched. An entry in use is never
removed: one whose lock (``build``: ``<build cache>/locks/<key>.lock``; ``pch``: ``<sig>.lock``) another
process holds, or that was used in the last :data:`IN_USE_S` seconds.

The build cache's limit (``eval.build_cache_max_gb``, :func:`evict_lru`) removes whole least-recently-used
``build`` and ``triton`` entries after each new build is stored; a cache hit touches its entry's folder
(``cudaforge.eval.build``), so its mtime is when it was last used. Precompiled headers are not counted.

Importing this module imports no torch, litellm or Hydra.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

IN_USE_S = 60.0
"""An entry used (built, hit, kept) less than this many seconds ago is in use: never evicted or cleared."""

GB = 1 << 30


@dataclass(frozen=True)
class CacheKind:
    """One kind of cached data: where it lives and which names in that folder are its entries."""

    name: str
    """What ``cudaforge cache clear NAME`` calls it."""
    path: Path | None
    """Where it is (shown to the user); None when it has no one place (``llm`` without ``llm_cache.path``)."""
    description: str
    """One line: what it holds."""
    pattern: str = r".+"
    """Regular expression the names of its entries (direct children of ``root``) match in full."""
    root: Path | None = None
    """The folder its entries are in (default ``path``)."""
    lock: str | None = None
    """Lock file of an entry, relative to ``root``, ``{name}`` the entry's name: held by a process using it."""
    in_use_s: float = 0.0
    """Entries used less than this many seconds ago are skipped (0: none)."""

    @property
    def folder(self) -> Path | None:
        """The folder its entries are in."""
        return self.root if self.root is not None else self.path

    def entries(self) -> list[Path]:
        """Its entries, links included (never followed), sorted by name."""
        folder = self.folder
        if folder is None:
            return []
        match = re.compile(self.pattern).fullmatch
        try:
            with os.scandir(folder) as found:
                return sorted(Path(e.path) for e in found if match(e.name))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []


@dataclass
class CachePaths:
    """The folders (and file) the kinds live in, resolved from a config."""

    build: Path
    """The build cache (``eval.build_cache_dir``)."""
    pch: Path
    """The precompiled headers (``$CUDAFORGE_PCH_DIR`` or ``<build>/pch``)."""
    profiles: Path
    """The profile cache (``profile.cache_dir``)."""
    llm: Path | None = None
    """The LLM record/replay file (``llm_cache.path``; None: per run)."""
    build_max_gb: float = 0.0
    """The build cache's limit (``eval.build_cache_max_gb``; 0: none), for display."""

    @classmethod
    def from_config(cls, cfg: Any = None) -> "CachePaths":
        """From the whole config (a ``CudaforgeConfig``, its DictConfig or a dict of its groups; None: the
        defaults), resolved as the evaluator, the profiler and the runner resolve them."""
        from cudaforge.eval.build import BuildSettings
        from cudaforge.eval.evaluator import DEFAULT_BUILD_CACHE, _default_eval_config
        from cudaforge.profile.cache import ProfileCache

        build = _setting(cfg, "eval.build_cache_dir") or DEFAULT_BUILD_CACHE  # as the evaluator resolves it
        settings = BuildSettings(cache_dir=str(Path(build).expanduser()))
        llm = _setting(cfg, "llm_cache.path")
        max_gb = _setting(cfg, "eval.build_cache_max_gb")
        if max_gb is None:
            max_gb = _default_eval_config()["build_cache_max_gb"]
        return cls(build=settings.cache_root(), pch=settings.pch_root(),
                   profiles=ProfileCache(_setting(cfg, "profile.cache_dir")).root.resolve(),
                   llm=Path(llm).expanduser().resolve() if llm else None, build_max_gb=float(max_gb))  # fmt: skip


def _setting(cfg: Any, dotted: str) -> Any:
    """``cfg.a.b`` for attribute or mapping nodes; None when any part is missing."""
    node = cfg
    for part in dotted.split("."):
        if node is None:
            return None
        node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
    return node


def _registry(paths: CachePaths) -> list[CacheKind]:
    """Every kind of cached data, one line each: a new cache is added here."""
    return [
        _build_kind(paths.build),
        CacheKind("pch", paths.pch, "precompiled torch/extension.h, one per host-flag set", r"[0-9a-f]{24}",
                  lock="{name}.lock", in_use_s=IN_USE_S),
        _triton_kind(paths.build),
        CacheKind("profiles", paths.profiles, "Nsight Compute profiles and task costs", r"[0-9a-f]{2}|task_cost"),
        _llm_kind(paths.llm),
    ]


def _build_kind(build: Path) -> CacheKind:
    return CacheKind("build", build, "compiled CUDA extensions, one folder per build key", r"[0-9a-f]{48}",
                     lock="locks/{name}.lock", in_use_s=IN_USE_S)


def _triton_kind(build: Path) -> CacheKind:
    return CacheKind("triton", build / "triton-own", "Triton kernels kept per candidate source, and the verifier's own",
                     r"\.?[0-9a-f]{8,64}(-\w+)?|trusted", in_use_s=IN_USE_S)


def _llm_kind(path: Path | None) -> CacheKind:
    if path is None:
        return CacheKind("llm", None, "per run: <run dir>/llm_cache.sqlite; llm_cache.path=FILE names one to manage")
    return CacheKind("llm", path, "LLM record/replay file (llm_cache.path)",
                     re.escape(path.name) + r"(-wal|-shm|-journal)?", root=path.parent)


KIND_NAMES = tuple(kind.name for kind in _registry(CachePaths(Path("."), Path("."), Path("."))))
"""The kinds' names, in :func:`_registry`'s order."""

DEFAULT_CLEAR = tuple(name for name in KIND_NAMES if name != "llm")
"""What ``cudaforge cache clear`` with no kinds clears: all but ``llm`` (a recording is not made again for free)."""


class UnknownCacheKind(ValueError):
    """A kind name that is not one of :data:`KIND_NAMES`."""


def _paths(source: Any) -> CachePaths:
    return source if isinstance(source, CachePaths) else CachePaths.from_config(source)


def cache_kinds(source: Any = None) -> list[CacheKind]:
    """The kinds of cached data, where each lives. ``source``: :class:`CachePaths`, or a config for
    :meth:`CachePaths.from_config` (None: the defaults)."""
    return _registry(_paths(source))


def _check_names(names: list[str] | tuple[str, ...], known: list[str]) -> None:
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UnknownCacheKind(f"unknown cache kind {', '.join(map(repr, unknown))}: known kinds are "
                               f"{', '.join(known)}")  # fmt: skip


def _select(kinds: list[str] | tuple[str, ...] | None, source: Any) -> list[CacheKind]:
    registry = cache_kinds(source)
    if kinds is None:
        return registry
    _check_names(kinds, [k.name for k in registry])
    return [k for k in registry if k.name in kinds]


# --------------------------------------------------------------------------- sizes


def _measure(path: Path) -> tuple[int, int]:
    """Bytes and files under ``path`` (itself when not a folder); links count as themselves, never followed."""
    try:
        info = path.lstat()
    except OSError:
        return 0, 0
    if not path.is_dir() or path.is_symlink():
        return info.st_size, 1
    size = files = 0
    for folder, dirs, names in os.walk(path, followlinks=False):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(folder, name)).st_size
                files += 1
    return size, files


def _last_used(path: Path) -> float:
    """When an entry was last used: its own mtime (a build-cache hit touches it)."""
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def cache_info(source: Any = None, kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """Per kind: ``name``, ``path`` (str or None), ``description``, ``bytes``, ``files``, ``entries``, and the
    ``newest`` and ``oldest`` entry's last use (epoch seconds, None when empty). Raises
    :class:`UnknownCacheKind` for a name not in :data:`KIND_NAMES`."""
    rows = []
    for kind in _select(kinds, source):
        size = files = 0
        used = []
        for entry in kind.entries():
            entry_bytes, entry_files = _measure(entry)
            size, files = size + entry_bytes, files + entry_files
            used.append(_last_used(entry))
        rows.append({"name": kind.name, "path": str(kind.path) if kind.path else None,
                     "description": kind.description, "bytes": size, "files": files, "entries": len(used),
                     "newest": max(used) if used else None, "oldest": min(used) if used else None})  # fmt: skip
    return rows


# --------------------------------------------------------------------------- removing


@contextlib.contextmanager
def _unless_locked(lock: Path | None, create: bool = False) -> Iterator[bool]:
    """Hold ``lock`` (an ``fcntl`` lock file) for the block, without waiting: True when held or absent
    (nobody uses it), False when another process holds it. ``create``: make a missing lock file."""
    if lock is None:
        yield True
        return
    flags = os.O_RDWR | os.O_NOFOLLOW | (os.O_CREAT if create else 0)
    try:
        if create:
            lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, flags, 0o644)
    except FileNotFoundError:
        yield True
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link where a lock belongs: leave the entry alone
            yield False
            return
        raise
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # releases the lock


def _delete(entry: Path) -> None:
    """Remove an entry: a link or file is unlinked (a link's target is untouched); a folder is removed without
    following the links in it (``shutil.rmtree`` never follows them)."""
    if entry.is_symlink() or not entry.is_dir():
        entry.unlink(missing_ok=True)
    else:
        shutil.rmtree(entry, ignore_errors=True)


def _remove_entry(kind: CacheKind, entry: Path, now: float) -> int | None:
    """Remove one entry unless it is in use; the bytes freed, None when it was skipped."""
    lock = kind.folder / kind.lock.format(name=entry.name) if kind.lock and kind.folder else None
    with _unless_locked(lock) as free:
        if not free or (kind.in_use_s and now - _last_used(entry) < kind.in_use_s):
            return None
        size, _ = _measure(entry)
        _delete(entry)
        return size - _measure(entry)[0]


@dataclass
class Cleared:
    """What clearing one kind did."""

    freed: int = 0
    """Bytes removed."""
    removed: int = 0
    """Entries removed."""
    skipped: int = 0
    """Entries left because they were in use."""


def clear_kind(kind: CacheKind, now: float | None = None) -> Cleared:
    """Remove every entry of ``kind`` that is not in use."""
    now = time.time() if now is None else now
    done = Cleared()
    for entry in kind.entries():
        freed = _remove_entry(kind, entry, now)
        if freed is None:
            done.skipped += 1
        else:
            done.freed, done.removed = done.freed + freed, done.removed + 1
    return done


def cache_clear(kinds: list[str] | tuple[str, ...], source: Any = None) -> dict[str, int]:
    """Clear the named kinds (entries in use are left); the bytes freed per kind. Raises
    :class:`UnknownCacheKind` (and clears nothing) for a name not in :data:`KIND_NAMES`."""
    return {kind.name: clear_kind(kind).freed for kind in _select(list(kinds), source)}


def evict_lru(build_root: str | os.PathLike, max_bytes: int, now: float | None = None) -> int:
    """Keep the build cache at ``build_root`` under ``max_bytes`` (0 or less: no limit): remove whole
    ``build`` and ``triton`` entries, least recently used first, until the rest fits. Entries in use are
    skipped; one process evicts at a time (another finding it busy returns at once). The bytes freed."""
    if max_bytes <= 0:
        return 0
    root = Path(build_root)
    now = time.time() if now is None else now
    kinds = [_build_kind(root), _triton_kind(root)]
    freed = 0
    with _unless_locked(root / "locks" / "evict.lock", create=True) as ours:
        if not ours:
            return 0
        entries = [(_last_used(e), _measure(e)[0], kind, e) for kind in kinds for e in kind.entries()]
        total = sum(size for _, size, _, _ in entries)
        for _, size, kind, entry in sorted(entries, key=lambda item: item[0]):
            if total <= max_bytes:
                break
            gone = _remove_entry(kind, entry, now)
            if gone is not None:
                freed += gone
                total -= size
    return freed


def touch(entry: str | os.PathLike) -> None:
    """Mark a cache entry as used now (its folder's mtime), for :func:`evict_lru`; never raises."""
    with contextlib.suppress(OSError):
        os.utime(entry)


# --------------------------------------------------------------------------- the command


USAGE = """usage: cudaforge cache info | clear [KIND ...] [key=value ...]

  info            where each cache lives, its size, files and entries
  clear [KIND..]  remove the entries of those kinds that are not in use (no KIND: all but llm)

kinds: {} (llm: only the file llm_cache.path names).
The build cache's limit is eval.build_cache_max_gb; see docs/evaluation.md, "Caches".""".format(", ".join(KIND_NAMES))


def human_bytes(n: int) -> str:
    """``512 B``, ``1.5 KB``, ``785.0 MB``, ``1.20 GB`` (1 KB = 1024 bytes)."""
    if n < 1024:
        return f"{n} B"
    for unit, scale in (("KB", 1 << 10), ("MB", 1 << 20)):
        if n < scale << 10:
            return f"{n / scale:.1f} {unit}"
    return f"{n / GB:.2f} GB"


def _age(stamp: float | None, now: float) -> str:
    if stamp is None:
        return "-"
    seconds = max(0.0, now - stamp)
    for unit, scale in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= scale:
            return f"{seconds / scale:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def split_cache_args(args: list[str]) -> tuple[list[str], list[str]]:
    """``cudaforge cache``'s own words (``clear``, ``build`` ...) and the rest (Hydra overrides and flags)."""
    words = [a for a in args if "=" not in a and not a.startswith("-")]
    return words, [a for a in args if a not in words]


OVERRIDES = ("eval.build_cache_dir", "eval.build_cache_max_gb", "profile.cache_dir", "llm_cache.path")
"""The settings ``cudaforge cache`` takes as ``key=value`` when it is given no composed config."""


def config_from_overrides(overrides: list[str]) -> dict[str, Any]:
    """A config (nested dict) of the ``key=value`` overrides among :data:`OVERRIDES` (``null``: the default);
    raises ValueError for any other key or a limit that is not a number."""
    cfg: dict[str, Any] = {}
    for item in overrides:
        name, _, value = item.lstrip("+").partition("=")
        if name not in OVERRIDES:
            raise ValueError(f"{name!r} cannot be set here; cudaforge cache takes {', '.join(OVERRIDES)}")
        group, key = name.split(".")
        if value in ("", "null", "None", "~"):
            cfg.setdefault(group, {})[key] = None
            continue
        try:
            cfg.setdefault(group, {})[key] = float(value) if key == "build_cache_max_gb" else value
        except ValueError:
            raise ValueError(f"{name}={value!r}: expected a number of GB") from None
    return cfg


def main_cache(args: list[str], cfg: Any = None, out: Any = None) -> int:
    """``cudaforge cache info`` / ``cudaforge cache clear [KIND ...]``: print a table; the exit status (0 ok,
    2 an unknown kind, action or setting). ``args``: what follows ``cache`` on the command line, e.g.
    ``["clear", "build", "eval.build_cache_dir=/scratch/b"]``; ``cfg``: a composed config (a Hydra app's), whose
    values then win and whose overrides ``args`` may still hold (they are ignored). Without ``cfg`` the
    defaults hold, changed by the ``key=value`` overrides of :data:`OVERRIDES` in ``args`` (no Hydra needed).

    From ``cudaforge/cli.py``: ``return main_cache(rest)`` (``rest``: the arguments after ``cache``).
    """
    out = out or sys.stdout
    words, overrides = split_cache_args(list(args))
    action, names = (words[0], words[1:]) if words else ("info", [])
    if action == "help" or any(flag in ("-h", "--help") for flag in overrides):
        print(USAGE, file=out)
        return 0
    if action not in ("info", "clear") or (action == "info" and names):
        print(f"cudaforge cache: unknown action {' '.join(words)!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        paths = _paths(cfg if cfg is not None else config_from_overrides([o for o in overrides if "=" in o]))
        if action == "info":
            _print_info(cache_info(paths), paths, out)
            return 0
        kinds = _select(names or list(DEFAULT_CLEAR), paths)
    except ValueError as exc:  # UnknownCacheKind included
        print(f"cudaforge cache: {exc}", file=sys.stderr)
        return 2
    total = 0
    for kind in kinds:
        if kind.path is None:
            print(f"{kind.name:<9} nothing to clear: {kind.description}", file=out)
            continue
        done = clear_kind(kind)
        total += done.freed
        busy = f", {done.skipped} in use left" if done.skipped else ""
        print(f"{kind.name:<9} freed {human_bytes(done.freed):>10} ({done.removed} removed{busy})  {kind.path}",
              file=out)  # fmt: skip
    print(f"{'total':<9} freed {human_bytes(total):>10}", file=out)
    return 0


def _print_info(rows: list[dict[str, Any]], paths: CachePaths, out: Any) -> None:
    now = time.time()
    print(f"{'kind':<9} {'size':>10} {'files':>7} {'entries':>7}  {'last used':<12} path", file=out)
    for row in rows:
        if row["path"] is None:
            print(f"{row['name']:<9} {'-':>10} {'-':>7} {'-':>7}  {'-':<12} {row['description']}", file=out)
            continue
        print(f"{row['name']:<9} {human_bytes(row['bytes']):>10} {row['files']:>7} {row['entries']:>7}  "
              f"{_age(row['newest'], now):<12} {row['path']}", file=out)  # fmt: skip
    total = sum(r["bytes"] for r in rows)
    print(f"{'total':<9} {human_bytes(total):>10}", file=out)
    limit = f"{paths.build_max_gb:g} GB" if paths.build_max_gb > 0 else "none"
    print(f"build cache limit (eval.build_cache_max_gb): {limit}, for build + triton; least recently used "
          "entries go first", file=out)  # fmt: skip
