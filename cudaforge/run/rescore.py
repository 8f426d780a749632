"""``cudaforge rescore RUN_DIR eval=...``: a run's kept kernels evaluated again under another protocol.

Published speedups move when evaluation tightens; this puts one set of kernels under two protocols. The kernels
come from the run directory alone (``cudaforge/track/store.py``), so runs made by older versions work too: each
task's best kernel (``TaskResult.best_candidate_hash``), or every round's with ``rescore.all_rounds=true``, its
source from ``tasks/<task>/candidates/<hash>.py`` or, in older layouts, the round's ``candidate.py``. They are
evaluated on the local GPUs (or the CPU) with the evaluator of this run's ``eval`` config, into a new run
directory that names the original in ``rescore.json``:

    <rescore dir>/
      rescore.json        the source run, the protocol (the ``eval`` option and its settings), what was rescored
      rescored.jsonl      one row per kernel: its verdict and speedup before and after, and what changed it
      results.jsonl       one TaskResult per task under the new protocol (the source's cost and time kept:
                          the kernels are the same work), so ``cudaforge report`` reads it as a run
      tasks/<task>/       task.json, candidates/<hash>.py, eval_<hash>.json (the new EvalResult)

``cudaforge report SOURCE RESCORED`` then sets the two side by side (``cudaforge.report.protocols``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudaforge.eval import upgrade_saved
from cudaforge.tasks.identity import PROBLEM_SET_FILE
from cudaforge.track.store import CANDIDATE_FILE, RESCORE_FILE, RESCORED_FILE, TASK_FILE, RunDir, RunStore, TaskStore
from cudaforge.types import EvalResult, EvalStatus, Task, TaskResult, source_hash


@dataclass
class Kernel:
    """One kept kernel of the source run, with its verdict there."""

    task: Task
    round: int | None
    """Its round (None: the task's best, whose round the source may not name)."""
    digest: str
    source: str
    before_status: str
    before_speedup: float | None
    before_weights: str = ""
    """How the source run's evaluation set its weights (``EvalResult.fingerprint["weights"]``), where it says."""


def _latest_results(run_dir: Path) -> list[TaskResult]:
    by_task: dict[str, TaskResult] = {}
    for result in RunStore(run_dir).results():
        by_task[result.task_id] = result  # the last row of a task wins (a resumed run may have written it twice)
    return list(by_task.values())


def _source_of(store: TaskStore, digest: str, rounds: list[int]) -> str | None:
    """A candidate's source by hash: the kept copy, else the round folder that holds it (older layouts)."""
    try:
        return store.candidate(digest)
    except OSError:
        pass
    for number in rounds:
        try:
            text = store.read_text(number, CANDIDATE_FILE)
        except OSError:
            continue
        if source_hash(text) == digest:
            return text
    return None


def _weights_of(store: TaskStore, digest: str) -> str:
    """The source evaluation's weights label (``authors (2 tensors copied, shape rule)``, ``seed``...), or ""."""
    try:
        label = store.read_json(None, f"eval_{digest}.json").get("fingerprint", {}).get("weights", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return label if isinstance(label, str) else ""


def kept_kernels(run_dir: str | Path, all_rounds: bool = False) -> tuple[list[Kernel], list[str]]:
    """The kernels to rescore and notes on what could not be read (a task without its task.json or a source)."""
    run_dir = Path(run_dir)
    kernels, notes = [], []
    for result in _latest_results(run_dir):
        store = TaskStore(run_dir, result.task_id)
        try:
            task = Task.from_dict(store.read_json(None, TASK_FILE))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            notes.append(f"{result.task_id}: no readable task.json ({type(exc).__name__}); not rescored")
            continue
        rounds = [r.round for r in result.history]
        wanted: list[tuple[int | None, str, str, float | None]]
        if all_rounds:
            wanted = [(r.round, r.candidate_hash, r.status, r.speedup) for r in result.history if r.candidate_hash]
        elif result.best_candidate_hash:
            wanted = [(result.best_round, result.best_candidate_hash, "correct", result.best_speedup)]
        else:
            wanted = []
        seen: set[str] = set()
        for number, digest, status, speedup in wanted:
            if digest in seen:
                continue  # a round that re-submitted an earlier kernel: evaluated once
            seen.add(digest)
            source = _source_of(store, digest, rounds)
            if source is None:
                notes.append(f"{result.task_id}: the source of candidate {digest} is not in the run directory")
                continue
            kernels.append(Kernel(task, number, digest, source, status or "", speedup, _weights_of(store, digest)))
    return kernels, notes


_SAME_RUN_KEYS = ("source_run", "protocol", "eval", "all_rounds")


def _earlier_results(
    out_dir: Path, summary: dict[str, Any], kernels: list[Kernel]
) -> dict[int, tuple[dict[str, Any], EvalResult]]:
    """What an interrupted rescore into ``out_dir`` already wrote (kernel index -> its row and EvalResult), so the
    same command carries on where it stopped. A directory holding another rescore (another source run, protocol or
    eval setting) is refused: its rows would be mixed with these."""
    record = out_dir / RESCORE_FILE
    if not record.is_file():
        return {}
    try:
        before = json.loads(record.read_text())
    except ValueError as exc:
        raise ValueError(f"{record}: unreadable ({exc}); rescore into another directory (hydra.run.dir=...)") from exc
    if isinstance(before.get("eval"), dict):  # written before the guard policies were nested: the same settings
        before["eval"] = upgrade_saved(before["eval"])
    differs = [
        key
        for key in _SAME_RUN_KEYS
        if json.dumps(before.get(key), sort_keys=True, default=str)
        != json.dumps(summary.get(key), sort_keys=True, default=str)
    ]
    if differs:
        raise ValueError(
            f"{out_dir} holds another rescore (its {', '.join(differs)} differ); rescore into another "
            f"directory (hydra.run.dir=...), or remove it to start again"
        )
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for row in RunDir(out_dir).rescored():  # a line cut by the interruption is left out: that kernel runs again
        if isinstance(row.get("task_id"), str) and isinstance(row.get("candidate_hash"), str):
            rows[(row["task_id"], row["candidate_hash"])] = row
    found = {}
    for index, kernel in enumerate(kernels):
        kept = rows.get((kernel.task.id, kernel.digest))
        if kept is None:
            continue
        try:
            result = EvalResult.from_dict(
                TaskStore(out_dir, kernel.task.id).read_json(None, f"eval_{kernel.digest}.json")
            )
        except (OSError, ValueError, TypeError, KeyError):
            continue
        found[index] = (kept, result)
    path = out_dir / RESCORED_FILE
    if path.is_file():  # rewritten with the rows kept (a cut line dropped), and the new ones appended to it
        path.write_text("".join(json.dumps(row) + "\n" for row, _ in found.values()))
    return found


def changed_by(result: EvalResult, before_weights: str = "") -> str:
    """What gave a rescored kernel its verdict when that is not ``correct``: the rejecting guard, the check that
    found a wrong output (which input variant, the timed calls), or the status. A kernel that was correct with the
    reference's weights copied onto it (``before_weights``, the authors' aligner) and is wrong on the first inputs
    with weights set otherwise is said to be failed by the weights."""
    status = result.status
    after_weights = str(result.fingerprint.get("weights") or "")
    copied = re.match(r"authors \((\d+) tensors", before_weights)
    if (
        status is EvalStatus.INCORRECT
        and copied
        and int(copied.group(1)) > 0
        and after_weights != before_weights
        and (result.diff is None or result.diff.variant == "default")
    ):
        return f"incorrect with the weights set by {after_weights or 'this protocol'} (the source's: {before_weights})"
    if status is EvalStatus.REJECTED:
        guards = [f["guard"] for f in result.guard_findings if f.get("verdict") == "reject"]
        return f"rejected by {guards[0]}" if guards else "rejected"
    if status is EvalStatus.INCORRECT:  # the guard that explained the wrong output names itself in the message
        explained = [f["guard"] for f in result.guard_findings if f"\n{f.get('guard')}: " in result.message]
        if result.diff is not None and result.diff.variant not in ("default", "timing"):
            return f"incorrect on the input variant {result.diff.variant!r}"
        if result.diff is not None and result.diff.variant == "timing":
            return "incorrect in the timed calls" + (f" ({explained[-1]})" if explained else "")
        return "incorrect" + (f" ({explained[-1]})" if explained else "")
    value: str = status.value
    return value


def _task_result(task_id: str, rescored: list[tuple[Kernel, EvalResult]], source: TaskResult | None) -> TaskResult:
    """A task's result under the new protocol: its best correct kernel (timed speedup first), the source's cost
    and time (the kernels are the same work)."""
    correct = [(k, r) for k, r in rescored if r.status is EvalStatus.CORRECT]
    result = TaskResult(task_id=task_id, correct=bool(correct), stop_reason="rescored")
    if source is not None:
        for name in ("rounds", "cost_usd", "unpriced_calls", "tokens_in", "tokens_out", "minutes", "time_split"):
            setattr(result, name, getattr(source, name))
        for name in ("wall_minutes", "active_minutes"):
            if hasattr(source, name):
                setattr(result, name, getattr(source, name))
    if correct:
        kernel, best = max(correct, key=lambda kr: kr[1].speedup.median if kr[1].speedup else -1.0)
        result.best_round, result.best_candidate_hash = kernel.round, kernel.digest
        if best.speedup is not None:
            result.best_speedup = best.speedup.median
            result.best_speedup_ci = [best.speedup.ci_low, best.speedup.ci_high]
        if best.candidate_timing is not None and best.reference_timing is not None:
            result.best_candidate_ms, result.best_reference_ms = (
                best.candidate_timing.median,
                best.reference_timing.median,
            )
        result.best_measurement = best.measurement()
        result.best_checks = best.checks_summary()
    return result


def rescore(
    run_dir: str | Path,
    out_dir: str | Path,
    evaluator: Any,
    *,
    protocol: str,
    all_rounds: bool = False,
    say: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Evaluate ``run_dir``'s kept kernels with ``evaluator`` (its config is the protocol, named ``protocol``) into
    ``out_dir``; the summary written to ``rescore.json``. ``say`` gets a line per kernel as it finishes."""
    run_dir, out_dir = Path(run_dir).resolve(), Path(out_dir)
    RunDir(run_dir).require_results()
    kernels, notes = kept_kernels(run_dir, all_rounds)
    out = RunStore(out_dir)
    RunDir(out_dir).schema()  # RunDirTooNew before anything is read or written there
    for name in (PROBLEM_SET_FILE,):
        if (run_dir / name).is_file():
            (out_dir / name).write_text((run_dir / name).read_text())
    summary: dict[str, Any] = {
        "source_run": str(run_dir),
        "protocol": protocol,
        "eval": evaluator.cfg.to_dict(),
        "all_rounds": all_rounds,
        "kernels": len(kernels),
        "notes": notes,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    earlier = _earlier_results(out_dir, summary, kernels)
    out.write_schema()  # after the refusal of a directory holding another rescore
    if earlier:
        say(f"resuming: {len(earlier)} of {len(kernels)} kernels already rescored in {out_dir}")
    (out_dir / RESCORE_FILE).write_text(json.dumps({**summary, "finished": False}, indent=1))
    rows = [row for row, _ in earlier.values()]  # the interrupted rescore's rows count as if made now
    by_task: dict[str, list[tuple[Kernel, EvalResult]]] = {}
    lock = threading.Lock()

    def done(index: int, result: EvalResult) -> None:
        with lock:
            _done(index, result)

    def _done(index: int, result: EvalResult) -> None:
        kernel = kernels[index]
        store = out.task(kernel.task.id)
        store.write_json(None, f"eval_{kernel.digest}.json", result.to_dict())
        after = result.speedup.median if result.speedup is not None else None
        row = {
            "task_id": kernel.task.id,
            "round": kernel.round,
            "candidate_hash": kernel.digest,
            "before_status": kernel.before_status,
            "before_speedup": kernel.before_speedup,
            "after_status": result.status.value,
            "after_speedup": after,
            "changed": (result.status.value == "correct") != (kernel.before_status == "correct"),
            "reason": "" if result.status is EvalStatus.CORRECT else changed_by(result, kernel.before_weights),
            "message": result.message[:500],
        }
        rows.append(row)
        with (out_dir / RESCORED_FILE).open("a") as f:
            f.write(json.dumps(row) + "\n")
        shown = f"{after:.3f}x" if after is not None else ""
        say(
            f"{kernel.task.id}  {kernel.digest}  {kernel.before_status} -> {result.status.value} {shown}  "
            f"{row['reason']}".rstrip()
        )

    for kernel in kernels:
        store = out.task(kernel.task.id)
        store.write_json(None, TASK_FILE, {**kernel.task.to_dict(), "source_hash": kernel.task.source_hash})
        store.save_candidate(kernel.digest, kernel.source)
    todo = [index for index in range(len(kernels)) if index not in earlier]
    fresh = (
        evaluator.evaluate_batch(
            [(kernels[i].task, kernels[i].source) for i in todo], on_result=lambda n, result: done(todo[n], result)
        )
        if todo
        else []
    )
    by_index = {**{i: result for i, (_, result) in earlier.items()}, **dict(zip(todo, fresh))}
    for i, kernel in enumerate(kernels):
        by_task.setdefault(kernel.task.id, []).append((kernel, by_index[i]))
    out.results_path.unlink(missing_ok=True)  # written whole here: a resumed rescore must not append twice
    for source in _latest_results(run_dir):  # every task of the source, with or without a kernel to rescore
        out.append_result(_task_result(source.task_id, by_task.get(source.task_id, []), source))
    summary.update(changed=sum(r["changed"] for r in rows), finished=True)
    (out_dir / RESCORE_FILE).write_text(json.dumps(summary, indent=1))
    return summary
