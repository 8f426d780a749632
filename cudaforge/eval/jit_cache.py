"""On-disk JIT caches of sandboxed workers (Triton's, TileLang's): what goes into a worker's private caches, and
what comes back.

Every worker has its own cache of each JIT language in its scratch directory (``<scratch>/<language.jit_cache>``,
named by ``TRITON_CACHE_DIR``, ``TILELANG_CACHE_DIR``), so no candidate sees another's files. Two things make a
worker's first launch cheap without sharing anything a candidate wrote:

* **Triton driver stubs the trusted side built** (``seed_trusted_stubs``): the verifier's own Triton cache
  (``<build cache>/triton-own/trusted``, written only by trusted processes) holds the C stubs Triton compiles with
  the host compiler on first use (``cuda_utils``, and per argument-kind signature a ``__triton_launcher``: 0.2-1.3 s
  of gcc each on an H200 node); their folders are copied into each new worker's cache.
* **A source's own kernels** (``keep_own_jit_cache`` after an evaluation or the CPU pool's compile ahead,
  ``seed_own_jit_cache`` before the next evaluation of the same source), per language in
  ``<build cache>/<jit_cache>-own/<source hash>`` (:func:`own_store`): regular files only, links not followed,
  capped. Triton's group files (``__grp__*.json``) name their members by absolute path, and a group whose paths do
  not exist is a silent cache miss (a full recompile): the kept copy carries a placeholder instead of the old
  scratch path, and the seeded copy the new one. TileLang's entries name no path.

Stdlib only: the parent and the sandbox launcher import nothing heavy.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

OWN_CACHE_MAX_BYTES = 64 << 20
OWN_CACHE_MAX_FILES = 4096
OWN_CACHE_MAX_ENTRIES = 4 * OWN_CACHE_MAX_FILES
"""Directory entries of any kind (folders, files, links) read from a worker's cache, in all: a tree of empty
folders costs a read as much as files do."""
TRUSTED_DIR = "trusted"
"""The verifier's own Triton cache, under ``<build cache>/triton-own/``."""
PATH_TOKEN = b"@@CUDAFORGE_TRITON_CACHE@@"
"""Stands for the worker's cache directory in a kept group file."""
STUB_PREFIXES = ("cuda_utils.", "__triton_launcher.")
"""The files of Triton's host-compiled stubs (one stub per cache folder)."""
JIT_FILE_MAX = 64 << 20
"""The largest single file kept from a worker's JIT cache."""
JSON_FILE_MAX = 1 << 20
"""Bytes of a JIT cache's JSON file parsed to check it (Triton's metadata and group files are kilobytes): a file
the candidate wrote is parsed on the trusted side, and a parse builds about 25 times its size in objects."""
KINDS = {
    ".so": "elf",
    ".cubin": "elf",
    ".hsaco": "elf",
    ".json": "json",
    ".pkl": "pickle",
    ".ptx": "ptx",
    ".ttir": "mlir",
    ".ttgir": "mlir",
    ".llir": "llvm",
}
"""What a kept file's content must be, by its name's ending (any other kept ending: UTF-8 text)."""
_TEXT_MARKS = {"ptx": (".version", ".target"), "mlir": ("module",), "llvm": ("define",)}
"""Words a text artefact of that kind holds (PTX names its version and target; MLIR has a module; LLVM IR defines)."""


def is_kernel_file(name: str, data: bytes, keep: tuple[str, ...]) -> bool:
    """Whether a file of a worker's JIT cache is one of the language's own artefacts (``KernelLanguage.jit_keep``):
    its name ends with one of ``keep``, it is at most :data:`JIT_FILE_MAX` bytes, and its content is of the kind
    that ending promises. A counter, a note or a module a candidate left there is not."""
    suffix = next((s for s in keep if name.endswith(s)), None)
    if suffix is None or len(data) > JIT_FILE_MAX:
        return False
    kind = KINDS.get(suffix, "text")
    if kind == "elf":
        return data[:4] == b"\x7fELF"
    if kind == "pickle":
        return data[:1] == b"\x80"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if kind == "json":
        import json

        if len(data) > JSON_FILE_MAX:  # a JIT's metadata is kilobytes; parsing costs ~25x the bytes in memory
            return False
        try:
            return isinstance(json.loads(text), dict)
        except (ValueError, RecursionError, MemoryError):  # nesting deep enough to overflow the parser is no metadata
            return False
    return all(mark in text for mark in _TEXT_MARKS.get(kind, ()))


def _regular_files(root: Path) -> list[Path] | None:
    """Every regular file under ``root`` (links not followed); None past the caps."""
    files, total = [], 0
    for folder, _dirs, names in os.walk(root, followlinks=False):
        for name in names:
            path = Path(folder) / name
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            total += info.st_size
            files.append(path)
            if total > OWN_CACHE_MAX_BYTES or len(files) > OWN_CACHE_MAX_FILES:
                return None
    return files


def _copy(src: Path, dst: Path, replace: tuple[bytes, bytes] | None = None) -> None:
    """Copy one regular file without following a link at ``src``; in group files, ``replace`` = (old, new). A file
    already at ``dst`` is left alone: a worker may have loaded it (a driver stub it built while warming up), and
    rewriting a loaded library in place crashes the process that mapped it (SIGSEGV, seen on an H200)."""
    if os.path.lexists(dst):
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        data = f.read(OWN_CACHE_MAX_BYTES + 1)
    if replace is not None and src.name.startswith("__grp__") and src.suffix == ".json":
        data = data.replace(*replace)
    with dst.open("xb") as out:
        out.write(data)


def _give_to_owner(scratch_cache: Path) -> None:
    """Make ``scratch_cache`` belong to its scratch directory's owner (the sandbox uid), links not followed: Triton
    adds its new kernels there."""
    owner = scratch_cache.parent.stat()
    if (owner.st_uid, owner.st_gid) == (os.geteuid(), os.getegid()):
        return
    for folder, dirs, names in os.walk(scratch_cache, followlinks=False):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + names)]:
            os.chown(name, owner.st_uid, owner.st_gid, follow_symlinks=False)


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _read_tree(root: Path) -> list[tuple[Path, bytes]] | None:
    """Every regular file under ``root`` with its bytes, read through directory descriptors opened without following
    a link at any level (a folder swapped for a link while this runs is skipped, never followed), at most 16 levels
    deep; None past the caps (``OWN_CACHE_MAX_ENTRIES`` entries seen in all, files, bytes)."""
    import itertools

    found: list[tuple[Path, bytes]] = []
    total = seen = 0

    def walk(dir_fd: int, rel: Path, depth: int) -> bool:
        nonlocal total, seen
        with os.scandir(dir_fd) as entries:
            names = [
                (e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False))
                for e in itertools.islice(entries, OWN_CACHE_MAX_ENTRIES - seen + 1)
            ]
        seen += len(names)
        if seen > OWN_CACHE_MAX_ENTRIES:
            return False
        for name, is_dir, is_file in names:
            if is_dir and depth < 16:
                try:
                    fd = os.open(name, _DIR, dir_fd=dir_fd)
                except OSError:
                    continue
                try:
                    if not walk(fd, rel / name, depth + 1):
                        return False
                finally:
                    os.close(fd)
            elif is_file:
                try:
                    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
                except OSError:
                    continue
                with os.fdopen(fd, "rb") as f:
                    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                        continue
                    data = f.read(OWN_CACHE_MAX_BYTES + 1 - total)
                total += len(data)
                found.append((rel / name, data))
                if total > OWN_CACHE_MAX_BYTES or len(found) > OWN_CACHE_MAX_FILES:
                    return False
        return True

    try:
        root_fd = os.open(root, _DIR)
    except OSError:
        return []
    try:
        return found if walk(root_fd, Path(), 0) else None
    finally:
        os.close(root_fd)


def keep_own_jit_cache(scratch_cache: Path, store: Path, keep: tuple[str, ...] = ()) -> None:
    """Keep what a JIT language compiled in a worker (Triton's kernels, launchers and driver stubs; TileLang's
    kernels) for the next evaluation of the same source. The files are the candidate's own output: they are only
    ever given back to a worker of the same source (``seed_own_jit_cache``), never to another candidate and never
    loaded by the trusted side. Call it once the sandbox was killed; the files are read through descriptors that
    follow no link at any level (so even a process of the sandbox that outlived the kill by a moment cannot redirect
    a read), only regular files, capped in number and size. The first keep of a source renames a temporary
    directory into place; a later one (the GPU run after the CPU pool's, or after an earlier evaluation) adds the
    files the store lacks, each written aside and renamed, so a worker being seeded meanwhile sees whole files, up
    to the same caps in all. Group files get ``PATH_TOKEN`` in place of the worker's cache path. Only the language's
    own artefacts are kept (``keep``: its ``jit_keep``; :func:`is_kernel_file`); empty ``keep`` keeps nothing."""
    if scratch_cache.is_symlink() or not scratch_cache.is_dir():
        return
    try:
        files = [(rel, data) for rel, data in _read_tree(scratch_cache) or [] if is_kernel_file(rel.name, data, keep)]
        if not files:
            return
        old = os.fsencode(scratch_cache)

        def content(rel: Path, data: bytes) -> bytes:
            return data.replace(old, PATH_TOKEN) if rel.name.startswith("__grp__") and rel.suffix == ".json" else data

        store.parent.mkdir(parents=True, exist_ok=True)
        if not store.exists():
            staging = Path(tempfile.mkdtemp(prefix=f".{store.name}-", dir=store.parent))
            for rel, data in files:
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                (staging / rel).write_bytes(content(rel, data))
            try:
                staging.rename(store)
                return
            except OSError:  # another evaluation of the same source kept its own first: add to it instead
                shutil.rmtree(staging, ignore_errors=True)
        kept = _regular_files(store)  # what the store holds already counts against the same caps
        if kept is None:
            return
        count, total = len(kept), sum(p.stat().st_size for p in kept)
        for rel, data in files:
            target = store / rel
            if os.path.lexists(target):
                continue
            count, total = count + 1, total + len(data)
            if count > OWN_CACHE_MAX_FILES or total > OWN_CACHE_MAX_BYTES:
                return  # repeated evaluations of one source cannot grow its store past one worker's caps
            target.parent.mkdir(parents=True, exist_ok=True)
            aside = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            aside.write_bytes(content(rel, data))
            os.replace(aside, target)
    except Exception:  # noqa: BLE001 - keeping is an optimisation: whatever the files are, it never raises
        return


def seed_own_jit_cache(store: Path, scratch_cache: Path) -> None:
    """Copy a source's kept JIT cache into its new worker's cache before the source is loaded (until then the
    worker has run only our code, so what its cache holds is ours), group files pointed at the new path. See
    ``keep_own_jit_cache``."""
    if not store.is_dir() or scratch_cache.is_symlink():
        return
    try:
        for path in _regular_files(store) or []:
            _copy(path, scratch_cache / path.relative_to(store), (PATH_TOKEN, os.fsencode(scratch_cache)))
        _give_to_owner(scratch_cache)
    except (OSError, shutil.Error):
        shutil.rmtree(scratch_cache, ignore_errors=True)  # a cache the worker cannot write to breaks the language


def own_store(cache_root: str | os.PathLike[str], jit_cache: str, digest: str) -> Path:
    """Where a source's kept ``jit_cache`` (a language's folder name: ``triton``, ``tilelang``) lives."""
    return Path(cache_root) / f"{jit_cache}-own" / digest


def trusted_cache(build_cache: str | os.PathLike[str]) -> Path:
    """The verifier's own Triton cache (``TRITON_CACHE_DIR`` of the trusted side)."""
    return Path(build_cache) / "triton-own" / TRUSTED_DIR


def seed_worker_caches(scratch: str | os.PathLike[str]) -> int:
    """``seed_trusted_stubs`` for every language whose verifier-side cache seeds a worker's
    (``languages.trusted_stub_caches``: Triton's), from the cache this process's environment names into the
    worker's ``scratch``; returns the folders copied."""
    from cudaforge.languages import trusted_stub_caches

    return sum(
        seed_trusted_stubs(os.environ.get(lang.jit_cache_env), Path(scratch) / lang.jit_cache)
        for lang in trusted_stub_caches()
    )


def seed_trusted_stubs(trusted: str | os.PathLike[str] | None, scratch_cache: Path) -> int:
    """Copy the host-compiled stubs of the trusted side's Triton cache (folders holding only ``cuda_utils.*`` or
    ``__triton_launcher.*`` files, built by trusted processes) into a worker's cache, where it has none of them yet,
    so the worker's first launch compiles nothing with gcc. The folders of kernels are not copied. Returns how many
    folders were copied; never raises."""
    if not trusted or scratch_cache.is_symlink():
        return 0
    root, copied = Path(trusted), 0
    try:
        folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()] if root.is_dir() else []
        for folder in folders[:256]:
            files = [f for f in folder.iterdir()]
            if not files or not all(
                f.is_file() and not f.is_symlink() and f.name.startswith(STUB_PREFIXES) for f in files
            ):
                continue
            target = scratch_cache / folder.name
            if target.exists():
                continue
            for f in files:
                _copy(f, target / f.name)
            copied += 1
        if copied:
            _give_to_owner(scratch_cache)
    except OSError:
        return copied
    return copied


def count_kernels(cache: Path, marks: tuple[str, ...] = (".cubin", ".hsaco")) -> int:
    """How many compiled kernels a JIT cache holds: folders with a file whose name ends with one of ``marks`` (a
    language's ``jit_kernel_marks``: Triton's ``.cubin`` folders at the top, TileLang's ``device_kernel.cu`` ones
    three levels down, ``<version>/<platform>/kernels/<key>``), read through descriptors that follow no link, at
    most four levels and ``OWN_CACHE_MAX_ENTRIES`` entries in all: a count for the record, never a verdict (while the
    worker lives it may plant folders)."""
    import itertools

    budget = [OWN_CACHE_MAX_ENTRIES]  # entries read in all: a planted tree of folders costs no more than that

    def count(dir_fd: int, depth: int) -> int:
        with os.scandir(dir_fd) as entries:
            listed = [(e.name, e.is_dir(follow_symlinks=False)) for e in itertools.islice(entries, max(budget[0], 0))]
        budget[0] -= len(listed)
        if any(name.endswith(marks) and not is_dir for name, is_dir in listed):
            return 1
        found = 0
        for name in [name for name, is_dir in listed if is_dir] if depth < 4 and budget[0] > 0 else []:
            try:
                fd = os.open(name, _DIR, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                found += count(fd, depth + 1)
            except OSError:
                continue
            finally:
                os.close(fd)
        return found

    try:
        root_fd = os.open(cache, _DIR)
    except OSError:
        return 0
    try:
        with os.scandir(root_fd) as entries:
            top = [e.name for e in itertools.islice(entries, OWN_CACHE_MAX_FILES) if e.is_dir(follow_symlinks=False)]
        budget[0] -= len(top)
        total = 0
        for name in top:
            if budget[0] <= 0:
                break
            try:
                fd = os.open(name, _DIR, dir_fd=root_fd)
            except OSError:
                continue
            try:
                total += count(fd, 1)
            except OSError:
                continue
            finally:
                os.close(fd)
        return total
    except OSError:
        return 0
    finally:
        os.close(root_fd)
