"""What cudaforge caches, where, how big; removing entries; keeping the build cache under its size limit.

The kinds of cached data (:func:`cache_kinds`, one line each in :func:`cache_registry`):

- ``build``: compiled CUDA extensions, one folder per build key (``<build cache>/<48 hex digits>/``, with its
  ``build.json``); the build cache is ``eval.build_cache_dir`` (default ``~/.cache/cudaforge/build``);
- ``pch``: the precompiled ``torch/extension.h`` headers, one folder per host-flag set (~0.8 GB each), in
  ``$CUDAFORGE_PCH_DIR`` or ``<build cache>/pch``;
- ``triton``, ``tilelang``: what that JIT language compiled in a candidate's worker (in the CPU pool's compile ahead
  or an evaluation), kept for the next evaluation of the same source (``<build cache>/<name>-own/<source hash>/``);
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
``build`` entries, precompiled header sets and kept JIT caches after each new build is stored; a cache hit touches
its entry's folder (``cudaforge.eval.extensions``), so its mtime is when it was last used.

Importing this module imports nothing of cudaforge's but the language registry (``cudaforge.languages``, which
imports nothing heavy: the JIT-cache kinds come from it) and no torch, litellm or Hydra: the build path (``eval/extensions``)
keeps its cache in bounds with it, and ``cudaforge/cache_admin.py`` (the ``cudaforge cache`` command, which resolves the
folders from a config) lists and clears through it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


def cache_registry(paths: CachePaths) -> list[CacheKind]:
    """Every kind of cached data, one line each: a new cache is added here."""
    return [
        _build_kind(paths.build),
        _pch_kind(paths.pch),
        *_jit_kinds(paths.build),
        CacheKind("profiles", paths.profiles, "Nsight Compute profiles and task costs", r"[0-9a-f]{2}|task_cost"),
        CacheKind(
            "baselines",
            paths.build / "baselines",
            "references timed eagerly and under torch.compile beside a "
            "run (eval.compile_beside), one file per task, GPU model, torch and mode",
            r"[0-9a-f]{32}\.json",
        ),
        _llm_kind(paths.llm),
    ]


def _pch_kind(pch: Path | None) -> CacheKind:
    return CacheKind(
        "pch",
        pch,
        "precompiled torch/extension.h and cudaforge/bind.h, one pair per host-flag set",
        r"[0-9a-f]{24}",
        lock="{name}.lock",
        in_use_s=IN_USE_S,
    )


def _build_kind(build: Path) -> CacheKind:
    return CacheKind(
        "build",
        build,
        "compiled CUDA extensions, one folder per build key",
        r"[0-9a-f]{48}",
        lock="locks/{name}.lock",
        in_use_s=IN_USE_S,
    )


def _jit_kinds(build: Path) -> list[CacheKind]:
    """One kind per kernel language with a kept JIT cache (``KernelLanguage.jit_cache``: ``triton``, ``tilelang``),
    ``<build>/<jit_cache>-own/`` (Triton's also holds the verifier's own, ``trusted``)."""
    from cudaforge.languages import jit_caches

    return [
        CacheKind(
            lang.jit_cache,
            build / f"{lang.jit_cache}-own",
            f"{lang.title or lang.name} kernels kept per candidate source"
            + (", and the verifier's own" if lang.trusted_stubs else ""),
            r"\.?[0-9a-f]{8,64}(-\w+)?|trusted",
            in_use_s=IN_USE_S,
        )
        for lang in jit_caches()
    ]


def _llm_kind(path: Path | None) -> CacheKind:
    if path is None:
        return CacheKind("llm", None, "per run: <run dir>/llm_cache.sqlite; llm_cache.path=FILE names one to manage")
    return CacheKind(
        "llm",
        path,
        "LLM record/replay file (llm_cache.path)",
        re.escape(path.name) + r"(-wal|-shm|-journal)?",
        root=path.parent,
    )


KIND_NAMES = tuple(kind.name for kind in cache_registry(CachePaths(Path("."), Path("."), Path("."))))
"""The kinds' names, in :func:`cache_registry`'s order."""

DEFAULT_CLEAR = tuple(name for name in KIND_NAMES if name != "llm")
"""What ``cudaforge cache clear`` with no kinds clears: all but ``llm`` (a recording is not made again for free)."""


class UnknownCacheKind(ValueError):
    """A kind name that is not one of :data:`KIND_NAMES`."""


def check_names(names: list[str] | tuple[str, ...], known: list[str]) -> None:
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UnknownCacheKind(
            f"unknown cache kind {', '.join(map(repr, unknown))}: known kinds are {', '.join(known)}"
        )


# --------------------------------------------------------------------------- sizes


def measure_path(path: Path) -> tuple[int, int]:
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


def last_used(path: Path) -> float:
    """When an entry was last used: its own mtime (a build-cache hit touches it)."""
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


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
        if not free or (kind.in_use_s and now - last_used(entry) < kind.in_use_s):
            return None
        size, _ = measure_path(entry)
        _delete(entry)
        return size - measure_path(entry)[0]


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


def evict_lru(
    build_root: str | os.PathLike[str],
    max_bytes: int,
    now: float | None = None,
    pch_root: str | os.PathLike[str] | None = None,
) -> int:
    """Keep the build cache at ``build_root`` (with its precompiled headers, ``pch_root``, default
    ``<build_root>/pch``) under ``max_bytes`` (0 or less: no limit): remove whole ``build`` entries, precompiled
    header sets and kept JIT caches, least recently used first, until the rest fits. Entries in use are skipped;
    one process evicts at a time (another finding it busy returns at once). The bytes freed."""
    if max_bytes <= 0:
        return 0
    root = Path(build_root)
    now = time.time() if now is None else now
    pch = Path(pch_root) if pch_root else root / "pch"
    kinds = [_build_kind(root), _pch_kind(pch), *_jit_kinds(root)]
    freed = 0
    with _unless_locked(root / "locks" / "evict.lock", create=True) as ours:
        if not ours:
            return 0
        entries = [(last_used(e), measure_path(e)[0], kind, e) for kind in kinds for e in kind.entries()]
        total = sum(size for _, size, _, _ in entries)
        for _, size, kind, entry in sorted(entries, key=lambda item: item[0]):
            if total <= max_bytes:
                break
            gone = _remove_entry(kind, entry, now)
            if gone is not None:
                freed += gone
                total -= size
    return freed


def touch(entry: str | os.PathLike[str]) -> None:
    """Mark a cache entry as used now (its folder's mtime), for :func:`evict_lru`; never raises."""
    with contextlib.suppress(OSError):
        os.utime(entry)
