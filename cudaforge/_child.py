"""The child side of ``cudaforge.isolation.run_isolated``: ``python -m cudaforge._child ENTRY WORKDIR``.

Reads ``WORKDIR/payload.json``, calls ``ENTRY(payload, progress)`` where ``progress(phase)``
announces a new phase to the parent, and writes the returned dict to ``WORKDIR/result.json``
(or ``{"__error__": traceback}``). The result is written atomically, so a half-written file
never reads as a result.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from pathlib import Path


def main() -> None:
    """Run the entry named on the command line."""
    entry, workdir = sys.argv[1], Path(sys.argv[2])
    progress_file = (workdir / "progress.jsonl").open("a", buffering=1)

    def progress(phase: str) -> None:
        progress_file.write(json.dumps({"phase": phase}) + "\n")
        progress_file.flush()

    try:
        module_name, func_name = entry.split(":")
        func = getattr(importlib.import_module(module_name), func_name)
        result = func(json.loads((workdir / "payload.json").read_text()), progress)
        text = json.dumps(result)
    except BaseException:  # noqa: BLE001 - everything the entry raises is reported, not re-raised
        text = json.dumps({"__error__": traceback.format_exc()})
    tmp = workdir / "result.json.tmp"
    tmp.write_text(text)
    os.replace(tmp, workdir / "result.json")
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a candidate's broken CUDA state must not turn a result into a crash.
    os._exit(0)


if __name__ == "__main__":
    main()
