"""``cudaforge repair RUN_DIR``: put a damaged run directory back in a state the same command resumes from.

- lines of ``results.jsonl`` that are not results go to ``results.quarantine.jsonl`` (their tasks run again);
- a response cache or checkpoint database that SQLite cannot read is moved aside (``NAME.corrupt-STAMP``, with its
  write-ahead files), never deleted;
- the response cache is rebuilt from the run's own records: every paid call of ``ledger.jsonl`` (its request key,
  tokens and cost) whose reply is in its round's ``coder.json`` or ``judge.json``. A resumed task then replays
  those calls instead of paying for them again, whenever it sends the same request (its first rounds do; a later
  round whose prompt carries new timings does not).

Finished tasks are never touched, and the ledger keeps every recorded call.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cudaforge.run.merge import add_cache_rows, cache_rows, ledger_lines
from cudaforge.track.store import (
    CHECKPOINTS_FILE,
    CODER_FILE,
    JUDGE_FILE,
    LEDGER_FILE,
    LLM_CACHE_FILE,
    TASKS_DIR,
    RunDir,
    RunStore,
    round_folder,
    task_slug,
)

CACHE_FILE = LLM_CACHE_FILE
CHECKPOINT_FILE = CHECKPOINTS_FILE


def sqlite_problem(path: Path) -> str | None:
    """Why SQLite cannot read ``path`` (None when it can, or the file is absent)."""
    if not path.exists():
        return None
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            db.close()
        return None
    except sqlite3.DatabaseError as exc:
        return str(exc)


def move_aside(path: Path) -> Path:
    """Rename a damaged database (and its ``-wal``/``-shm`` files) to ``NAME.corrupt-STAMP``; returns the new path."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    return target


def _reply(run_dir: Path, row: dict[str, Any]) -> tuple[str, list[dict[str, Any]]] | None:
    """The reply text and the first request's messages of a ledger row, from its round's conversation file."""
    meta = row.get("meta") or {}
    task_id, round_, role = meta.get("task_id"), meta.get("round"), row.get("role")
    if not isinstance(task_id, str) or not isinstance(round_, int) or role not in ("coder", "judge"):
        return None
    files = RunDir(run_dir).task(task_id).round(round_)
    try:
        record = files.coder if role == "coder" else files.judge
        if record is None:  # no file of that step
            return None
        conversation = record["conversation"]
        return conversation["replies"][int(meta.get("follow_up") or 0)], conversation.get("messages", [])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def rebuild_rows(run_dir: Path) -> tuple[list[tuple[Any, ...]], int]:
    """Cache rows for the ledger's paid calls whose replies the round folders hold, and how many calls had none."""
    rows, missing, seen = [], 0, set()
    for line in ledger_lines(run_dir / LEDGER_FILE):
        row = json.loads(line)
        key = row.get("request_key")
        if row.get("error") or row.get("cache_hit") or not key or key in seen:
            continue
        seen.add(key)
        found = _reply(run_dir, row)
        if found is None:
            missing += 1
            continue
        text, messages = found
        meta = row.get("meta") or {}
        request = {
            "model": row.get("model"),
            "messages": messages,
            "rebuilt_from": f"{TASKS_DIR}/{task_slug(meta['task_id'])}/{round_folder(meta['round'])}/"
            f"{CODER_FILE if row['role'] == 'coder' else JUDGE_FILE}",
        }
        usage = {
            k: row.get(k) for k in ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_prompt_tokens")
        }
        rows.append(
            (
                key,
                json.dumps(request, sort_keys=True, separators=(",", ":")),
                text,
                None,
                json.dumps(usage, sort_keys=True),
                row.get("cost_usd"),
                int(bool(row.get("priced"))),
                float(row.get("latency_s") or 0.0),
                time.time(),
            )
        )
    return rows, missing


def repair(run_dir: str | Path, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Repair ``run_dir`` (see the module's docstring); returns what was done. ``RunDirBusy`` while a run holds it,
    ``ValueError`` for a folder that is not a run directory."""
    run = Path(run_dir)
    if not RunDir(run).has_results() and not (run / LEDGER_FILE).is_file():
        raise ValueError(f"{run}: not a run directory (no results.jsonl, no ledger.jsonl)")
    RunDir(run).schema()  # RunDirTooNew (a ValueError): a newer cudaforge's layout is not ours to repair
    store = RunStore(run)
    store.claim()
    try:
        done: dict[str, Any] = {"quarantined": store.quarantine(), "moved": [], "replies_added": 0}
        for line in done["quarantined"]:
            say(line)
        for name in (CACHE_FILE, CHECKPOINT_FILE):
            if sqlite_problem(run / name):
                moved = move_aside(run / name)
                done["moved"].append(str(moved))
                say(
                    f"{run / name} could not be read: moved to {moved.name}"
                    + (
                        " (unfinished tasks start again from their first round; their calls replay from the cache)"
                        if name == CHECKPOINT_FILE
                        else ""
                    )
                )
        rows, missing = rebuild_rows(run)
        before = len(cache_rows(run / CACHE_FILE))
        done["replies_added"] = add_cache_rows(run / CACHE_FILE, rows)
        done["replies_missing"] = missing
        say(
            f"{run / CACHE_FILE}: {done['replies_added']} replies rebuilt from the round folders ({before} were there"
            + (f"; {missing} paid calls have no reply on record" if missing else "")
            + ")"
        )
        return done
    finally:
        store.release()
