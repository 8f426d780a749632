"""The one atomic writer: a file replaced whole, never seen half-written (stdlib only).

Every store of the package writes through :func:`write_atomic`: the run directory (``track/store.py``), the
profile cache, the build cache's manifests and markers, the torch.compile pairs, merged task packs, and a child
process's payload and result (``isolation.py``, ``child.py``).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, make_parents: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it, renamed over ``path``: a reader sees the old
    content or the new, never a part. The temporary file is created new (``O_EXCL``, never through a link) under a
    name no one can guess, so writers in threads and processes never share one and nothing planted at that name
    is written through; it is removed if the write fails. The file's mode is the usual one (0666 less the umask)."""
    target = Path(path)
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
