"""The ``cudaforge cache`` command: the cache folders resolved from a config as the evaluator, the profiler and the
runner resolve them, and what is in them (``cudaforge/caches.py`` holds the kinds and their removal)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from cudaforge.caches import (
    DEFAULT_CLEAR,
    GB,
    KIND_NAMES,
    CacheKind,
    CachePaths,
    cache_registry,
    check_names,
    clear_kind,
    last_used,
    measure_path,
)


def _setting(cfg: Any, dotted: str) -> Any:
    """``cfg.a.b`` for attribute or mapping nodes; None when any part is missing."""
    node = cfg
    for part in dotted.split("."):
        if node is None:
            return None
        node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
    return node


def cache_paths(cfg: Any = None) -> CachePaths:
    """From the whole config (a ``CudaforgeConfig``, its DictConfig or a dict of its groups; None: the
    defaults), resolved as the evaluator, the profiler and the runner resolve them."""
    from cudaforge.eval import DEFAULT_BUILD_CACHE, BuildSettings, default_eval_config
    from cudaforge.profile.cache import ProfileCache

    build = _setting(cfg, "eval.build_cache_dir") or DEFAULT_BUILD_CACHE  # as the evaluator resolves it
    settings = BuildSettings(cache_dir=str(Path(build).expanduser()))
    llm = _setting(cfg, "llm_cache.path")
    max_gb = _setting(cfg, "eval.build_cache_max_gb")
    if max_gb is None:
        max_gb = default_eval_config()["build_cache_max_gb"]
    return CachePaths(
        build=settings.cache_root(),
        pch=settings.pch_root(),
        profiles=ProfileCache(_setting(cfg, "profile.cache_dir")).root.resolve(),
        llm=Path(llm).expanduser().resolve() if llm else None,
        build_max_gb=float(max_gb),
    )


def _paths(source: Any) -> CachePaths:
    return source if isinstance(source, CachePaths) else cache_paths(source)


def cache_kinds(source: Any = None) -> list[CacheKind]:
    """The kinds of cached data, where each lives. ``source``: :class:`CachePaths`, or a config for
    :func:`cache_paths` (None: the defaults)."""
    return cache_registry(_paths(source))


def _select(kinds: list[str] | tuple[str, ...] | None, source: Any) -> list[CacheKind]:
    registry = cache_kinds(source)
    if kinds is None:
        return registry
    check_names(kinds, [k.name for k in registry])
    return [k for k in registry if k.name in kinds]


def cache_info(source: Any = None, kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """Per kind: ``name``, ``path`` (str or None), ``description``, ``bytes``, ``files``, ``entries``, and the
    ``newest`` and ``oldest`` entry's last use (epoch seconds, None when empty). Raises
    :class:`UnknownCacheKind` for a name not in :data:`KIND_NAMES`."""
    rows = []
    for kind in _select(kinds, source):
        size = files = 0
        used = []
        for entry in kind.entries():
            entry_bytes, entry_files = measure_path(entry)
            size, files = size + entry_bytes, files + entry_files
            used.append(last_used(entry))
        rows.append(
            {
                "name": kind.name,
                "path": str(kind.path) if kind.path else None,
                "description": kind.description,
                "bytes": size,
                "files": files,
                "entries": len(used),
                "newest": max(used) if used else None,
                "oldest": min(used) if used else None,
            }
        )
    return rows


def cache_clear(kinds: list[str] | tuple[str, ...], source: Any = None) -> dict[str, int]:
    """Clear the named kinds (entries in use are left); the bytes freed per kind. Raises
    :class:`UnknownCacheKind` (and clears nothing) for a name not in :data:`KIND_NAMES`."""
    return {kind.name: clear_kind(kind).freed for kind in _select(list(kinds), source)}


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

    From ``cudaforge/cli/cache.py``: ``return main_cache(rest)`` (``rest``: the arguments after ``cache``).
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
        print(
            f"{kind.name:<9} freed {human_bytes(done.freed):>10} ({done.removed} removed{busy})  {kind.path}", file=out
        )
    print(f"{'total':<9} freed {human_bytes(total):>10}", file=out)
    return 0


def _print_info(rows: list[dict[str, Any]], paths: CachePaths, out: Any) -> None:
    now = time.time()
    print(f"{'kind':<9} {'size':>10} {'files':>7} {'entries':>7}  {'last used':<12} path", file=out)
    for row in rows:
        if row["path"] is None:
            print(f"{row['name']:<9} {'-':>10} {'-':>7} {'-':>7}  {'-':<12} {row['description']}", file=out)
            continue
        print(
            f"{row['name']:<9} {human_bytes(row['bytes']):>10} {row['files']:>7} {row['entries']:>7}  "
            f"{_age(row['newest'], now):<12} {row['path']}",
            file=out,
        )
    total = sum(r["bytes"] for r in rows)
    print(f"{'total':<9} {human_bytes(total):>10}", file=out)
    limit = f"{paths.build_max_gb:g} GB" if paths.build_max_gb > 0 else "none"
    print(
        f"build cache limit (eval.build_cache_max_gb): {limit}, for build + the kept JIT caches; least recently used "
        "entries go first",
        file=out,
    )
