"""Reading run directories round by round, from their source-of-truth files.

A run directory (``cudaforge/track/store.py``) keeps, per task, ``task.json`` and one folder per round
with ``coder.json`` (prompt, replies, source), ``eval.json``, ``judge.json`` and ``profile.json``. This
module turns them into ``RunView`` -> ``TaskView`` -> ``RoundView`` records that the exporters and the
skill distiller read; it never trusts ``results.jsonl`` for a verdict (it reads each round's
``eval.json``), and uses it only for the status of rounds that left no evaluation (``no_code``,
``llm_error``).
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from cudaforge import pyast
from cudaforge.track.store import RoundFiles, RunDir, TaskDir, expand_run_dirs
from cudaforge.types import EvalResult, EvalStatus, Task, TaskResult, source_hash

_LEVEL = re.compile(r"(?:^|/)level(\d+)(?:/|$)")


# --------------------------------------------------------------------------- verdicts


def guard_rejected(result: EvalResult) -> bool:
    """True when an integrity guard rejected the candidate (status ``rejected`` or a ``reject`` finding)."""
    if result.status is EvalStatus.REJECTED:
        return True
    return any(str(f.get("verdict", "")).strip().lower() == "reject" for f in result.guard_findings)


def verified(result: EvalResult | None) -> TypeGuard[EvalResult]:
    """A positive: status ``correct`` and no integrity finding with verdict ``reject``."""
    return result is not None and result.status is EvalStatus.CORRECT and not guard_rejected(result)


def speedup_of(result: EvalResult | None) -> float | None:
    """The median speedup of a verified candidate (None: not verified, or untimed)."""
    return result.speedup.median if verified(result) and result.speedup is not None else None


def normalized_source_hash(source: str) -> str:
    """Hash of a source with comments and formatting removed (``ast.unparse``), so that two kernels that
    differ only there count as one; a source that does not parse is hashed with whitespace collapsed."""
    try:
        text = ast.unparse(pyast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a 500-term sum nests past ast.unparse's depth
        text = " ".join(source.split())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- records


@dataclass
class RunInfo:
    """What identifies a run directory in a dataset row."""

    path: Path
    """The run directory (absolute)."""
    name: str
    """Its folder name."""
    config: dict[str, Any]
    """``.hydra/config.yaml`` as data (empty when absent)."""
    config_hash: str
    """sha256 (16 hex) of the config, canonical JSON; ``unknown`` without a config."""
    coder_model: str
    """The Coder's model (config, else the ledger's coder rows, else ``unknown``)."""
    judge_model: str
    """The Judge's model (as ``coder_model``)."""
    strategy: str
    """The strategy name (``unknown`` without a config)."""
    suite: str
    """The suite name (``unknown`` without a config)."""
    replayed: bool = False
    """The replies were served from a response cache, not asked anew: ``llm_cache.mode=replay_only``, or every
    LLM call in ``ledger.jsonl`` was a cache hit."""


@dataclass
class RoundView:
    """One round of one task, as its files tell it."""

    round: int
    """1-based round number."""
    coder_mode: str | None
    """``first_attempt``, ``repair`` or ``optimize`` (None: no ``coder.json``)."""
    coder: dict[str, Any] | None
    """``coder.json``: mode, ok, source, failure, conversation (messages, replies, parse_errors)."""
    source: str | None
    """The candidate source written this round (None: no usable code)."""
    candidate_hash: str | None
    """``source_hash`` of the source."""
    eval: EvalResult | None
    """``eval.json`` (None: nothing was evaluated)."""
    judge: dict[str, Any] | None
    """``judge.json``: mode, ok, feedback, conversation (None: the Judge did not speak)."""
    status: str
    """The evaluation's status, else the round's status in ``results.jsonl`` (``no_code`` / ``llm_error``)."""
    reused: bool = False
    """True when the same source was evaluated in an earlier round of the task."""
    profile: dict[str, Any] | None = None
    """``profile.json``: what the profiler found on the kernel the Judge read this round (None: not profiled)."""

    @property
    def verified(self) -> bool:
        """The candidate is a positive (correct, no guard rejection)."""
        return verified(self.eval)

    @property
    def hacked(self) -> bool:
        """An integrity guard rejected the candidate."""
        return self.eval is not None and guard_rejected(self.eval)

    @property
    def speedup(self) -> float | None:
        """Median speedup when verified and timed."""
        return speedup_of(self.eval)

    @property
    def normalized_hash(self) -> str | None:
        """``normalized_source_hash`` of the source."""
        return normalized_source_hash(self.source) if self.source is not None else None

    def prompt(self) -> list[dict[str, str]]:
        """The Coder's messages before its first reply (no follow-ups): what a model is asked."""
        messages = ((self.coder or {}).get("conversation") or {}).get("messages") or []
        out = []
        for m in messages:
            if m.get("role") == "assistant":
                break
            out.append({"role": str(m.get("role")), "content": str(m.get("content", ""))})
        return out

    def transcript(self) -> list[dict[str, str]]:
        """The Coder's whole exchange this round: messages (follow-ups included), then the last reply."""
        conversation = (self.coder or {}).get("conversation") or {}
        messages = [
            {"role": str(m.get("role")), "content": str(m.get("content", ""))}
            for m in conversation.get("messages") or []
        ]
        replies = conversation.get("replies") or []
        return [*messages, {"role": "assistant", "content": str(replies[-1])}] if replies else messages


@dataclass
class TaskView:
    """One task of one run: its record and its rounds, in order."""

    run: RunInfo
    task: Task
    rounds: list[RoundView] = field(default_factory=list)
    result: TaskResult | None = None
    """The task's row of ``results.jsonl`` (None: unfinished); read for the held-out shapes of its best kernel."""
    tree: list[dict[str, Any]] = field(default_factory=list)
    """A search's nodes (``tree.jsonl``: each node's id is its round's number); empty when the task was no search."""

    @property
    def level(self) -> int | None:
        """The task's KernelBench level."""
        return self.task.level

    def first_prompt(self) -> list[dict[str, str]]:
        """The prompt of the task's first-attempt round (else its earliest round with a prompt)."""
        with_prompt = [r for r in self.rounds if r.prompt()]
        first = [r for r in with_prompt if r.coder_mode == "first_attempt"]
        chosen = (first or with_prompt)[:1]
        return chosen[0].prompt() if chosen else []


@dataclass
class RunView:
    """A run directory read for export or distillation."""

    info: RunInfo
    tasks: list[TaskView]


# --------------------------------------------------------------------------- reading


def is_run_dir(path: Path) -> bool:
    """A ``cudaforge run`` directory: it has ``tasks/`` or ``results.jsonl``."""
    return RunDir(path).is_run()


def expand_runs(paths: list[str | Path]) -> list[Path]:
    """Run directories from paths that are runs or folders of runs (a Hydra sweep); a path that is neither (a
    sweep's ``multirun.yaml``) is skipped with a note on stderr; ValueError when none is left."""
    runs, skipped = expand_run_dirs(paths)
    for note in skipped:
        print(f"note: {note}", file=sys.stderr)
    return runs


def _ledger_model(rows: list[dict[str, Any]], role: str) -> str | None:
    return next((str(row["model"]) for row in rows if row.get("role") == role and row.get("model")), None)


def run_info(path: Path) -> RunInfo:
    """The identity of a run directory: config, its hash, models, strategy."""
    run = RunDir(path)
    run.schema()
    config = run.config()
    config_hash = (
        hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]
        if config
        else "unknown"
    )
    ledger = run.ledger()
    models = {
        role: (config.get(role) or {}).get("model") or _ledger_model(ledger, role) or "unknown"
        for role in ("coder", "judge")
    }
    replay_only = str((config.get("llm_cache") or {}).get("mode", "")) == "replay_only"
    return RunInfo(
        path=path,
        name=path.name,
        config=config,
        config_hash=config_hash,
        coder_model=str(models["coder"]),
        judge_model=str(models["judge"]),
        strategy=str((config.get("strategy") or {}).get("name", "unknown")),
        suite=str((config.get("suite") or {}).get("name", "unknown")),
        replayed=replay_only or (bool(ledger) and all(row.get("cache_hit") for row in ledger)),
    )


def _task(folder: TaskDir) -> Task | None:
    data = folder.task()
    if data is None or "id" not in data:
        return None
    task = Task.from_dict(data)
    if not task.level:
        found = _LEVEL.search(task.id)
        task.level = int(found.group(1)) if found else 0
    return task


def _round(files: RoundFiles, status_from_history: str | None, seen: set[str]) -> RoundView:
    coder = files.coder
    source = files.candidate
    if source is None and coder is not None and coder.get("ok") and coder.get("source"):
        source = str(coder["source"])
    digest = source_hash(source) if source is not None else None
    result = EvalResult.from_dict(files.eval) if files.eval is not None else None
    status = result.status.value if result else (status_from_history or ("no_code" if coder else "not_run"))
    reused = digest is not None and digest in seen
    if digest is not None:
        seen.add(digest)
    return RoundView(
        round=files.number,
        coder_mode=(coder or {}).get("mode"),
        coder=coder,
        source=source,
        candidate_hash=digest,
        eval=result,
        judge=files.judge,
        status=status,
        reused=reused,
        profile=files.profile,
    )


def load_run_view(path: str | Path) -> RunView:
    """Read one run directory: every task folder with a ``task.json``, every round folder, in order."""
    path = Path(path).expanduser().resolve()
    info = run_info(path)
    run = RunDir(path)
    latest = run.latest_results()
    history = {
        (task_id, record.round): record.status for task_id, result in latest.items() for record in result.history
    }
    tasks = []
    for folder in run.tasks():
        task = _task(folder)
        if task is None:
            continue
        seen: set[str] = set()
        rounds = [_round(files, history.get((task.id, files.number)), seen) for files in folder.rounds()]
        tasks.append(TaskView(run=info, task=task, rounds=rounds, result=latest.get(task.id), tree=folder.tree()))
    return RunView(info=info, tasks=tasks)


# --------------------------------------------------------------------------- filters


@dataclass
class Filters:
    """Which runs and tasks to read (empty lists: all)."""

    levels: list[int] = field(default_factory=list)
    """KernelBench levels."""
    models: list[str] = field(default_factory=list)
    """Globs on the Coder's model."""
    strategies: list[str] = field(default_factory=list)
    """Strategy names."""
    tasks: list[str] = field(default_factory=list)
    """Globs on task ids."""

    def keeps_run(self, info: RunInfo) -> bool:
        """The run's model and strategy pass."""
        if self.models and not any(fnmatch.fnmatchcase(info.coder_model, g) for g in self.models):
            return False
        return not self.strategies or info.strategy in {str(getattr(s, "value", s)) for s in self.strategies}

    def keeps_task(self, view: TaskView) -> bool:
        """The task's level and id pass."""
        if self.levels and view.level not in {int(x) for x in self.levels}:
            return False
        return not self.tasks or any(fnmatch.fnmatchcase(view.task.id, g) for g in self.tasks)


def load_tasks(paths: list[str | Path], filters: Filters | None = None) -> list[TaskView]:
    """Every task of the given runs (or sweep folders) that the filters keep, run by run."""
    filters = filters or Filters()
    out: list[TaskView] = []
    for path in expand_runs(paths):
        view = load_run_view(path)
        if filters.keeps_run(view.info):
            out.extend(t for t in view.tasks if filters.keeps_task(t))
    return out
