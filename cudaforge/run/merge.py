"""``cudaforge merge``: the run directories of one campaign's shards joined into one run directory.

The shard/merge contract: a shard is an ordinary run directory made by ``cudaforge run suite.shard_count=N
suite.shard_index=I`` (on a SLURM array job, another machine, a Ray worker), and a merged run is an ordinary run
directory too, so ``cudaforge report``, ``rescore`` and ``export`` read it as if every task had run in one place:

- ``results.jsonl``: each finished task's result once. A task finished in two shards (the same shard run twice
  into two directories) keeps the first result met and is named in ``merge.json`` under ``duplicates``;
- ``tasks/<task>/``: the finished tasks' folders (candidates, rounds, evaluations, profiles);
- ``ledger.jsonl``: every shard's LLM calls, each once (a call of a task that has not finished is kept too: it was
  paid for), so the merged totals are the campaign's spend;
- ``llm_cache.sqlite``: every recorded reply (a shard's unfinished task resumed elsewhere replays them, unpaid);
- ``problem_set.json``: the union of the shards' problems (their digests must agree with their tasks);
- ``.hydra/config.yaml``: the shards' common config with the shard set to ``0 of 1``; shards run with other
  settings (anything but ``suite.shard_index``) are refused, naming the keys;
- ``merge.json``: which shard gave which task, the tasks not finished yet (resume that shard with its own
  command, then merge again: merging is incremental, and a second merge of the same shards changes nothing).

"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from cudaforge.eval import upgrade_saved
from cudaforge.proc.files import write_atomic
from cudaforge.tasks.identity import PROBLEM_SET_FILE, read_problem_set, record_digest
from cudaforge.track.store import (
    CONFIG_FILE,
    HYDRA_DIR,
    HYDRA_FILE,
    LEDGER_FILE,
    LLM_CACHE_FILE,
    MERGE_FILE,
    RunDir,
    RunStore,
)
from cudaforge.types import TaskResult

"""A merged run's record of its shards."""

IGNORED_KEYS = {
    "suite.shard_index",
    "concurrency",
    "eval.devices",
    "eval.build_cache_dir",
    "llm_cache.path",
    "profile.cache_dir",
    "profile.lock_dir",
    "tracker.tags",
    "campaign.engine",
    "campaign.address",
    "campaign.gpus_per_task",
    "campaign.cpus_per_task",
    "campaign.max_retries",
    "campaign.work_dir",
    "plan.nodes",
    "plan.gpus",
    "plan.from_run",
    "plan.run",
}
"""Config keys shards of one campaign may differ in: which shard, where each machine keeps its caches and how many
GPUs it has, how the shard was spread (locally or over Ray) and what its plan assumed."""


class MergeError(ValueError):
    """The shards cannot be merged (not run directories, other configs, other problems); one line says why."""


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def read_config(run_dir: Path) -> dict[str, Any]:
    """``.hydra/config.yaml`` as plain data ({} when absent or unreadable); a shard run before the guard policies
    were nested under ``eval.guards`` reads as written now (``upgrade_saved``), so it merges with newer shards."""
    config = RunDir(run_dir).config()
    if isinstance(config.get("eval"), dict):
        config["eval"] = upgrade_saved(config["eval"])
    return config


def config_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``key: A vs B`` for every config key two shards disagree on (``IGNORED_KEYS`` aside)."""
    fa, fb = _flat(a), _flat(b)
    return [
        f"{k}: {fa.get(k)!r} vs {fb.get(k)!r}"
        for k in sorted(set(fa) | set(fb))
        if k not in IGNORED_KEYS and fa.get(k) != fb.get(k)
    ]


def task_pack(store: RunStore, result: TaskResult) -> dict[str, Any]:
    """One finished task as data: its result and its folder's files (path relative to the folder -> bytes)."""
    folder = store.task(result.task_id).root
    files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    return {"result": result.to_json(), "files": files}


def add_pack(store: RunStore, pack: dict[str, Any], done: set[str]) -> TaskResult | None:
    """Add a task pack to a run directory unless its task is in ``done`` (then None: nothing is written).

    The folder's files go first and the result line last, so a crash in between leaves the task unfinished (a
    resume runs it, its LLM calls answered by the cache), never a result without its folder."""
    result = TaskResult.from_json(pack["result"])
    if result.task_id in done:
        return None
    folder = store.task(result.task_id).root
    for rel, data in pack["files"].items():
        path = (folder / rel).resolve()
        if folder.resolve() not in path.parents:
            raise MergeError(f"task pack of {result.task_id}: file {rel!r} is outside its folder")
        write_atomic(path, data)
    store.append_result(result)
    done.add(result.task_id)
    return result


def merge_ledgers(target: Path, sources: list[Path]) -> int:
    """Append to ``target`` every line of ``sources`` it does not hold yet (a row is one call: the same line in
    two files is the same call); returns how many were added. Torn or undecodable lines are left out."""
    return add_ledger_lines(target, [line for source in sources for line in ledger_lines(source)])


def add_ledger_lines(target: Path, lines: list[str]) -> int:
    """Append to the ledger ``target`` the lines (one call each) it does not hold yet; returns how many."""
    seen = set(ledger_lines(target))
    added = []
    for line in lines:
        if line not in seen:
            seen.add(line)
            added.append(line)
    if added:
        with target.open("ab") as f:
            f.seek(0, 2)
            if f.tell() and not target.read_bytes().endswith(b"\n"):
                f.write(b"\n")
            f.write(("\n".join(added) + "\n").encode())
    return len(added)


def ledger_lines(path: Path) -> list[str]:
    """The readable lines of a ledger file (torn or undecodable ones left out)."""
    if not path.is_file():
        return []
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            line = raw.decode("utf-8")
            json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        out.append(line)
    return out


def cache_rows(path: Path) -> list[tuple[Any, ...]]:
    """Every recorded reply of a response cache, as rows (read through SQLite, so replies still in its write-ahead
    log are included)."""
    if not path.is_file():
        return []
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    try:
        return db.execute("SELECT * FROM replies").fetchall()
    finally:
        db.close()


def add_cache_rows(target: Path, rows: list[tuple[Any, ...]]) -> int:
    """Add recorded replies (``cache_rows``) to the response cache ``target`` (the first reply of a key stays);
    returns how many were added."""
    from cudaforge.llm.cache import ResponseCache

    if not rows:
        return 0
    ResponseCache(target).close()  # creates the table
    db = sqlite3.connect(target, timeout=30.0)
    try:
        before: int = db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
        db.executemany(f"INSERT OR IGNORE INTO replies VALUES ({', '.join('?' * len(rows[0]))})", rows)
        db.commit()
        after: int = db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
        return after - before
    finally:
        db.close()


def merge_caches(target: Path, sources: list[Path]) -> int:
    """Copy every recorded reply of ``sources`` into the response cache ``target`` (the first reply of a key
    stays); returns how many were added."""
    added = 0
    for source in sources:
        try:
            rows = cache_rows(source)
        except sqlite3.DatabaseError as exc:
            raise MergeError(f"{source}: not a readable response cache ({exc})") from None
        added += add_cache_rows(target, rows)
    return added


def _merged_problem_set(records: list[dict[str, Any]]) -> dict[str, Any]:
    tasks: dict[str, str] = {}
    for record in records:
        for task_id, source_hash in record.get("tasks", {}).items():
            if tasks.get(task_id, source_hash) != source_hash:
                raise MergeError(
                    f"task {task_id} has another reference source in one shard than in another: the "
                    "shards ran different problem sets"
                )
            tasks[task_id] = source_hash
    merged = dict(records[0])
    merged.pop("changed_on_resume", None)
    merged["tasks"] = dict(sorted(tasks.items()))
    merged["digest"] = record_digest(tasks)
    if merged.get("kind") != "git":
        merged["version"] = f"hashes:{merged['digest'][:12]}"
    return merged


def merge_runs(out_dir: str | Path, shard_dirs: list[str | Path], say: Callable[[str], None] = print) -> dict[str, Any]:
    """Merge the shards' run directories into ``out_dir`` (made if needed; a merged run may be merged into again
    as shards finish). Returns the ``merge.json`` record. ``MergeError`` when they cannot be merged."""
    out = Path(out_dir)
    shards = [Path(s) for s in shard_dirs]
    if not shards:
        raise MergeError("name the shards' run directories: cudaforge merge SHARD_DIR [SHARD_DIR ...] out=DIR")
    for shard in shards:
        if not RunDir(shard).has_results() and not (shard / PROBLEM_SET_FILE).is_file():
            raise MergeError(f"{shard}: not a run directory (no results.jsonl, no {PROBLEM_SET_FILE})")
        if shard.resolve() == out.resolve():
            raise MergeError(f"{shard}: the output directory cannot be one of the shards")
        RunDir(shard).schema()  # RunDirTooNew: a shard made by a newer cudaforge
    configs = [read_config(s) for s in shards]
    for shard, config in zip(shards[1:], configs[1:]):
        diff = config_differences(configs[0], config)
        if diff:
            raise MergeError(
                f"{shard} was run with other settings than {shards[0]}: "
                + "; ".join(diff[:8])
                + (f" (and {len(diff) - 8} more)" if len(diff) > 8 else "")
            )
    counts = {_flat(c).get("suite.shard_count") for c in configs if c}
    store = RunStore(out)
    store.claim()  # a merge into a directory that a run (or another merge) is using is refused
    record = _read_merge(out)
    if RunDir(out).has_results() and not record:
        raise MergeError(f"{out} holds a run that is not a merge: merge into a new directory")
    store.write_schema()
    done = {r.task_id for r in store.results()}
    previous = {r.task_id: r.to_json() for r in store.results()}
    duplicates: list[dict[str, str]] = list(record.get("duplicates", []))
    entries = {e["path"]: e for e in record.get("shards", [])}
    records = []
    for shard, config in zip(shards, configs):
        problem = read_problem_set(shard)
        if problem:
            records.append(problem)
        shard_store = RunStore(shard)
        results = shard_store.results()
        added = []
        for result in results:
            if result.task_id in done:
                if previous.get(result.task_id) not in (None, result.to_json()) and not any(
                    d["task"] == result.task_id and d["shard"] == str(shard) for d in duplicates
                ):
                    duplicates.append({"task": result.task_id, "shard": str(shard), "kept": "the first merged"})
                continue
            add_pack(store, task_pack(shard_store, result), done)
            previous[result.task_id] = result.to_json()
            added.append(result.task_id)
        selected = sorted((problem or {}).get("tasks", {}))
        finished = {r.task_id for r in results}
        entry = entries.setdefault(str(shard.resolve()), {"path": str(shard.resolve()), "tasks": []})
        entry["tasks"] = sorted(set(entry["tasks"]) | finished)
        entry["unfinished"] = [t for t in selected if t not in finished]
        entry["shard"] = f"{_flat(config).get('suite.shard_index', 0)}/{_flat(config).get('suite.shard_count', 1)}"
        say(
            f"{shard}: {len(added)} tasks added, {len(finished) - len(added)} already merged"
            + (f", {len(entry['unfinished'])} not finished yet" if entry["unfinished"] else "")
        )
    calls = merge_ledgers(out / LEDGER_FILE, [s / LEDGER_FILE for s in shards])
    replies = merge_caches(out / LLM_CACHE_FILE, [s / LLM_CACHE_FILE for s in shards])
    if records:
        old = read_problem_set(out)
        store.write_problem_set(_merged_problem_set(records + ([old] if old else [])))
    if configs[0]:
        merged_config = json.loads(json.dumps(configs[0]))
        merged_config.setdefault("suite", {}).update(shard_index=0, shard_count=1)
        (out / HYDRA_DIR).mkdir(parents=True, exist_ok=True)
        (out / CONFIG_FILE).write_text(yaml.safe_dump(merged_config, sort_keys=False))
        if (shards[0] / HYDRA_FILE).is_file():
            shutil.copyfile(shards[0] / HYDRA_FILE, out / HYDRA_FILE)
    unfinished = sorted({t for e in entries.values() for t in e.get("unfinished", [])} - done)
    record = {
        "shards": sorted(entries.values(), key=lambda e: e["path"]),
        "tasks": len(done),
        "unfinished": unfinished,
        "duplicates": duplicates,
        "shard_counts": sorted(c for c in counts if c is not None),
    }
    (out / MERGE_FILE).write_text(json.dumps(record, indent=1))
    say(
        f"{out}: {len(done)} tasks, {calls} LLM calls and {replies} recorded replies added"
        + (f"; {len(unfinished)} tasks not finished yet: resume their shards, then merge again" if unfinished else "")
        + (
            f"; {len(duplicates)} tasks finished in more than one shard (the first kept; see {MERGE_FILE})"
            if duplicates
            else ""
        )
    )
    return record


def _read_merge(out: Path) -> dict[str, Any]:
    try:
        data = json.loads((out / MERGE_FILE).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, json.JSONDecodeError):
        return {}
