"""The one atomic writer: a file replaced whole, never seen half-written (stdlib only).

Every store of the package writes through :func:`write_atomic`: the run directory (``track/store.py``), the
profile cache, the build cache's manifests and markers, the torch.compile pairs, merged task packs, and a child
process's payload and result (``isolation.py``, ``_child.py``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, make_parents: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it, renamed over ``path``: a reader sees the old
    content or the new, never a part. The temporary name holds the process and thread, so writers in threads of
    one process (parallel builds) and in several processes never share one; it is removed if the write fails."""
    target = Path(path)
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
