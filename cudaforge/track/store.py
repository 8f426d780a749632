"""The run directory: files that are the source of truth of a run.

    <run dir>/
      run.json                  the layout's schema version (``SCHEMA_VERSION``) and the cudaforge that wrote it; a run
                                made before it existed has none (schema 0: read the same way)
      .hydra/config.yaml        the resolved config (Hydra writes it); .hydra/hydra.yaml its config-group choices
      results.jsonl             one TaskResult per finished task
      ledger.jsonl              one row per LLM call
      llm_cache.sqlite          the response cache (record / replay)
      checkpoints.sqlite        LangGraph checkpoints (resume)
      not_run.jsonl             one row each time a task stopped for the infrastructure (the provider unreachable,
                                a GPU lost) with no result: a resume runs it again; reports list it, never score it
      problem_set.json          which problems were run: version (a git commit or hashes), digest, each task's
                                source hash (cudaforge/tasks/identity.py); a resume on another problem set
                                appends it under changed_on_resume
      tasks/<task>/task.json    the task, with its reference's source_hash
      tasks/<task>/internal_error.txt
                                the traceback of the last internal error that stopped the task (a bug of cudaforge,
                                not of its kernels; ``not_run.jsonl`` says so, reason ``internal_error``)
      tasks/<task>/candidates/<hash>.py, eval_<hash>.json, profile_<hash>.json
      tasks/<task>/round_NN/    candidate.py, coder.json (prompt, replies), eval.json, profile.json, judge.json
      tasks/<task>/tree.jsonl   a search strategy's tree: one node per line (its id is its round's number)
      .run.lock                 held (flock) by the process that runs here: a second run into the directory is refused

A rescored run (``cudaforge rescore``, ``cudaforge/run/rescore.py``) is a run directory with two more files:

      rescore.json              its source run, the protocol, what was rescored
      rescored.jsonl            one row per kernel: the verdict before and after, what changed it

Writes are atomic (temp file + rename), so a killed run never leaves a half-written file.

Every file name is defined here and nowhere else: ``RunStore`` and ``TaskStore`` write a run, ``RunDir`` and
``TaskDir`` read one (runner, report, teach, merge and the CLI go through them). A run directory written by a newer
schema than ``SCHEMA_VERSION`` is refused with one line (``RunDirTooNew``) rather than misread.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cudaforge.proc.files import write_atomic
from cudaforge.tasks.identity import PROBLEM_SET_FILE, read_problem_set  # noqa: F401 - a run directory's file
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
CODER_FILE = "coder.json"
"""A round's folder: the Coder's prompt, replies and source."""
JUDGE_FILE = "judge.json"
"""A round's folder: the Judge's verdict and feedback."""
TREE_FILE = "tree.jsonl"
"""A search's task folder: its tree, one JSON line per node (``cudaforge.search.engine`` rewrites it whole)."""
CANDIDATES_DIR = "candidates"
"""A task's folder: every source evaluated, by hash (``<hash>.py``)."""
RUN_FILE = "run.json"
"""The run directory's schema version and the cudaforge that wrote it."""
HYDRA_DIR = ".hydra"
"""Hydra's record of the run: ``config.yaml`` (the resolved config), ``hydra.yaml`` (its group choices)."""
CONFIG_FILE = f"{HYDRA_DIR}/config.yaml"
HYDRA_FILE = f"{HYDRA_DIR}/hydra.yaml"
LLM_CACHE_FILE = "llm_cache.sqlite"
"""The response cache (record / replay), unless ``llm_cache.path`` puts it elsewhere."""
CHECKPOINTS_FILE = "checkpoints.sqlite"
"""LangGraph checkpoints (resume)."""
INTERRUPTED_DIR = "interrupted"
"""Candidates whose evaluation died with the run (not run again on resume)."""
LOCK_FILE = ".run.lock"
SCHEMA_VERSION = 1
"""The layout this cudaforge writes and reads. 1: ``run.json`` added; the files of schema 0 unchanged."""
PLAN_FILE = "plan.json"
"""The run's plan (``cudaforge plan``)."""
MERGE_FILE = "merge.json"
"""A merged run's record of its shards (``cudaforge merge``)."""
RESCORE_FILE = "rescore.json"
"""A rescored run's record of its source run and protocol."""
RESCORED_FILE = "rescored.jsonl"
"""A rescored run's rows, one per kernel."""
NOT_RUN_FILE = "not_run.jsonl"
"""One line per time a task stopped for the infrastructure (the model's provider unreachable, a GPU lost) or for an
internal error of cudaforge's own code, not for its kernels: such a task has no result, a resume runs it again from
its last checkpoint, and reports list it."""
INTERNAL_ERROR_FILE = "internal_error.txt"
"""A task's folder: the traceback of the last internal error (an exception of cudaforge's own code, not of the
task's kernels or of the infrastructure) that stopped the task without a result."""
PROMPTS_FILE = "prompts.json"
"""Where the run's prompts came from, when they are not ours: the authors' checkout, its commit, the GPU key."""


def task_slug(task_id: str) -> str:
    """A task id as one folder name: ``tiny/level1/1_ReLU`` -> ``tiny__level1__1_ReLU``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", task_id.replace("/", "__"))


def round_folder(number: int) -> str:
    """A round's folder name in its task's folder: ``round_01``."""
    return f"round_{number:02d}"


class TaskStore:
    """One task's folder in the run directory."""

    def __init__(self, run_dir: str | Path, task_id: str):
        self.root = Path(run_dir) / TASKS_DIR / task_slug(task_id)

    def _path(self, round: int | None, name: str) -> Path:
        return self.root / name if round is None else self.root / round_folder(round) / name

    def write_text(self, round: int | None, name: str, text: str) -> str:
        """Write a text artifact (``round`` None: at the task level); returns its path."""
        path = self._path(round, name)
        write_atomic(path, text)
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
        return self.write_text(None, f"{CANDIDATES_DIR}/{digest}.py", source)

    def candidate(self, digest: str) -> str:
        """A candidate source by its hash."""
        return self.read_text(None, f"{CANDIDATES_DIR}/{digest}.py")


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

        path = self.root / LOCK_FILE
        key = str(path.resolve())
        if key in _CLAIMS:
            return
        while True:
            handle = path.open("a+")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                handle.close()
                raise RunDirBusy(
                    f"{self.root} is in use by {holder}: wait for it to finish (or stop it), or give "
                    "this run another hydra.run.dir"
                ) from None
            try:  # the holder removes the file as it lets go: a lock on a file no longer there is no claim
                if os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino:
                    break
            except FileNotFoundError:
                pass
            handle.close()
        handle.seek(0)
        handle.truncate()
        handle.write(f"cudaforge run (pid {os.getpid()})\n")
        handle.flush()
        if not _CLAIMS:
            atexit.register(_release_all)
        _CLAIMS[key] = handle

    def release(self) -> None:
        """Give back a directory this process claimed (a long-lived worker that ran one task in it); the lock file
        goes (a process that exits gives back what it claimed the same way)."""
        _release(str((self.root / LOCK_FILE).resolve()))

    @property
    def results_path(self) -> Path:
        """``results.jsonl``."""
        return self.root / RESULTS_FILE

    def problem_set(self) -> dict[str, Any] | None:
        """The recorded ``problem_set.json`` (None when the run has none yet, or was made before it existed)."""
        return read_problem_set(self.root)

    def write_schema(self) -> None:
        """Write ``run.json`` (schema version, cudaforge version) unless it is there; a directory of a newer schema
        is refused (``RunDirTooNew``) before ``run.json`` or anything of the run is written into it."""
        RunDir(self.root).schema()
        if not (self.root / RUN_FILE).exists():
            write_atomic(
                self.root / RUN_FILE, json.dumps({"schema": SCHEMA_VERSION, "cudaforge": _version()}, indent=1)
            )

    @property
    def ledger_path(self) -> Path:
        """``ledger.jsonl``."""
        return self.root / LEDGER_FILE

    def write_prompts(self, record: dict[str, Any]) -> None:
        """Write ``prompts.json`` (atomically)."""
        write_atomic(self.root / PROMPTS_FILE, json.dumps(record, indent=1, sort_keys=True))

    def prompts(self) -> dict[str, Any] | None:
        """``prompts.json`` (None when the run used our own templates or the paraphrase)."""
        try:
            prompts: dict[str, Any] = json.loads((self.root / PROMPTS_FILE).read_text())
            return prompts
        except (OSError, ValueError):
            return None

    def write_problem_set(self, record: dict[str, Any]) -> None:
        """Write ``problem_set.json`` (atomically)."""
        write_atomic(self.root / PROBLEM_SET_FILE, json.dumps(record, indent=1, sort_keys=True))

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

    def record_not_run(self, task_id: str, reason: str, message: str) -> None:
        """Append that ``task_id`` stopped for the infrastructure (``reason``: ``llm_unavailable``, ``gpu_unavailable``, ``sandbox_unavailable``)
        or for an internal error (``internal_error``) without a result; ``message`` is cut to 2000 characters."""
        row = {
            "task_id": task_id,
            "reason": reason,
            "message": message[:2000],
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        with self._lock, (self.root / NOT_RUN_FILE).open("a") as f:
            f.write(json.dumps(row) + "\n")
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
                warnings.append(
                    f"{self.results_path} line {number} is not a task result ({type(exc).__name__}); "
                    f"moved to {QUARANTINE_FILE} (its task, if any, runs again)"
                )
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
        return _read_results(self.results_path)


def _read_results(path: Path) -> list[TaskResult]:
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(TaskResult.from_json(line.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError, TypeError, ValueError, KeyError):
            continue
    return out


# --------------------------------------------------------------------------- reading


class RunDirTooNew(ValueError):
    """The run directory was written by a newer cudaforge, whose layout this one does not know."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cudaforge")
    except PackageNotFoundError:
        return "unknown"


def _json_or_none(path: Path) -> Any:
    try:
        return json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a ``.jsonl`` file, in order; none when absent. A line torn by a crash (or not an object)
    is skipped."""
    rows: list[dict[str, Any]] = []
    try:
        raw = path.read_bytes()
    except OSError:
        return rows
    for line in raw.decode(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def resolved(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its OmegaConf interpolations (``${coder.model}``) resolved; each value that cannot be resolved
    (a resolver this process lacks) stays as written."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if "${" not in str(data):
        return data
    try:
        return dict(OmegaConf.to_container(OmegaConf.create(data), resolve=True))  # type: ignore[arg-type]
    except (OmegaConfBaseException, ValueError, TypeError):
        pass
    node = OmegaConf.create(data)

    def walk(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
        if isinstance(value, str) and "${" in value:
            try:
                return OmegaConf.select(node, path)
            except (OmegaConfBaseException, ValueError, TypeError):
                return value
        return value

    walked: dict[str, Any] = walk(data, "")
    return walked


def _yaml_mapping(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass
class RoundFiles:
    """One round's folder as data: each file parsed, None where it is absent or unreadable."""

    number: int
    coder: dict[str, Any] | None
    """``coder.json``."""
    candidate: str | None
    """``candidate.py``."""
    eval: dict[str, Any] | None
    """``eval.json`` (an ``EvalResult``'s dict)."""
    judge: dict[str, Any] | None
    """``judge.json``."""
    profile: dict[str, Any] | None
    """``profile.json``."""


class TaskDir:
    """One task's folder, read: ``task.json``, its rounds, its candidates by hash."""

    def __init__(self, root: Path):
        self.root = root

    @property
    def slug(self) -> str:
        """The folder's name (``task_slug`` of the task id)."""
        return self.root.name

    def task(self) -> dict[str, Any] | None:
        """``task.json`` (None when absent or unreadable)."""
        data = _json_or_none(self.root / TASK_FILE)
        return data if isinstance(data, dict) else None

    def round_numbers(self) -> list[int]:
        """The numbers of the round folders present, in order."""
        found = (re.match(r"^round_(\d+)$", p.name) for p in self.root.iterdir()) if self.root.is_dir() else ()
        return sorted(int(m.group(1)) for m in found if m)

    def round(self, number: int) -> RoundFiles:
        """One round's files."""
        folder = self.root / round_folder(number)

        def obj(name: str) -> dict[str, Any] | None:
            data = _json_or_none(folder / name)
            return data if isinstance(data, dict) else None

        try:
            candidate = (folder / CANDIDATE_FILE).read_text()
        except OSError:
            candidate = None
        return RoundFiles(number, obj(CODER_FILE), candidate, obj(EVAL_FILE), obj(JUDGE_FILE), obj(PROFILE_FILE))

    def rounds(self) -> list[RoundFiles]:
        """Every round, in order."""
        return [self.round(n) for n in self.round_numbers()]

    def tree(self) -> list[dict[str, Any]]:
        """A search's nodes (``tree.jsonl``), in recorded order; empty when the task has no tree (not a search)."""
        try:
            text = (self.root / TREE_FILE).read_text()
        except OSError:
            return []
        found = (json.loads(line) for line in text.splitlines() if line.strip())
        return [node for node in found if isinstance(node, dict) and "id" in node]

    def candidate(self, digest: str) -> str | None:
        """A candidate source by its hash (None when not kept)."""
        try:
            return (self.root / CANDIDATES_DIR / f"{digest}.py").read_text()
        except OSError:
            return None


class RunDir:
    """A run directory, read-only: every reader of a run (report, teach, merge, plan, the CLI) goes through this,
    never through file names of its own. Reading never creates anything."""

    def __init__(self, path: str | Path):
        self.root = Path(path).expanduser()

    def is_run(self) -> bool:
        """A ``cudaforge run`` directory: it has ``results.jsonl`` or ``tasks/``."""
        return (self.root / RESULTS_FILE).is_file() or (self.root / TASKS_DIR).is_dir()

    def has_results(self) -> bool:
        """``results.jsonl`` is there."""
        return (self.root / RESULTS_FILE).is_file()

    def require_results(self) -> RunDir:
        """This, or FileNotFoundError saying the folder is not a run directory."""
        if not self.has_results():
            raise FileNotFoundError(f"{self.root}: no {RESULTS_FILE} here (is it a `cudaforge run` directory?)")
        self.schema()
        return self

    def require_run(self) -> RunDir:
        """This, when it is a run directory even with no finished task (``tasks/``, or tasks that went unrun: a
        provider down from the start), else FileNotFoundError saying so."""
        if not (self.is_run() or (self.root / NOT_RUN_FILE).is_file()):
            raise FileNotFoundError(
                f"{self.root}: neither {RESULTS_FILE} nor {TASKS_DIR}/ here (is it a `cudaforge run` directory?)"
            )
        self.schema()
        return self

    def schema(self) -> int:
        """The layout's schema version (0: made before ``run.json``); RunDirTooNew when newer than this cudaforge's."""
        data = _json_or_none(self.root / RUN_FILE)
        version = data.get("schema", 0) if isinstance(data, dict) else 0
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            made_by = data.get("cudaforge", "a newer cudaforge") if isinstance(data, dict) else "a newer cudaforge"
            raise RunDirTooNew(
                f"{self.root} has run-directory schema {version!r} (written by cudaforge {made_by}); "
                f"this cudaforge reads schemas 0 to {SCHEMA_VERSION}: upgrade cudaforge to read it"
            )
        return version

    def config(self) -> dict[str, Any]:
        """``.hydra/config.yaml`` as plain data (empty when absent or unreadable), its interpolations resolved where
        they can be (a judge's ``${coder.model}`` becomes the coder's model; one that cannot stays as written)."""
        return resolved(_yaml_mapping(self.root / CONFIG_FILE))

    @property
    def config_path(self) -> Path:
        """Where the run's config is (it may be absent)."""
        return self.root / CONFIG_FILE

    def hydra_choices(self) -> dict[str, str]:
        """The option of each config group the run was made with (``.hydra/hydra.yaml``; empty when absent)."""
        choices: Any = _yaml_mapping(self.root / HYDRA_FILE)
        for key in ("hydra", "runtime", "choices"):  # any level that is not a mapping: no choices recorded
            choices = choices.get(key) if isinstance(choices, dict) else None
        return {str(k): str(v) for k, v in choices.items()} if isinstance(choices, dict) else {}

    def results(self) -> list[TaskResult]:
        """Every row of ``results.jsonl`` that is a task result, in order (torn lines skipped)."""
        return _read_results(self.results_path)

    def not_run(self) -> dict[str, dict[str, Any]]:
        """Task id -> the last ``not_run.jsonl`` row of each task that stopped for the infrastructure and has no
        result since (a resume that finished it leaves it out)."""
        done = self.latest_results()
        rows = {str(row.get("task_id")): row for row in json_lines(self.root / NOT_RUN_FILE) if row.get("task_id")}
        return {task: row for task, row in rows.items() if task not in done}

    def latest_results(self) -> dict[str, TaskResult]:
        """Task id -> its result (the last row wins: a task written twice, e.g. after a resume)."""
        return {r.task_id: r for r in self.results()}

    @property
    def results_path(self) -> Path:
        """``results.jsonl``."""
        return self.root / RESULTS_FILE

    def ledger(self) -> list[dict[str, Any]]:
        """The rows of ``ledger.jsonl`` (one per LLM call)."""
        return json_lines(self.root / LEDGER_FILE)

    def problem_set(self) -> dict[str, Any] | None:
        """``problem_set.json`` (None for a run made before it existed)."""
        return read_problem_set(self.root)

    def rescore(self) -> dict[str, Any] | None:
        """``rescore.json`` of a run made by ``cudaforge rescore`` (None for any other run, or when unreadable)."""
        data = _json_or_none(self.root / RESCORE_FILE)
        return data if isinstance(data, dict) else None

    def rescored(self) -> list[dict[str, Any]]:
        """The rows of ``rescored.jsonl``."""
        return json_lines(self.root / RESCORED_FILE)

    def task(self, task_id: str) -> TaskDir:
        """One task's folder, by task id."""
        return TaskDir(self.root / TASKS_DIR / task_slug(task_id))

    def tasks(self) -> list[TaskDir]:
        """Every task folder, in name order (a task started but unfinished has one too)."""
        folder = self.root / TASKS_DIR
        return [TaskDir(p) for p in sorted(folder.iterdir()) if p.is_dir()] if folder.is_dir() else []


def _release(key: str) -> None:
    import fcntl

    handle = _CLAIMS.pop(key, None)
    if handle is not None:
        try:
            os.unlink(key)  # still holding the lock: a claim that opened the file before this sees it gone
        except OSError:
            pass
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _release_all() -> None:
    for key in list(_CLAIMS):
        _release(key)


def expand_run_dirs(paths: list[str | Path]) -> tuple[list[Path], list[str]]:
    """Run directories from paths that are runs or folders of runs (a Hydra sweep folder: its jobs in numeric
    order), and one note per path skipped for being neither (a sweep's ``multirun.yaml`` caught by a shell glob, an
    empty folder). ``FileNotFoundError`` for a path that does not exist; ``ValueError`` when no run is left."""
    out: list[Path] = []
    skipped: list[str] = []

    def order(path: Path) -> tuple[int, int, str]:  # Hydra's job folders: 0, 1, ..., 10 or 0_key=value, ...
        number = re.match(r"\d+", path.name)
        return (0, int(number.group()), path.name) if number else (1, 0, path.name)

    for given in paths:
        path = Path(given).expanduser().resolve()
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such run directory")
        if RunDir(path).is_run():
            out.append(path)
            continue
        inner = (
            sorted((p for p in path.iterdir() if p.is_dir() and RunDir(p).is_run()), key=order) if path.is_dir() else []
        )
        if inner:
            out.extend(inner)
        else:
            skipped.append(
                f"skipped {path}: not a `cudaforge run` directory (no tasks/ or results.jsonl), nor a folder of them"
            )
    if not out:
        raise ValueError(
            "no run directory among " + ", ".join(str(p) for p in paths) + (f" ({skipped[0]})" if skipped else "")
        )
    return list(dict.fromkeys(out)), skipped
