"""The child side of ``cudaforge.proc.isolation``: ``python -m cudaforge.proc.child ENTRY WORKDIR [PREPARE]``.

Reads ``WORKDIR/payload.json``, calls ``ENTRY(payload, progress)`` where ``progress(phase)``
announces a new phase to the parent, and writes the returned dict to ``WORKDIR/result.json``
(or ``{"__error__": traceback}``). The result is written atomically, so a half-written file
never reads as a result.

With ``PREPARE`` (a standby, ``cudaforge.proc.isolation.Standby``) the child first calls
``PREPARE(progress, claimed)``, reports phase ``ready``, and waits for one line on stdin, the
parent's go-ahead, before it reads the payload. End-of-file instead (the parent discarded the
standby or died) ends the child without a result, and removes ``WORKDIR``, as the child does whenever its
parent is gone (nobody is left to read it). ``claimed()`` is True once the go-ahead is
readable, so a preparation that waits (for a GPU's lock, say) can give up. A preparation that
raises is not fatal: the entry still runs, and does that work itself.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cudaforge.proc.files import write_atomic


def _resolve(name: str) -> Callable[..., Any]:
    module_name, func_name = name.split(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(module_name), func_name)
    return fn


def _claimed() -> bool:
    return bool(select.select([sys.stdin], [], [], 0)[0])


def _standby(prepare: str, progress: Callable[[str], None]) -> bool:
    """Prepare, then wait for the go-ahead; False when the parent sent end-of-file instead."""
    try:
        _resolve(prepare)(progress, _claimed)
    except Exception:  # noqa: BLE001 - the entry redoes what preparation could not
        sys.stderr.write("standby preparation failed (the entry will do it):\n" + traceback.format_exc())
    progress("ready")
    go = sys.stdin.readline()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the candidate's code finds nothing on stdin
    os.close(devnull)
    return bool(go.strip())


def _orphaned(workdir: Path) -> None:
    """Remove the working directory (and the folders noted in it): its parent is gone, or discarded this
    standby, and reads it no more."""
    from cudaforge.proc.isolation import remove_workdir

    remove_workdir(workdir)


def _watch_parent(workdir: Path) -> None:
    """End this process group when the parent that started it is gone (killed with -9, say): nothing it started
    may outlive it, nor its working directory. A thread, so it holds whatever the entry does; sandboxes started
    from here die with us."""
    try:
        parent = int(os.environ.get("CUDAFORGE_PARENT_PID", "0"))
    except ValueError:
        return
    if parent <= 0:
        return

    def watch() -> None:
        while True:
            time.sleep(0.5)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                try:
                    _orphaned(workdir)
                    os.killpg(0, signal.SIGKILL)
                finally:
                    os._exit(1)
            except PermissionError:
                pass

    threading.Thread(target=watch, daemon=True, name="cudaforge-parent-watch").start()


def main() -> None:
    """Run the entry named on the command line."""
    entry, workdir = sys.argv[1], Path(sys.argv[2])
    _watch_parent(workdir)
    progress_file = (workdir / "progress.jsonl").open("a", buffering=1)

    def progress(phase: str) -> None:
        progress_file.write(json.dumps({"phase": phase}) + "\n")
        progress_file.flush()

    if len(sys.argv) > 3:
        if not _standby(sys.argv[3], progress):
            _orphaned(workdir)
            os._exit(0)
    elif os.environ.get("CUDAFORGE_CHILD_EARLY"):  # e.g. start a sandboxed worker before the entry imports torch
        try:
            _resolve(os.environ["CUDAFORGE_CHILD_EARLY"])(str(workdir))
        except Exception:  # noqa: BLE001 - the entry does that work itself
            sys.stderr.write("early start failed (the entry will do it):\n" + traceback.format_exc())
    try:
        func = _resolve(entry)
        result = func(json.loads((workdir / "payload.json").read_text()), progress)
        text = json.dumps(result)
    except BaseException:  # noqa: BLE001 - everything the entry raises is reported, not re-raised
        text = json.dumps({"__error__": traceback.format_exc()})
    sys.stdout.flush()  # before the result: a trusted child's parent may kill it once the result is there
    sys.stderr.flush()
    write_atomic(workdir / "result.json", text, make_parents=False)
    (workdir / "result.delivered").touch()  # isolation.RESULT_DELIVERED: the parent may take the result now
    # Skip interpreter teardown: a candidate's broken CUDA state must not turn a result into a crash.
    os._exit(0)


if __name__ == "__main__":
    main()
