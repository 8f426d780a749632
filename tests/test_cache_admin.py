"""cudaforge.cache_admin: cache sizes, clearing by kind, the build cache's least-recently-used limit."""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import time
from pathlib import Path

import pytest

from cudaforge.cache_admin import cache_clear, cache_info, cache_kinds, main_cache
from cudaforge.caches import GB, IN_USE_S, KIND_NAMES, CachePaths, UnknownCacheKind, evict_lru


def key(i: int, digits: int = 48) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()[:digits]


def write(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def age(path: Path, seconds: float) -> None:
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


@pytest.fixture
def caches(tmp_path: Path) -> CachePaths:
    """A build cache with two builds, a precompiled header, a kept Triton cache; profiles; an LLM file; and
    files of nobody's beside them. Everything is old enough to be cleared."""
    build = tmp_path / "build"
    for i, size in ((1, 1000), (2, 3000)):
        write(build / key(i) / "build.json", 10)
        write(build / key(i) / "light" / "m.so", size)
        write(build / "locks" / f"{key(i)}.lock", 0)
    write(build / "pch" / key(3, 24) / "torch" / "extension.h.gch", 5000)
    write(build / "pch" / f"{key(3, 24)}.lock", 0)
    write(build / "triton-own" / key(4, 16) / "k.cubin", 700)
    write(build / "cpu_shims" / "c10" / "x.h", 50)
    write(build / "notes.txt", 11)  # not ours: never counted, never removed
    write(tmp_path / "profile" / "ab" / f"ab{key(5, 22)}.json", 200)
    write(tmp_path / "profile" / "task_cost" / "cd" / "cd.json", 100)
    write(tmp_path / "runs" / "llm_cache.sqlite", 4096)
    write(tmp_path / "runs" / "llm_cache.sqlite-wal", 100)
    write(tmp_path / "runs" / "results.jsonl", 9)
    for path in [*build.rglob("*"), *(tmp_path / "profile").rglob("*"), *(tmp_path / "runs").rglob("*")]:
        age(path, 2 * IN_USE_S)
    for folder in (build, build / "pch", build / "triton-own"):
        age(folder, 2 * IN_USE_S)
    return CachePaths(
        build=build,
        pch=build / "pch",
        profiles=tmp_path / "profile",
        llm=tmp_path / "runs" / "llm_cache.sqlite",
        build_max_gb=20.0,
    )


def info(paths: CachePaths) -> dict[str, dict]:
    return {row["name"]: row for row in cache_info(paths)}


def test_info_sizes_are_the_files_in_each_kind(caches):
    rows = info(caches)
    assert list(rows) == list(KIND_NAMES)
    assert (rows["build"]["bytes"], rows["build"]["files"], rows["build"]["entries"]) == (4020, 4, 2)
    assert (rows["pch"]["bytes"], rows["pch"]["entries"]) == (5000, 1)
    assert (rows["triton"]["bytes"], rows["triton"]["files"]) == (700, 1)
    assert (rows["profiles"]["bytes"], rows["profiles"]["files"]) == (300, 2)
    assert (rows["llm"]["bytes"], rows["llm"]["files"]) == (4196, 2)
    assert rows["build"]["path"] == str(caches.build) and rows["triton"]["path"] == str(caches.build / "triton-own")
    assert rows["build"]["oldest"] <= rows["build"]["newest"] < time.time() - IN_USE_S


def test_clear_removes_only_the_kind_asked_for(caches, tmp_path):
    before = info(caches)
    freed = cache_clear(["build"], caches)
    assert freed == {"build": 4020}
    after = info(caches)
    assert after["build"]["bytes"] == 0 and after["build"]["entries"] == 0
    for name in ("pch", "triton", "profiles", "llm"):
        assert after[name] == before[name]
    assert (caches.build / "notes.txt").exists() and (caches.build / "cpu_shims" / "c10" / "x.h").exists()
    assert (caches.build / "locks" / f"{key(1)}.lock").exists()  # lock files stay (another process may wait on one)
    assert cache_clear(["pch", "triton", "profiles", "llm"], caches) == {
        "pch": 5000,
        "triton": 700,
        "profiles": 300,
        "llm": 4196,
    }
    assert (tmp_path / "runs" / "results.jsonl").exists() and (caches.build / "pch").is_dir()
    assert sum(r["bytes"] for r in cache_info(caches)) == 0


def test_links_in_a_cache_are_removed_as_links_never_followed(caches, tmp_path):
    outside = write(tmp_path / "precious" / "data.bin", 123)
    (caches.build / key(1) / "light" / "escape").symlink_to(outside.parent)  # a link inside an entry
    (caches.build / key(7)).symlink_to(outside.parent)  # an entry that is itself a link
    stamp = time.time() - 2 * IN_USE_S
    os.utime(caches.build / key(7), (stamp, stamp), follow_symlinks=False)
    (caches.profiles / "ef").symlink_to(outside)
    rows = info(caches)
    assert rows["build"]["bytes"] == 4020 + 2 * len(str(outside.parent))  # links count as links, not their data
    cache_clear(["build", "profiles"], caches)
    assert outside.read_bytes() == b"x" * 123
    assert not (caches.build / key(7)).is_symlink() and not (caches.profiles / "ef").is_symlink()


def test_entries_in_use_are_left(caches):
    recent = caches.build / key(1)
    os.utime(recent)  # used just now
    with open(caches.pch / f"{key(3, 24)}.lock", "a+") as held:  # a header being built
        fcntl.flock(held, fcntl.LOCK_EX)
        freed = cache_clear(["build", "pch"], caches)
    assert freed == {"build": 3010, "pch": 0}
    assert recent.is_dir() and (caches.pch / key(3, 24)).is_dir()


def test_unknown_kinds_are_refused_and_nothing_is_cleared(caches, capsys):
    with pytest.raises(
        UnknownCacheKind, match=r"unknown cache kind 'bogus': known kinds are build, pch, tilelang, triton"
    ):
        cache_clear(["build", "bogus"], caches)
    assert info(caches)["build"]["entries"] == 2
    assert main_cache(["clear", "bogus"], caches) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "known kinds are build, pch, tilelang, triton, profiles, baselines, llm" in err
    assert main_cache(["frobnicate"], caches) == 2
    assert info(caches)["build"]["entries"] == 2


def test_evict_lru_removes_the_least_recently_used_first(tmp_path):
    build = tmp_path / "build"
    sizes = {}
    for i in range(6):  # entry i was last used (6 - i) hours ago
        write(build / key(i) / "m.so", 1000)
        age(build / key(i), (6 - i) * 3600)
        sizes[key(i)] = 1000
    write(build / "triton-own" / key(9, 16) / "k.cubin", 1000)
    age(build / "triton-own" / key(9, 16), 3.5 * 3600)  # between entries 2 and 3
    os.utime(build / key(0))  # the oldest, used again just now
    assert evict_lru(build, 0) == 0  # no limit
    freed = evict_lru(build, 3500)
    assert freed == 4000
    left = sorted(p.name for p in build.iterdir() if len(p.name) == 48)
    assert left == sorted([key(0), key(4), key(5)])  # key(0): recently used; 4 and 5: the newest
    assert not (build / "triton-own" / key(9, 16)).exists()
    assert evict_lru(build, 3500) == 0  # fits now


def test_evict_lru_never_takes_an_entry_in_use(tmp_path):
    build = tmp_path / "build"
    for i in range(3):
        write(build / key(i) / "m.so", 1000)
        age(build / key(i), 3600 * (3 - i))
    with open(write(build / "locks" / f"{key(0)}.lock", 0), "a+") as held:  # being built or read
        fcntl.flock(held, fcntl.LOCK_EX)
        assert evict_lru(build, 500) == 2000
    assert [p.name for p in build.iterdir() if len(p.name) == 48] == [key(0)]
    with open(build / "locks" / "evict.lock", "a+") as busy:  # another process is evicting
        fcntl.flock(busy, fcntl.LOCK_EX)
        assert evict_lru(build, 1) == 0
    assert (build / key(0)).exists()


def test_a_cache_hit_touches_its_entry_and_a_new_build_evicts(tmp_path, monkeypatch):
    from cudaforge.eval.extensions import BuildRecord, BuildRecorder, BuildSettings, Hooks

    build = tmp_path / "build"
    for i in range(3):
        write(build / key(i) / "plain" / "m.so", 2000)
        write(build / key(i) / "build.json", 0).write_text(
            '{"status": "built", "variant": "plain", "measures": [], "fallbacks": [], "log": "", '
            '"log_trimmed": "", "directory": "plain"}'
        )
        age(build / key(i), 3600 * (3 - i))
    hooks = Hooks(BuildSettings(cache_dir=str(build), max_cache_gb=5000 / GB), BuildRecorder())

    def fake_build(spec, k, module_name):
        write(build / k / "plain" / f"{module_name}.so", 2000)
        return {
            "status": "built",
            "variant": "plain",
            "measures": [],
            "fallbacks": [],
            "log": "",
            "log_trimmed": "",
            "directory": "plain",
        }

    monkeypatch.setattr(hooks, "_build", fake_build)

    def record():
        return BuildRecord(name="m", module_name="m", key="", status="failed", cached=True, seconds=0.0)

    hooks.resolve(None, key(0), "m", record())  # a hit on the oldest: now the most recently used
    assert time.time() - (build / key(0)).stat().st_mtime < 5
    new = record()
    hooks.resolve(None, key(8), "m", new)  # a new build: 8000 bytes over a 5000-byte limit
    assert new.cached is False
    left = sorted(p.name for p in build.iterdir() if len(p.name) == 48)
    assert left == sorted([key(0), key(8)])


def test_paths_from_a_config_and_the_command(tmp_path):
    cfg = {
        "eval": {"build_cache_dir": str(tmp_path / "b"), "build_cache_max_gb": 1.5},
        "profile": {"cache_dir": str(tmp_path / "p")},
        "llm_cache": {"path": None},
    }
    kinds = {k.name: k for k in cache_kinds(cfg)}
    assert kinds["build"].path == (tmp_path / "b").resolve() and kinds["profiles"].path == (tmp_path / "p").resolve()
    assert kinds["llm"].path is None and kinds["llm"].entries() == []
    write(tmp_path / "b" / key(1) / "m.so", 2048)
    age(tmp_path / "b" / key(1), 2 * IN_USE_S)
    out = io.StringIO()
    assert main_cache(["info", "eval.timing_trials=3"], cfg, out=out) == 0
    table = out.getvalue()
    assert "2.0 KB" in table and str((tmp_path / "b").resolve()) in table and "1.5 GB" in table
    out = io.StringIO()
    assert main_cache(["clear"], cfg, out=out) == 0  # no kinds: all but llm
    assert "freed     2.0 KB (1 removed)" in out.getvalue() and "llm" not in out.getvalue()
    assert not (tmp_path / "b" / key(1)).exists()


def test_the_evaluator_checks_the_limit():
    from cudaforge.eval.evaluator import Evaluator

    with pytest.raises(ValueError, match="build_cache_max_gb"):
        Evaluator({"device": "cpu", "build_cache_max_gb": -1})
    settings = Evaluator({"device": "cpu", "build_cache_max_gb": 2.5, "target_arch": "9.0"}).build_settings()
    assert settings.max_cache_gb == 2.5


def test_the_command_takes_its_settings_as_overrides(tmp_path, capsys):
    build = tmp_path / "b"
    write(build / key(1) / "m.so", 3 << 20)
    age(build / key(1), 2 * IN_USE_S)
    settings = [
        f"eval.build_cache_dir={build}",
        "eval.build_cache_max_gb=0",
        f"profile.cache_dir={tmp_path / 'p'}",
        f"llm_cache.path={tmp_path / 'r.sqlite'}",
    ]
    assert main_cache(["info", *settings]) == 0
    table = capsys.readouterr().out
    assert "3.0 MB" in table and str(build.resolve()) in table and str(tmp_path / "r.sqlite") in table
    assert "eval.build_cache_max_gb): none" in table
    assert main_cache(["info", "eval.timing_trials=3"]) == 2
    assert "cannot be set here" in capsys.readouterr().err
    assert main_cache(["clear", "build", f"eval.build_cache_dir={build}"]) == 0
    assert not (build / key(1)).exists() and "3.0 MB" in capsys.readouterr().out
    assert main_cache(["--help"]) == 0 and "usage: cudaforge cache" in capsys.readouterr().out


def test_every_kept_jit_cache_is_a_kind_the_cache_command_manages():
    from cudaforge import languages
    from cudaforge.caches import KIND_NAMES

    kept = [lang.jit_cache for lang in languages.jit_caches()]
    assert kept == ["tilelang", "triton"] and set(kept) <= set(KIND_NAMES)
