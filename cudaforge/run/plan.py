"""``cudaforge plan``: the dollars, LLM calls and hours a campaign should take, and afterwards what it took.

A plan multiplies out the run's config: the selected tasks, the strategy's rounds and which agents it calls in a
round, the models' prices, and four figures per call or round, each with where it came from:

- tokens in and out per call, and seconds per call, by role: from a finished run (``plan.from_run``), else the
  config's defaults (``plan.input_tokens_per_call``, ...), which are calibrated on the CudaForge paper: o3 as both
  agents, 10 rounds, gives its $0.30 and 26.5 minutes per kernel;
- the seconds of a round that are not LLM calls (compile, correctness, timing, profiling), and the part of them that
  holds a GPU: from a finished run, else ``plan.round_seconds``, else the stored benchmark for this machine's
  device (``round_seconds.yaml`` beside the published results), else unknown (hours are then not given).

Hours: the sum over tasks (task-hours) and the wall clock: tasks run ``concurrency`` at a time on each of
``plan.nodes`` machines, and the GPU-held part of the rounds shares ``plan.gpus`` GPUs a node, whichever bounds.
A run writes its plan into its directory (``plan.json``); ``cudaforge plan RUN_DIR`` sets it beside the measured
figures.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from cudaforge.track.store import LEDGER_FILE
from cudaforge.track.store import PLAN_FILE as PLAN_FILE  # cudaforge.cli.plan reads it here

"""The plan a run wrote into its directory when it started."""
ROUND_SECONDS_FILE = Path(__file__).resolve().parents[1] / "resources" / "published" / "round_seconds.yaml"
"""Stored per-round non-LLM seconds by device, each with its command, machine and date."""
GPU_HELD = ("correctness", "timing", "profiling")
"""``TaskResult.time_split`` keys of the steps that hold a GPU. A round's other non-LLM time (compile, the graph,
checkpoints) is its wall time less these and the LLM calls."""
ROLES = ("coder", "judge")


@dataclass
class Figures:
    """What a plan multiplies out: per call by role, and per round."""

    input_tokens: dict[str, float]
    output_tokens: dict[str, float]
    llm_seconds: dict[str, float]
    round_seconds: float | None
    """Non-LLM seconds of one round (None: unknown)."""
    gpu_seconds: float | None
    """Of ``round_seconds``, the seconds that hold a GPU."""
    sources: dict[str, str] = field(default_factory=dict)
    """``tokens``, ``llm_seconds``, ``round_seconds`` -> where the figure came from."""


def calls_per_task(strategy: Any, rounds: int) -> dict[str, int]:
    """LLM calls of one task that runs every round: the Coder once a round; the Judge after every round but the
    last (the loop ends on the last evaluation) when the strategy consults it in either mode. Follow-up calls (a
    reply with no code) are not counted."""
    judge = rounds - 1 if (strategy.judge_corrects or strategy.judge_optimizes) and rounds > 0 else 0
    return {"coder": rounds, "judge": max(0, judge)}


def stored_round_seconds(device: str, path: Path = ROUND_SECONDS_FILE) -> dict[str, Any] | None:
    """The stored benchmark entry for ``device`` (``cpu`` or a GPU's name), if there is one."""
    if not path.is_file():
        return None
    entries = yaml.safe_load(path.read_text()) or {}
    return entries.get(device)


def measured_figures(run_dir: str | Path) -> Figures:
    """The per-call and per-round figures of a finished run (its results and ledger)."""
    from cudaforge.llm.ledger import Ledger
    from cudaforge.track.store import RunStore

    run = Path(run_dir)
    results = RunStore(run).results()
    if not results:
        raise ValueError(f"{run}: no finished task to measure (results.jsonl is empty or missing)")
    ledger = Ledger.read(run / LEDGER_FILE) if (run / LEDGER_FILE).is_file() else []
    rounds = sum(r.rounds for r in results) or 1
    wall_s = sum(60 * (r.wall_minutes if r.wall_minutes is not None else r.minutes) for r in results)
    llm_s = sum(r.time_split.get("llm", 0.0) for r in results)
    gpu_s = sum(r.time_split.get(k, 0.0) for r in results for k in GPU_HELD)
    inputs, outputs, latency = {}, {}, {}
    for role in ROLES:
        rows = [row for row in ledger if row.role == role and not row.error]
        inputs[role] = statistics.fmean([r.prompt_tokens for r in rows]) if rows else 0.0
        outputs[role] = statistics.fmean([r.completion_tokens for r in rows]) if rows else 0.0
        paid = [r.latency_s for r in rows if not r.cache_hit]
        latency[role] = statistics.fmean(paid) if paid else 0.0
    where = f"measured in {run}"
    return Figures(
        inputs,
        outputs,
        latency,
        max(0.0, wall_s - llm_s) / rounds,
        gpu_s / rounds,
        {"tokens": where, "llm_seconds": where, "round_seconds": where},
    )


def default_figures(plan_cfg: Any, device: str) -> Figures:
    """The config's per-call defaults and the per-round time from ``plan.round_seconds`` or the stored benchmark."""
    calibrated = "plan.* defaults, calibrated on the CudaForge paper's o3 runs"
    figures = Figures(
        {r: float(plan_cfg.input_tokens_per_call) for r in ROLES},
        {r: float(plan_cfg.output_tokens_per_call) for r in ROLES},
        {r: float(plan_cfg.llm_seconds_per_call) for r in ROLES},
        None,
        None,
        {"tokens": calibrated, "llm_seconds": calibrated},
    )
    if plan_cfg.round_seconds is not None:
        figures.round_seconds = float(plan_cfg.round_seconds)
        figures.gpu_seconds = float(plan_cfg.round_seconds) * (0.0 if device == "cpu" else 1.0)
        figures.sources["round_seconds"] = "plan.round_seconds"
        return figures
    stored = stored_round_seconds(device)
    if stored:
        figures.round_seconds, figures.gpu_seconds = float(stored["round_seconds"]), float(stored["gpu_seconds"])
        figures.sources["round_seconds"] = f"the stored benchmark for {device} ({stored['date']}: {stored['command']})"
    else:
        figures.sources["round_seconds"] = (
            f"unknown: no stored benchmark for {device}; set plan.round_seconds or "
            "plan.from_run=RUN_DIR (a run of a few tasks on this machine)"
        )
    return figures


def make_plan(config: Any, n_tasks: int, figures: Figures, gpus: int) -> dict[str, Any]:
    """The plan of ``n_tasks`` tasks under ``config`` (a ``CudaforgeConfig``, object form)."""
    from cudaforge.graph.strategies import Strategy
    from cudaforge.llm.ledger import SCRIPTED_PREFIX, Usage
    from cudaforge.llm.pricing import cost_for

    strategy = Strategy.from_config(config.strategy)
    name = strategy.name
    rounds = strategy.round_cap(config.strategy.max_rounds)
    per_task = calls_per_task(strategy, rounds)
    dollars: dict[str, float | None] = {}
    for role, llm in (("coder", config.coder), ("judge", config.judge)):
        if per_task[role] == 0:
            dollars[role] = 0.0
            continue
        usage = Usage(
            prompt_tokens=round(figures.input_tokens[role]), completion_tokens=round(figures.output_tokens[role])
        )
        if llm.model.startswith(SCRIPTED_PREFIX):
            cost: float | None = 0.0
        else:
            cost, _ = cost_for(
                llm.model,
                usage,
                input_cost_per_token=llm.input_cost_per_token,
                output_cost_per_token=llm.output_cost_per_token,
            )
        dollars[role] = None if cost is None else cost * per_task[role] * n_tasks
    seconds = dict(figures.llm_seconds)
    for role, llm in (("coder", config.coder), ("judge", config.judge)):
        if llm.model.startswith(SCRIPTED_PREFIX) and figures.sources.get("llm_seconds", "").startswith("plan."):
            seconds[role] = 0.0  # a scripted model answers in-process; the defaults are a hosted model's
    llm_s = sum(per_task[r] * seconds[r] for r in ROLES)
    task_s = None if figures.round_seconds is None else llm_s + rounds * figures.round_seconds
    nodes = max(1, int(config.plan.nodes))
    wall_s = None
    if task_s is not None and n_tasks:
        lanes = max(1, int(config.concurrency)) * nodes
        by_tasks = n_tasks * task_s / lanes
        by_gpus = n_tasks * rounds * (figures.gpu_seconds or 0.0) / (max(1, gpus) * nodes)
        wall_s = max(by_tasks, by_gpus, task_s)
    unpriced = [role for role, d in dollars.items() if d is None]
    total = None if unpriced else sum(d for d in dollars.values() if d is not None)
    return {
        "tasks": n_tasks,
        "rounds": rounds,
        "strategy": name,
        "coder": config.coder.model,
        "judge": config.judge.model,
        "calls": {role: per_task[role] * n_tasks for role in ROLES},
        "tokens_in": sum(per_task[r] * figures.input_tokens[r] for r in ROLES) * n_tasks,
        "tokens_out": sum(per_task[r] * figures.output_tokens[r] for r in ROLES) * n_tasks,
        "dollars": total,
        "dollars_by_role": dollars,
        "unpriced": unpriced,
        "minutes_per_kernel": None if task_s is None else task_s / 60,
        "task_hours": None if task_s is None else n_tasks * task_s / 3600,
        "wall_hours": None if wall_s is None else wall_s / 3600,
        "concurrency": int(config.concurrency),
        "gpus": max(1, gpus),
        "nodes": nodes,
        "figures": {
            "input_tokens": figures.input_tokens,
            "output_tokens": figures.output_tokens,
            "llm_seconds": seconds,
            "round_seconds": figures.round_seconds,
            "gpu_seconds": figures.gpu_seconds,
        },
        "sources": figures.sources,
        "made": datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def measured(run_dir: str | Path) -> dict[str, Any]:
    """The same figures as a plan's, measured on a run directory: what the finished tasks took."""
    from cudaforge.llm.ledger import Ledger
    from cudaforge.track.store import RunStore

    run = Path(run_dir)
    results = RunStore(run).results()
    ledger = Ledger.read(run / LEDGER_FILE) if (run / LEDGER_FILE).is_file() else []
    costs = [row.cost_usd for row in ledger if not row.cache_hit]
    walls = [r.wall_minutes if r.wall_minutes is not None else r.minutes for r in results]
    stamps = sorted(row.timestamp for row in ledger if row.timestamp)
    span = None
    if len(stamps) > 1:
        span = (datetime.fromisoformat(stamps[-1]) - datetime.fromisoformat(stamps[0])).total_seconds() / 3600
    return {
        "tasks": len(results),
        "rounds": statistics.fmean([r.rounds for r in results]) if results else None,
        "calls": {role: sum(1 for row in ledger if row.role == role) for role in ROLES},
        "tokens_in": sum(row.prompt_tokens for row in ledger),
        "tokens_out": sum(row.completion_tokens for row in ledger),
        "dollars": None if any(c is None for c in costs) else sum(costs),
        "minutes_per_kernel": statistics.fmean(walls) if walls else None,
        "task_hours": sum(walls) / 60 if walls else None,
        "wall_hours": span,
    }


def _money(x: float | None) -> str:
    return "unpriced" if x is None else f"${x:,.2f}"


def _hours(x: float | None) -> str:
    return "unknown" if x is None else f"{x:,.1f} h" if x >= 1 else f"{x * 60:,.1f} min"


def _count(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}" if float(x).is_integer() or x > 100 else f"{x:,.1f}"


def table(plan: dict[str, Any], actual: dict[str, Any] | None = None) -> str:
    """The plan as a Markdown table, with the measured column beside it when given."""
    rows = [
        ("tasks", _count(plan["tasks"]), actual and _count(actual["tasks"])),
        ("rounds per task", _count(plan["rounds"]), actual and _count(actual["rounds"])),
        ("Coder calls", _count(plan["calls"]["coder"]), actual and _count(actual["calls"]["coder"])),
        ("Judge calls", _count(plan["calls"]["judge"]), actual and _count(actual["calls"]["judge"])),
        ("tokens in", _count(plan["tokens_in"]), actual and _count(actual["tokens_in"])),
        ("tokens out", _count(plan["tokens_out"]), actual and _count(actual["tokens_out"])),
        ("dollars", _money(plan["dollars"]), actual and _money(actual["dollars"])),
        (
            "minutes per kernel",
            "unknown" if plan["minutes_per_kernel"] is None else f"{plan['minutes_per_kernel']:.1f}",
            actual and ("-" if actual["minutes_per_kernel"] is None else f"{actual['minutes_per_kernel']:.1f}"),
        ),
        ("task-hours (summed)", _hours(plan["task_hours"]), actual and _hours(actual["task_hours"])),
        ("wall clock", _hours(plan["wall_hours"]), actual and _hours(actual["wall_hours"])),
    ]
    head = "| | planned | measured |\n| --- | --- | --- |" if actual else "| | planned |\n| --- | --- |"
    lines = [f"| {name} | {p} | {a} |" if actual else f"| {name} | {p} |" for name, p, a in rows]
    return "\n".join([head, *lines])


def explain(plan: dict[str, Any]) -> str:
    """Where the plan's figures came from, one line each."""
    f = plan["figures"]
    per_call = ", ".join(
        f"{role} {f['input_tokens'][role]:,.0f} in / {f['output_tokens'][role]:,.0f} out tokens, "
        f"{f['llm_seconds'][role]:,.0f} s"
        for role in ROLES
    )
    rs = (
        "unknown" if f["round_seconds"] is None else f"{f['round_seconds']:,.1f} s ({f['gpu_seconds']:,.1f} s on a GPU)"
    )
    lines = [
        f"{plan['tasks']} tasks x {plan['rounds']} rounds, strategy {plan['strategy']}, coder {plan['coder']}, "
        f"judge {plan['judge']}; {plan['concurrency']} task(s) at a time on each of {plan['nodes']} node(s) with "
        f"{plan['gpus']} GPU(s) each",
        f"per call: {per_call}; from {plan['sources']['tokens']}",
        f"per round, besides LLM calls: {rs}; from {plan['sources']['round_seconds']}",
    ]
    if plan["unpriced"]:
        lines.append(
            f"no price for the {' and '.join(plan['unpriced'])} model: dollars unknown (set its "
            "input_cost_per_token and output_cost_per_token)"
        )
    return "\n".join(lines)


def save(run_dir: str | Path, plan: dict[str, Any]) -> None:
    """Write ``plan.json`` into a run directory (a resumed run keeps the first one)."""
    path = Path(run_dir) / PLAN_FILE
    if not path.exists():
        path.write_text(json.dumps(plan, indent=2))


def load(run_dir: str | Path) -> dict[str, Any] | None:
    """A run directory's ``plan.json`` (None when it has none or it is unreadable)."""
    try:
        plan = json.loads((Path(run_dir) / PLAN_FILE).read_text())
    except (OSError, ValueError):
        return None
    return plan if isinstance(plan, dict) and "calls" in plan else None


def local_device() -> tuple[str, int]:
    """This machine's device for the stored benchmark (``cpu`` or the first GPU's name) and its GPU count."""
    import torch

    count = torch.cuda.device_count()
    return (torch.cuda.get_device_name(0) if count else "cpu"), count
