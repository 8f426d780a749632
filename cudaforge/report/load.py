"""Reading a run directory for a report: its results, its config's label, its per-round spending.

A run directory is the source of truth (see ``cudaforge/track/store.py``): ``results.jsonl`` holds one
``TaskResult`` per finished task, ``ledger.jsonl`` one row per LLM call, ``.hydra/config.yaml`` the config,
``problem_set.json`` the problems' identity (absent in runs made before it existed).
Nothing here imports the LLM, evaluation or graph layers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge.tasks.identity import other_problem_set
from cudaforge.track.store import RunDir, task_slug
from cudaforge.types import TaskResult

_LEVEL = re.compile(r"(?:^|/)level(\d+)(?:/|$)")


def task_level(task_id: str) -> int | None:
    """The KernelBench level in a task id ``<suite>/level<L>/<id>_<name>`` (None when it has none)."""
    match = _LEVEL.search(task_id)
    return int(match.group(1)) if match else None


@dataclass
class RoundSpend:
    """What one round cost, as far as the run directory tells."""

    round: int
    """1-based round number."""
    cost_usd: float
    """Dollars of the round's priced LLM calls (0 when they were all unpriced)."""
    seconds: float
    """Wall-clock seconds attributed to the round."""


@dataclass
class RunData:
    """One run directory, read for a report."""

    path: Path
    """The run directory."""
    label: str
    """The run's name in tables and plots."""
    results: list[TaskResult]
    """One result per task (the last row wins when a task was written twice, e.g. after a resume)."""
    config: dict[str, Any] = field(default_factory=dict)
    """``.hydra/config.yaml`` as plain data (empty when absent)."""
    unfinished: list[str] = field(default_factory=list)
    """Task folders under ``tasks/`` without a result: started but not finished."""
    spend: dict[str, list[RoundSpend]] = field(default_factory=dict)
    """Task id -> per-round spending, in round order (see ``spend_source``)."""
    spend_source: dict[str, str] = field(default_factory=dict)
    """``dollars`` / ``minutes`` -> where the per-round numbers came from, in words."""
    not_run: dict[str, str] = field(default_factory=dict)
    """Task id -> why it stopped for the infrastructure without a result (``not_run.jsonl``: the provider unreachable,
    a GPU lost); such tasks are in no metric."""
    problem_set: dict[str, Any] | None = None
    """``problem_set.json`` (``cudaforge.tasks.identity``); None for a run made before problem-set identity."""
    base_label: str = ""
    """``label`` before ``load_runs`` told equal labels apart by directory name: the name of a seeds arm."""

    def __post_init__(self) -> None:
        self.base_label = self.base_label or self.label


def _short_model(name: Any) -> str:
    return str(name).rsplit("/", 1)[-1] if name else "?"


def config_label(config: dict[str, Any]) -> str | None:
    """``<strategy> <coder>/<judge> <N> rounds`` from a run's config (None without one)."""
    if not config:
        return None
    strategy = config.get("strategy") or {}
    coder = (config.get("coder") or {}).get("model")
    judge = (config.get("judge") or {}).get("model")
    parts = [str(strategy.get("name", "")) or None, f"{_short_model(coder)}/{_short_model(judge)}"]
    if strategy.get("max_rounds") is not None:
        parts.append(f"{strategy['max_rounds']} rounds")
    return " ".join(p for p in parts if p)


def run_concurrency(config: dict[str, Any]) -> int | None:
    """How many tasks a run had in flight at once (its config's ``concurrency``; None without a config)."""
    value = config.get("concurrency") if config else None
    return int(value) if isinstance(value, (int, float)) else None


def hydra_choices(run_dir: str | Path) -> dict[str, str]:
    """The option of each config group the run was made with (``.hydra/hydra.yaml``; empty when absent)."""
    return RunDir(run_dir).hydra_choices()


def protocol_suffix(choices: dict[str, str]) -> str:
    """`` [eval=..., agents=...]`` for a run made with another evaluation protocol or template set than ours."""
    parts = [
        f"{group}={choices[group]}"
        for group in ("eval", "agents")
        if choices.get(group) not in (None, "default", "None")
    ]
    return f" [{', '.join(parts)}]" if parts else ""


def _round_numbers(result: TaskResult) -> list[int]:
    rounds = [r.round for r in result.history]
    return rounds or ([result.rounds] if result.rounds else [1])


def _spend(
    results: list[TaskResult], ledger: list[dict[str, Any]]
) -> tuple[dict[str, list[RoundSpend]], dict[str, str]]:
    """Per-round dollars and seconds, from the best source the run directory has.

    Dollars: ``RoundRecord.cost_usd`` when any round of the run has it, else the ledger's priced rows summed
    by ``meta.task_id`` and ``meta.round``, else each task's ``cost_usd`` split evenly over its rounds.
    Seconds: ``RoundRecord.seconds`` when any round has it, else the ledger's call latencies by round,
    rescaled so that a task's rounds add up to its ``TaskResult.minutes``, else an even split.
    """
    by_round: dict[tuple[str, int], list[float]] = {}
    for row in ledger:
        meta = row.get("meta") or {}
        if "task_id" not in meta or "round" not in meta:
            continue
        cost = row.get("cost_usd") if row.get("priced") else None  # unpriced calls add nothing
        acc = by_round.setdefault((str(meta["task_id"]), int(meta["round"])), [0.0, 0.0])
        acc[0] += float(cost or 0.0)
        acc[1] += float(row.get("latency_s") or 0.0)
    ledger_tasks = {task for task, _ in by_round}

    history_cost = any(r.cost_usd for res in results for r in res.history)
    history_secs = any(r.seconds for res in results for r in res.history)
    if history_cost:
        dollars = "RoundRecord.cost_usd (results.jsonl)"
    elif ledger_tasks:
        dollars = "ledger.jsonl rows by meta.task_id and meta.round"
    else:
        dollars = "each task's cost_usd split evenly over its rounds (no per-round record)"
    if history_secs:
        minutes = "RoundRecord.seconds (results.jsonl)"
    elif ledger_tasks:
        minutes = (
            "ledger.jsonl LLM latency by round, rescaled so a task's rounds add up to its minutes "
            "(evaluation time is spread in proportion to LLM time)"
        )
    else:
        minutes = "each task's minutes split evenly over its rounds (no per-round record)"

    spend: dict[str, list[RoundSpend]] = {}
    for res in results:
        rounds = _round_numbers(res)
        records = {r.round: r for r in res.history}
        n = len(rounds)
        if history_cost:
            costs = [records[k].cost_usd if k in records else 0.0 for k in rounds]
        elif ledger_tasks:
            costs = [by_round.get((res.task_id, k), [0.0, 0.0])[0] for k in rounds]
        else:
            costs = [(res.cost_usd or 0.0) / n] * n  # null: every call unpriced, nothing to spread
        if history_secs:
            secs = [records[k].seconds if k in records else 0.0 for k in rounds]
        elif ledger_tasks:
            latency = [by_round.get((res.task_id, k), [0.0, 0.0])[1] for k in rounds]
            total = sum(latency)
            if res.minutes > 0 and total > 0:
                secs = [s * res.minutes * 60 / total for s in latency]
            elif res.minutes > 0:
                secs = [res.minutes * 60 / n] * n
            else:
                secs = latency
        else:
            secs = [res.minutes * 60 / n] * n
        spend[res.task_id] = [RoundSpend(k, c, s) for k, c, s in zip(rounds, costs, secs)]
    return spend, {"dollars": dollars, "minutes": minutes}


def load_run(run_dir: str | Path, label: str | None = None) -> RunData:
    """Read one run directory (FileNotFoundError when it is none); a run with no finished task has no results and
    its unrun tasks."""
    run = RunDir(run_dir).require_run()
    path = run.root
    latest = run.latest_results()
    results = list(latest.values())
    config, label_text = run.config(), None
    rescored = run.rescore()
    if rescored is not None:  # the kernels were made by the source run: its agents and rounds, this run's eval
        source_run = Path(str(rescored.get("source_run", "")))
        source_config = RunDir(source_run).config() if source_run.is_dir() else {}
        choices = {**hydra_choices(source_run), "eval": run.hydra_choices().get("eval", str(rescored.get("protocol")))}
        head = config_label(source_config) if source_config else f"the kernels of {source_run.name or 'another run'}"
        label_text = f"{head}, rescored{protocol_suffix(choices)}"
        config = {**source_config, "eval": config.get("eval", {})} if source_config else config
    not_run = {task: str(row.get("reason", "?")) for task, row in run.not_run().items()}
    done = {task_slug(t) for t in [*latest, *not_run]}
    unfinished = sorted(t.slug for t in run.tasks() if t.slug not in done)
    spend, source = _spend(results, run.ledger())
    record = run.problem_set()
    name = label or label_text or ((config_label(config) or path.name) + protocol_suffix(hydra_choices(path)))
    if other_problem_set(record):  # every table says it
        name += " (other problem set)"
    return RunData(
        path=path,
        label=name,
        results=results,
        config=config,
        unfinished=unfinished,
        not_run=not_run,
        spend=spend,
        spend_source=source,
        problem_set=record,
    )


def load_runs(run_dirs: list[str | Path], labels: list[str] | None = None) -> list[RunData]:
    """Read several run directories; labels that come out equal get the directory name appended."""
    labels = list(labels or [])
    if labels and len(labels) != len(run_dirs):
        raise ValueError(f"{len(labels)} labels for {len(run_dirs)} run directories: give one label per run or none")
    runs = [load_run(d, labels[i] if labels else None) for i, d in enumerate(run_dirs)]
    groups: dict[str, list[RunData]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    for same in groups.values():
        if len(same) < 2:
            continue
        keys = differing_keys([run.config for run in same])
        for run in same:
            flat = flatten(run.config)
            shown = ", ".join(f"{k}={flat.get(k, '-')}" for k in keys)
            run.label = f"{run.label} ({shown})" if keys else f"{run.label} ({run.path.name})"
        if len({run.label for run in same}) < len(same):  # the keys shown do not tell them apart: the folders do
            for run in same:
                run.label = f"{run.label} ({run.path.name})"
    return runs


LABEL_KEYS_SHOWN = 3
"""The most config keys a label adds to tell runs of the same label apart."""
_NOT_A_CHOICE = ("dir", "path", "root", "seed", "out", "name", "hydra", "cache", "address")


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A config as ``{"profile.enabled": False, ...}``."""
    flat: dict[str, Any] = {}
    for key, value in (config or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def differing_keys(configs: list[dict[str, Any]]) -> list[str]:
    """The config keys (at most ``LABEL_KEYS_SHOWN``) whose values differ among ``configs``, leaving out where a run
    wrote or what it named itself (folders, paths, seeds, names)."""
    flats = [flatten(c) for c in configs]
    keys = sorted({k for f in flats for k in f})
    differ = [
        k
        for k in keys
        if len({repr(f.get(k)) for f in flats}) > 1 and not any(part in k.lower() for part in _NOT_A_CHOICE)
    ]
    return differ[:LABEL_KEYS_SHOWN]
