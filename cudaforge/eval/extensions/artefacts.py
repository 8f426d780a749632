"""The files of a build folder, which a sandboxed compiler may have written: read and written by the trusted side
never through a link and bounded (:func:`open_artefact`, :func:`write_into`, :func:`read_bounded` for a compiler's
output, :func:`ninja_steps`), and the lock of a cache entry (:func:`file_lock`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``fcntl`` lock: released by the kernel if the holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


LOG_HEAD = 512 << 10
LOG_TAIL = 512 << 10
"""A compiler's output is kept whole up to ``LOG_HEAD + LOG_TAIL`` bytes; past that, its head and tail (errors come
first; ninja's summary last), read as it comes (megabytes of warnings are never held)."""
LIBRARY_MAX = 256 << 20
"""The largest extension library the trusted side copies out of a build folder (and keeps in the cache)."""
PCH_MAX = 4 << 30
"""The largest precompiled header the trusted side keeps."""


def read_bounded(stream: Any, head: int = LOG_HEAD, tail: int = LOG_TAIL) -> str:
    """Everything ``stream`` (a binary pipe) gives until it closes, keeping at most ``head`` bytes of its start and
    ``tail`` of its end, with a line saying how much was left out between them."""
    first = bytearray()
    last = bytearray()
    dropped = 0
    while True:
        chunk = stream.read(1 << 16)
        if not chunk:
            break
        room = head - len(first)
        if room > 0:
            first += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            last += chunk
            if len(last) > tail:
                dropped += len(last) - tail
                del last[: len(last) - tail]
    text = first.decode(errors="replace")
    if dropped:
        text += f"\n[... {dropped} bytes of compiler output left out ...]\n"
    return text + last.decode(errors="replace")


def write_into(directory: Path, name: str, text: str) -> None:
    """Write ``text`` as the file ``name`` of ``directory``, a folder a sandbox may have written: never through a
    link, and only as a regular file of ours (anything else there is removed first). A file that already holds
    ``text`` is left as it is (its mtime kept: ninja rebuilds only what changed)."""
    data = text.encode()
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        with contextlib.suppress(OSError):
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                if stat.S_ISREG(info.st_mode) and info.st_size == len(data) and handle.read(len(data) + 1) == data:
                    return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dfd)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    finally:
        os.close(dfd)


def open_artefact(path: Path, limit: int) -> int:
    """A descriptor of a file a sandbox made (an extension library, a precompiled header), opened without following
    a link; OSError unless it is a regular file of at most ``limit`` bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        raise OSError(f"{path.name} is not a regular file of at most {limit >> 20} MiB")
    return fd


def ninja_steps(directory: Path) -> dict[str, float]:
    """Seconds per target of the last ninja run in ``directory`` (its ``.ninja_log``: start and end in ms). The
    folder is the sandboxed build's to write: only its first 64 KiB are read, and a line that does not parse is
    skipped (the figures only inform; no verdict reads them)."""
    steps: dict[str, float] = {}
    with contextlib.suppress(OSError), os.fdopen(open_artefact(directory / ".ninja_log", 1 << 30), "rb") as handle:
        for line in handle.read(1 << 16).decode(errors="replace").splitlines()[:256]:
            parts = line.split("\t")
            if len(parts) >= 4 and parts[0].isdigit() and parts[1].isdigit():
                steps[parts[3]] = round((int(parts[1]) - int(parts[0])) / 1000, 2)
    return steps
