"""The run directory: files that are the source of truth of a run.

    <run dir>/
      .hydra/config.yaml        the resolved config (Hydra writes it)
      results.jsonl             one TaskResult per finished task
      ledger.jsonl              one row per LLM call
      llm_cache.sqlite          the response cache (record / replay)
      checkpoints.sqlite        LangGraph checkpoints (resume)
      problem_set.json          which problems were run: version (a git commit or hashes), digest, each task's
                                source hash (cudaforge/tasks/identity.py); a resume on another problem set
                                appends it under changed_on_resume
      tasks/<task>/task.json    the task, with its reference's source_hash
      tasks/<task>/candidates/<hash>.py, eval_<hash>.json, profile_<hash>.json
      tasks/<task>/round_NN/    candidate.py, coder.json (prompt, replies), eval.json, profile.json, judge.json
      .run.lock                 held (flock) by the process that runs here: a second run into the directory is refused

A rescored run (``cudaforge rescore``, ``cudaforge/run/rescore.py``) is a run directory with two more files:

      rescore.json              its source run, the protocol, what was rescored
      rescored.jsonl            one row per kernel: the verdict before and after, what changed it

Writes are atomic (temp file + rename), so a killed run never leaves a half-written file.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from cudaforge.tasks.identity import PROBLEM_SET_FILE, read_problem_set
from cudaforge.types import TaskResult


RESULTS_FILE = "results.jsonl"
"""One TaskResult per finished task: what makes a folder a run directory."""
LEDGER_FILE = "ledger.jsonl"
"""One row per LLM call."""
TASKS_DIR = "tasks"
"""The folder of the tasks' folders (``TaskStore``)."""
TASK_FILE = "task.json"
"""A task's folder: the task, with its reference's source hash."""
CANDIDATE_FILE = "candidate.py"
"""A round's folder: the Coder's candidate."""
EVAL_FILE = "eval.json"
"""A round's folder: its EvalResult."""
PROFILE_FILE = "profile.json"
"""A round's folder: its profile record."""
RESCORE_FILE = "rescore.json"
"""A rescored run's record of its source run and protocol."""
RESCORED_FILE = "rescored.jsonl"
"""A rescored run's rows, one per kernel."""


def task_slug(task_id: str) -> str:
    """A task id as one folder name: ``tiny/level1/1_ReLU`` -> ``tiny__level1__1_ReLU``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", task_id.replace("/", "__"))


def round_folder(number: int) -> str:
    """A round's folder name in its task's folder: ``round_01``."""
    return f"round_{number:02d}"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(text)
    os.replace(tmp, path)


class TaskStore:
    """One task's folder in the run directory."""

    def __init__(self, run_dir: str | Path, task_id: str):
        self.root = Path(run_dir) / TASKS_DIR / task_slug(task_id)

    def _path(self, round: int | None, name: str) -> Path:
        return self.root / name if round is None else self.root / round_folder(round) / name

    def write_text(self, round: int | None, name: str, text: str) -> str:
        """Write a text artifact (``round`` None: at the task level); returns its path."""
        path = self._path(round, name)
        _atomic_write(path, text)
        return str(path)

    def write_json(self, round: int | None, name: str, data: Any) -> str:
        """Write a JSON artifact; returns its path."""
        return self.write_text(round, name, json.dumps(data, indent=1, sort_keys=True))

    def read_text(self, round: int | None, name: str) -> str:
        """Read a text artifact (FileNotFoundError when absent)."""
        return self._path(round, name).read_text()

    def read_json(self, round: int | None, name: str) -> Any:
        """Read a JSON artifact (FileNotFoundError when absent)."""
        return json.loads(self.read_text(round, name))

    def save_candidate(self, digest: str, source: str) -> str:
        """Keep a candidate source by its hash."""
        return self.write_text(None, f"candidates/{digest}.py", source)

    def candidate(self, digest: str) -> str:
        """A candidate source by its hash."""
        return self.read_text(None, f"candidates/{digest}.py")


class RunDirBusy(RuntimeError):
    """Another process runs in this run directory (``RunStore.claim``)."""


QUARANTINE_FILE = "results.quarantine.jsonl"
"""Where lines of ``results.jsonl`` that are not results are moved (``RunStore.quarantine``)."""
_CLAIMS: dict[str, Any] = {}
"""The run directories this process has claimed: their lock files, held open (and locked) until it exits."""


class RunStore:
    """The run directory as a whole."""

    def __init__(self, run_dir: str | Path):
        self.root = Path(run_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def claim(self) -> None:
        """Take the run directory for this process, for as long as it lives: a second ``cudaforge run`` into the
        same directory would run (and pay for) every task a second time. ``RunDirBusy`` names the holder. This
        process may claim a directory again (a resume in the same process)."""
        import fcntl

        path = self.root / ".run.lock"
        key = str(path.resolve())
        if key in _CLAIMS:
            return
        handle = path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise RunDirBusy(f"{self.root} is in use by {holder}: wait for it to finish (or stop it), or give this "
                             "run another hydra.run.dir") from None  # fmt: skip
        handle.seek(0)
        handle.truncate()
        handle.write(f"cudaforge run (pid {os.getpid()})\n")
        handle.flush()
        _CLAIMS[key] = handle

    def release(self) -> None:
        """Give back a directory this process claimed (a long-lived worker that ran one task in it)."""
        import fcntl

        handle = _CLAIMS.pop(str((self.root / ".run.lock").resolve()), None)
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    @property
    def results_path(self) -> Path:
        """``results.jsonl``."""
        return self.root / RESULTS_FILE

    def problem_set(self) -> dict[str, Any] | None:
        """The recorded ``problem_set.json`` (None when the run has none yet, or was made before it existed)."""
        return read_problem_set(self.root)

    def write_problem_set(self, record: dict[str, Any]) -> None:
        """Write ``problem_set.json`` (atomically)."""
        _atomic_write(self.root / PROBLEM_SET_FILE, json.dumps(record, indent=1, sort_keys=True))

    def task(self, task_id: str) -> TaskStore:
        """The store of one task."""
        return TaskStore(self.root, task_id)

    def append_result(self, result: TaskResult) -> None:
        """Append one finished task's result (one line, flushed). A line a crash left torn is ended first, so the
        new result never joins it (it would be unreadable, and lost, with it)."""
        with self._lock, self.results_path.open("a+b") as f:
            f.seek(0, os.SEEK_END)
            if f.tell():
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
            f.write((result.to_json() + "\n").encode())
            f.flush()
            os.fsync(f.fileno())

    def quarantine(self) -> list[str]:
        """Move the lines of ``results.jsonl`` that are not task results (torn by a crash, bytes that are not UTF-8,
        not a result's JSON) to ``results.quarantine.jsonl``, keeping the good ones in order; one warning per line
        moved, naming the file and the line. A run calls it before its first task, holding the directory."""
        if not self.results_path.exists():
            return []
        good, bad, warnings = [], [], []
        for number, line in enumerate(self.results_path.read_bytes().splitlines(), 1):
            if not line.strip():
                continue
            try:
                TaskResult.from_json(line.decode("utf-8"))
                good.append(line)
            except (UnicodeDecodeError, json.JSONDecodeError, TypeError, ValueError, KeyError) as exc:
                bad.append(line)
                warnings.append(f"{self.results_path} line {number} is not a task result ({type(exc).__name__}); "
                                f"moved to {QUARANTINE_FILE} (its task, if any, runs again)")  # fmt: skip
        if bad:
            with (self.root / QUARANTINE_FILE).open("ab") as f:
                f.write(b"".join(line + b"\n" for line in bad))
                f.flush()
                os.fsync(f.fileno())
            tmp = self.results_path.with_name(self.results_path.name + ".quarantine-tmp")
            with tmp.open("wb") as f:
                f.write(b"".join(line + b"\n" for line in good))
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(self.results_path)
        return warnings

    def results(self) -> list[TaskResult]:
        """The finished tasks' results: a line torn by a crash, or with bytes that are not UTF-8, is skipped."""
        if not self.results_path.exists():
            return []
        out = []
        for line in self.results_path.read_bytes().splitlines():
            try:
                out.append(TaskResult.from_json(line.decode("utf-8")))
            except (UnicodeDecodeError, json.JSONDecodeError, TypeError, ValueError, KeyError):
                continue
        return out
