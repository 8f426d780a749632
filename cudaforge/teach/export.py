"""Datasets from run directories: SFT pairs, whole trajectories with rewards, and preference pairs.

SFT positives passed every check of the default protocol (``cudaforge.teach.positives``: verified, under a protocol
no looser than ``eval=default``, no finding that marks them hollow, their task's held-out shapes passed); the other
formats take *verified* candidates (evaluation status ``correct`` and no integrity finding with verdict ``reject``,
``runs.verified``) and label each turn ``positive`` or why not. A run without a GPU verifies correctness but times nothing: its
positives have a null speedup, and any ``min_speedup`` leaves them out. Every row carries its provenance
(run, task, round, models, strategy, config hash, candidate hashes) and follows a fixed schema
(``schema.py``); ``write_dataset`` writes ``train.jsonl`` with a ``dataset_info.json`` and a dataset card.
The card says first, in bold, when kernels come from the offline demo's hand-written transcript (model
``scripted/demo``: not training data) or from replies replayed out of a response cache (``source_notices``).

- ``sft_rows``: task prompt -> best verified kernel (or every verified kernel), with speedup, interval,
  GPU and versions.
- ``trajectory_rows``: every round of a task (prompts, replies, evaluation summary, Judge feedback) with a
  per-round reward (``RewardConfig``); for a search strategy's task, one trajectory per root-to-leaf path of its
  tree, in parent order (``trajectory_paths``).
- ``preference_rows``: for the same task and the same prompt, a verified kernel over an incorrect,
  hacked or failed one, or over a verified one it beats by ``min_margin``.
- ``turn_rows``: every Coder and Judge turn on its own, labelled: the Coder's with the verdict on its kernel
  (``verified``, ``hacked`` for a guard's rejection, else the status), the guard findings, the precision of its
  speedup and its reward; the Judge's with the verdict and the profiler metrics it read. Negatives are kept.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from cudaforge.llm.scripted import DEMO_MODEL
from cudaforge.teach.positives import not_positive
from cudaforge.teach.runs import Filters, RoundView, TaskView, expand_runs, load_tasks, run_info, verified
from cudaforge.teach.schema import SCHEMAS, conform, features
from cudaforge.teach.settings import ExportConfig, ExportFormat, RewardConfig, RewardKind, SftPrompt
from cudaforge.track.tree import leaf_paths
from cudaforge.types import EvalResult

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_FINDING_PASSES = ("pass", "passed", "ok", "clean")


def _value(x: Any) -> Any:
    return getattr(x, "value", x)


def _row_id(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def fenced(source: str) -> str:
    """A kernel as the Coder is asked to answer: one ```python block."""
    return f"```python\n{source.rstrip()}\n```"


# --------------------------------------------------------------------------- row parts


def provenance(view: TaskView, r: RoundView | None) -> dict[str, Any]:
    """Where a row came from (``r`` None: the whole task)."""
    info = view.run
    return {
        "run": info.name,
        "run_dir": str(info.path),
        "task_id": view.task.id,
        "round": r.round if r else None,
        "coder_model": info.coder_model,
        "judge_model": info.judge_model,
        "strategy": info.strategy,
        "suite": info.suite,
        "config_hash": info.config_hash,
        "candidate_hash": r.candidate_hash if r else None,
        "normalized_hash": r.normalized_hash if r else None,
    }


def versions(result: EvalResult | None) -> dict[str, Any]:
    """Software versions from the evaluator's fingerprint."""
    fp = (result.fingerprint if result else None) or {}
    names = {
        "torch": "torch",
        "torch_cuda": "torch_cuda",
        "triton": "triton",
        "nvcc": "nvcc",
        "python": "python",
        "driver": "driver_version",
    }
    return {ours: str(fp[theirs]) if fp.get(theirs) is not None else None for ours, theirs in names.items()}


def gpu_name(result: EvalResult | None) -> str | None:
    """The GPU the candidate ran on (None: CPU or unknown)."""
    gpu = ((result.fingerprint if result else None) or {}).get("gpu") or {}
    return gpu.get("name") or None


def measurement(r: RoundView | None) -> dict[str, Any]:
    """The evaluator's findings on a round's candidate (nulls where there is none)."""
    result = r.eval if r else None
    speedup = result.speedup if result and verified(result) else None
    return {
        "status": r.status if r else None,
        "verified": bool(r and r.verified),
        "hacked": bool(r and r.hacked),
        "speedup": speedup.median if speedup else None,
        "speedup_ci_low": speedup.ci_low if speedup else None,
        "speedup_ci_high": speedup.ci_high if speedup else None,
        "reference_ms": result.reference_timing.median if result and result.reference_timing else None,
        "candidate_ms": result.candidate_timing.median if result and result.candidate_timing else None,
        "baseline": speedup.baseline if speedup else None,
        "gpu": gpu_name(result),
        "device": (result.device or None) if result else None,
    }


def guard_notes(result: EvalResult | None) -> list[str]:
    """Integrity findings that did not pass (a positive can carry ``report`` findings, never ``reject``)."""
    notes = []
    for f in result.guard_findings if result else []:
        verdict = str(f.get("verdict", "")).strip()
        if verdict.lower() not in _FINDING_PASSES:
            notes.append(f"{f.get('guard', 'guard')} ({verdict or 'flagged'}): {f.get('evidence', '')}".strip())
    return notes


def reward(r: RoundView, cfg: RewardConfig) -> float:
    """The reward of one round: by ``cfg.kind`` for a verified candidate, else the configured constants."""
    if r.eval is None:
        return float(cfg.no_code)
    if r.hacked:
        return float(cfg.hacked)
    if not r.verified:
        return float(cfg.failed)
    kind = RewardKind(_value(cfg.kind))
    if kind is RewardKind.binary:
        return 1.0
    speedup = r.speedup if r.speedup is not None else float(cfg.untimed_speedup)
    if cfg.max_speedup is not None:
        speedup = min(speedup, float(cfg.max_speedup))
    if kind is RewardKind.speedup:
        return float(speedup)
    return math.log(speedup) if speedup > 0 else float(cfg.failed)


def _passes_min_speedup(r: RoundView, min_speedup: float | None) -> bool:
    """No threshold: every verified kernel. A threshold: timed kernels at least that fast (untimed ones out)."""
    return min_speedup is None or (r.speedup is not None and r.speedup >= min_speedup)


def _rank(r: RoundView) -> tuple[Any, ...]:
    """Sort key of verified candidates: faster first, timed before untimed, then earlier rounds."""
    return (-(r.speedup if r.speedup is not None else -math.inf), r.round)


# --------------------------------------------------------------------------- SFT


def sft_rows(tasks: list[TaskView], cfg: ExportConfig) -> list[dict[str, Any]]:
    """Task prompt -> verified kernel rows (each task's best over all runs when ``cfg.best_only``)."""
    by_task: dict[str, list[tuple[TaskView, RoundView]]] = {}
    for view in tasks:
        for r in view.rounds:
            if r.source is not None and _passes_min_speedup(r, cfg.min_speedup) and not why_not_positive(view, r):
                by_task.setdefault(view.task.id, []).append((view, r))
    rows, seen = [], set()
    for task_id in sorted(by_task):
        found = sorted(by_task[task_id], key=lambda vr: (*_rank(vr[1]), str(vr[0].run.path)))
        for view, r in found[:1] if cfg.best_only else found:
            if cfg.dedup:
                if r.normalized_hash in seen:
                    continue
                seen.add(r.normalized_hash)
            rows.append(_sft_row(view, r, cfg))
    return rows


def why_not_positive(view: TaskView, r: RoundView) -> list[str]:
    """Why a round's kernel is not an SFT positive (``cudaforge.teach.positives``; empty: it is one)."""
    return not_positive(r.eval, view.run.config, view.result, r.candidate_hash)


def _sft_row(view: TaskView, r: RoundView, cfg: ExportConfig) -> dict[str, Any]:
    prompt = r.prompt() if SftPrompt(_value(cfg.sft_prompt)) is SftPrompt.round else view.first_prompt()
    completion = [{"role": "assistant", "content": fenced(r.source or "")}]
    m = measurement(r)
    result = cast(EvalResult, r.eval)  # a positive (``sft_rows``): verified, so evaluated
    return {
        "id": _row_id("sft", str(view.run.path), view.task.id, r.round),
        "task_id": view.task.id,
        "task_name": view.task.name,
        "level": view.level,
        "messages": [*prompt, *completion],
        "prompt": prompt,
        "completion": completion,
        "source": r.source,
        "timed": m["speedup"] is not None,
        **{
            k: m[k]
            for k in (
                "speedup",
                "speedup_ci_low",
                "speedup_ci_high",
                "reference_ms",
                "candidate_ms",
                "baseline",
                "gpu",
                "device",
            )
        },
        "versions": versions(result),
        "trials_passed": result.trials_passed,
        "trials_total": result.trials_total,
        "guard_notes": guard_notes(result),
        "provenance": provenance(view, r),
    }


# --------------------------------------------------------------------------- trajectories


def _eval_summary(r: RoundView) -> str:
    if r.eval is None:
        return f"{r.status}: no candidate was evaluated"
    lines = [r.eval.report(), *guard_notes(r.eval)]
    return "\n".join(line for line in lines if line)


def _judge_part(r: RoundView) -> tuple[str | None, list[dict[str, str]], str | None]:
    judge = r.judge or {}
    if not judge:
        return None, [], None
    conversation = judge.get("conversation") or {}
    replies = conversation.get("replies") or []
    messages = [
        {"role": str(m.get("role")), "content": str(m.get("content", ""))} for m in conversation.get("messages") or []
    ]
    if replies:
        messages.append({"role": "assistant", "content": str(replies[-1])})
    fields = ((judge.get("feedback") or {}).get("fields")) or {}
    text = "\n".join(f"{k}: {v}" for k, v in fields.items()) if fields else (judge.get("failure") or None)
    return judge.get("mode"), messages, text


def trajectory_paths(view: TaskView) -> list[tuple[int | None, list[RoundView]]]:
    """The round sequences a task's trajectories follow, each with its leaf's node id: every round in order (leaf
    None) for a task that was no search; for a search (``view.tree``), one per root-to-leaf path of its tree, each
    round in parent order (nodes without a round folder left out)."""
    if not view.tree:
        return [(None, list(view.rounds))]
    by_round = {r.round: r for r in view.rounds}
    paths: list[tuple[int | None, list[RoundView]]] = []
    for path in leaf_paths(view.tree):
        rounds = [by_round[int(n["id"])] for n in path if int(n["id"]) in by_round]
        if rounds:
            paths.append((int(path[-1]["id"]), rounds))
    return paths


def _trajectory_step(r: RoundView, cfg: ExportConfig) -> dict[str, Any]:
    judge_mode, judge_messages, judge_text = _judge_part(r)
    return {
        "round": r.round,
        "coder_mode": r.coder_mode,
        "coder_messages": r.transcript(),
        "candidate_hash": r.candidate_hash,
        "reused_evaluation": r.reused,
        "eval": measurement(r),
        "eval_summary": _eval_summary(r),
        "judge_mode": judge_mode,
        "judge_messages": judge_messages,
        "judge_feedback": judge_text,
        "reward": reward(r, cfg.reward),
    }


def trajectory_rows(tasks: list[TaskView], cfg: ExportConfig) -> list[dict[str, Any]]:
    """One row per task and run: every round's prompts, replies, evaluation, feedback and reward; for a search, one
    row per root-to-leaf path of its tree (``trajectory_paths``)."""
    rows, seen = [], set()
    for view in tasks:
        for leaf, path in trajectory_paths(view) if view.rounds else []:
            messages: list[dict[str, str]] = []
            for r in path:
                transcript = r.transcript()
                if not messages:
                    messages.extend(m for m in transcript if m["role"] == "system")
                messages.extend(m for m in transcript if m["role"] != "system")
            rounds = [_trajectory_step(r, cfg) for r in path]
            positives = [r for r in path if r.verified]
            timed = [r.speedup for r in positives if r.speedup is not None]
            best_speedup = max(timed) if timed else None
            if cfg.min_speedup is not None and (best_speedup is None or best_speedup < cfg.min_speedup):
                continue
            key = _row_id(view.task.source_hash, [m["content"] for m in messages])
            if cfg.dedup and key in seen:
                continue
            seen.add(key)
            rewards = [x["reward"] for x in rounds]
            where = provenance(view, None)
            rows.append(
                {
                    "id": _row_id("trajectory", str(view.run.path), view.task.id, *([] if leaf is None else [leaf])),
                    "task_id": view.task.id,
                    "task_name": view.task.name,
                    "level": view.level,
                    "messages": messages,
                    "rounds": rounds,
                    "rewards": rewards,
                    "final_reward": rewards[-1],
                    "best_reward": max(rewards),
                    "best_speedup": best_speedup,
                    "solved": bool(positives),
                    "versions": versions(next((r.eval for r in path if r.eval), None)),
                    "provenance": where if leaf is None else {**where, "round": leaf},
                }
            )
    return rows


# --------------------------------------------------------------------------- preferences


def _beats(a: RoundView, b: RoundView, margin: float) -> str | None:
    """Why ``a`` is preferred to ``b`` (None: it is not)."""
    if not a.verified:
        return None
    if b.hacked:
        return "verified_over_hacked"
    if not b.verified:
        return "verified_over_incorrect" if b.eval is not None else None
    if a.speedup is not None and b.speedup is not None and a.speedup >= b.speedup * (1 + margin):
        return "faster"
    return None


def preference_rows(tasks: list[TaskView], cfg: ExportConfig) -> list[dict[str, Any]]:
    """Pairs of candidates for the same task and the same first-attempt prompt: chosen over rejected."""
    groups: dict[tuple[str, str], list[tuple[TaskView, RoundView]]] = {}
    for view in tasks:
        prompt = view.first_prompt()
        if not prompt:
            continue
        context = _row_id(view.task.id, view.task.source_hash, prompt)
        for r in view.rounds:
            if r.source is not None and r.eval is not None:
                groups.setdefault((view.task.id, context), []).append((view, r))
    rows, seen = [], set()
    for (task_id, _), members in sorted(groups.items()):
        unique: dict[str, tuple[TaskView, RoundView]] = {}
        for view, r in members:  # one candidate per normalised source: the first seen
            unique.setdefault(r.normalized_hash or "", (view, r))
        candidates = list(unique.values()) if cfg.dedup else members
        chosen = sorted(
            (vr for vr in candidates if vr[1].verified and _passes_min_speedup(vr[1], cfg.min_speedup)),
            key=lambda vr: _rank(vr[1]),
        )
        losers = sorted(candidates, key=lambda vr: (not vr[1].hacked, vr[1].verified, *_rank(vr[1])))
        count = 0
        for cv, c in chosen:
            for lv, loser in losers:
                if count >= cfg.max_pairs_per_task:
                    break
                reason = _beats(c, loser, cfg.min_margin)
                if reason is None or c.normalized_hash == loser.normalized_hash:
                    continue
                key = (c.normalized_hash, loser.normalized_hash, task_id)
                if cfg.dedup and key in seen:
                    continue
                seen.add(key)
                rows.append(_pair_row(cv, c, lv, loser, reason, cfg))
                count += 1
    return rows


def _side(view: TaskView, r: RoundView, cfg: ExportConfig) -> dict[str, Any]:
    return {
        "source": r.source,
        "eval": measurement(r),
        "reward": reward(r, cfg.reward),
        "provenance": provenance(view, r),
    }


def _pair_row(
    cv: TaskView, c: RoundView, lv: TaskView, loser: RoundView, reason: str, cfg: ExportConfig
) -> dict[str, Any]:
    return {
        "id": _row_id("pair", str(cv.run.path), c.round, str(lv.run.path), loser.round, cv.task.id),
        "task_id": cv.task.id,
        "task_name": cv.task.name,
        "level": cv.level,
        "prompt": cv.first_prompt(),
        "chosen": [{"role": "assistant", "content": fenced(c.source or "")}],
        "rejected": [{"role": "assistant", "content": fenced(loser.source or "")}],
        "reason": reason,
        "chosen_info": _side(cv, c, cfg),
        "rejected_info": _side(lv, loser, cfg),
    }


# --------------------------------------------------------------------------- turns


def label(r: RoundView) -> str:
    """A round's kernel in one word: ``verified``, ``hacked`` (an integrity guard rejected it), else the
    evaluation's status (``incorrect``, ``compile_error`` ...) or why there was none (``no_code``, ``llm_error``)."""
    return "verified" if r.verified else "hacked" if r.hacked else r.status


def findings(result: EvalResult | None) -> list[dict[str, Any]]:
    """Every integrity finding of an evaluation, as the schema's structs."""
    return [
        {
            "guard": str(f.get("guard", "")),
            "verdict": str(f.get("verdict", "")),
            "evidence": str(f.get("evidence", ""))[:2000],
        }
        for f in (result.guard_findings if result else [])
    ]


def precision_info(result: EvalResult | None) -> dict[str, Any]:
    """How the candidate's speedup was measured (nulls when untimed)."""
    measured = result.measurement() if result is not None else {}
    best = measured.get("best_allowed")

    def number(key: str) -> float | None:
        value = measured.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    return {
        "reference": measured.get("precision"),
        "over_strict_fp32": number("over_strict_fp32"),
        "best_allowed": str(best) if best is not None else None,
        "over_best_allowed": number("over_best_allowed"),
        "probe_reproduces_win": measured.get("probe_reproduces_win"),
        "launch_inclusive": number("launch_inclusive"),
        "timing_clean": measured.get("timing_clean"),
    }


def profile_metrics(profile: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The metrics the Judge read in a round (its ``profile.json``'s ``judge_metrics``), in order."""
    out = []
    for name, value in ((profile or {}).get("judge_metrics") or {}).items():
        if isinstance(value, dict) and isinstance(value.get("value"), (int, float)):
            out.append(
                {"name": str(name), "value": float(value["value"]), "unit": str(value.get("unit") or ""), "text": None}
            )
        else:
            out.append({"name": str(name), "value": None, "unit": None, "text": str(value)[:500]})
    return out


def _held_out_correct(view: TaskView, r: RoundView) -> bool | None:
    """For the task's best kernel, whether it was correct on every held-out shape (None otherwise, or unchecked)."""
    from cudaforge.report.stats import held_out_summary

    result = view.result
    if result is None or r.candidate_hash != result.best_candidate_hash:
        return None
    correct: bool | None = held_out_summary(result)["correct"]
    return correct


def turn_rows(tasks: list[TaskView], cfg: ExportConfig) -> list[dict[str, Any]]:
    """One row per agent turn: every Coder reply (the kernel's verdict and reward) and every Judge reply (the
    verdict it read and the profiler metrics), failures and rejected hacks included."""
    rows: list[dict[str, Any]] = []
    for view in tasks:
        for r in view.rounds:
            base = {
                "task_id": view.task.id,
                "task_name": view.task.name,
                "level": view.level,
                "round": r.round,
                "verified": r.verified,
                "hacked": r.hacked,
                "positive": not why_not_positive(view, r),
                "not_positive": why_not_positive(view, r),
                "guard_findings": findings(r.eval),
                "precision": precision_info(r.eval),
                "eval": measurement(r),
                "eval_summary": _eval_summary(r),
                "provenance": provenance(view, r),
            }
            transcript = r.transcript()
            if transcript:
                prompt = transcript[:-1] if transcript[-1]["role"] == "assistant" else transcript
                reply = transcript[len(prompt) :]
                own = (r.profile or {}).get("candidate_hash") == r.candidate_hash
                rows.append(
                    {
                        **base,
                        "id": _row_id("turn", str(view.run.path), view.task.id, r.round, "coder"),
                        "role": "coder",
                        "mode": r.coder_mode,
                        "messages": prompt,
                        "completion": reply,
                        "label": label(r),
                        "profile_metrics": profile_metrics(r.profile) if own else [],
                        "feedback": None,
                        "reward": reward(r, cfg.reward),
                        "held_out_correct": _held_out_correct(view, r),
                    }
                )
            judge_mode, judge_messages, judge_text = _judge_part(r)
            if judge_messages:
                prompt = judge_messages[:-1] if judge_messages[-1]["role"] == "assistant" else judge_messages
                rows.append(
                    {
                        **base,
                        "id": _row_id("turn", str(view.run.path), view.task.id, r.round, "judge"),
                        "role": "judge",
                        "mode": judge_mode,
                        "messages": prompt,
                        "completion": judge_messages[len(prompt) :],
                        "label": label(r),
                        "profile_metrics": profile_metrics(r.profile),
                        "feedback": judge_text,
                        "reward": None,
                        "held_out_correct": None,
                    }
                )
    unique: dict[str, dict[str, Any]] = {}
    for row in rows:  # a run directory given twice (itself and its sweep folder) gives its turns once
        unique.setdefault(row["id"], row)
    return list(unique.values())


# --------------------------------------------------------------------------- writing

BUILDERS = {"sft": sft_rows, "trajectories": trajectory_rows, "preferences": preference_rows, "turns": turn_rows}

_DESCRIPTIONS = {
    "sft": "Task prompt -> verified kernel (KernelBench ModelNew format), from cudaforge run directories.",
    "trajectories": "Whole Coder/Judge trajectories (prompts, replies, evaluations, Judge feedback) with a "
    "reward per round, from cudaforge run directories.",
    "preferences": "Preference pairs for the same task and prompt: a verified kernel (chosen) over an incorrect, "
    "hacked or slower one (rejected), from cudaforge run directories.",
    "turns": "Every Coder and Judge turn, labelled with the evaluator's verdict on the kernel (`verified`, `hacked` "
    "where an integrity guard rejected it, else the failure's status), the guard findings, the precision of the "
    "speedup and the profiler metrics the Judge read: verified positives and labelled negatives, from cudaforge run "
    "directories.",
}


@dataclass
class ExportResult:
    """What ``export_dataset`` wrote."""

    format: str
    rows: int
    out_dir: Path
    files: list[Path]
    runs: list[Path]
    notices: list[str] = field(default_factory=list)
    """What the card says first about where the kernels came from (``source_notices``): demo, replayed."""


def _plain(x: Any) -> Any:
    if is_dataclass(x):
        return {k: _plain(v) for k, v in asdict(cast("DataclassInstance", x)).items()}  # a config value, not a class
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return _value(x)


def _card(fmt: str, rows: int, info: dict[str, Any]) -> str:
    import yaml

    # No ``configs`` section: with one, datasets caches a local folder by its name alone (a re-export would load
    # stale rows); without, it finds train.jsonl by name and caches by the file's content.
    meta = {
        "dataset_info": {"features": features(fmt)},
        "tags": ["cudaforge", "gpu-kernels", fmt],
    }
    front = yaml.safe_dump(meta, sort_keys=False, width=120)
    filters = json.dumps(info["export"], sort_keys=True)
    runs = "\n".join(f"- `{r}`" for r in info["runs"])
    notices = "".join(f"> {notice}\n>\n" for notice in info.get("notices", [])).removesuffix(">\n")
    notices += "\n" if notices else ""
    return (
        f"---\n{front}---\n\n# cudaforge {fmt} export\n\n{notices}{_DESCRIPTIONS[fmt]}\n\n"
        f"{rows} rows. Positives are verified candidates only: evaluation status `correct` and no integrity-guard finding with verdict "
        "`reject`. Speedups are null for kernels verified without a GPU (untimed).\n\n"
        f"Runs:\n{runs}\n\nExport settings: `{filters}`\n\n"
        '```python\nimport datasets\nds = datasets.load_dataset("json", data_files="train.jsonl", '
        'split="train")\n```\n'
    )


def write_dataset(rows: list[dict[str, Any]], fmt: str, out_dir: str | Path, info: dict[str, Any]) -> list[Path]:
    """Write ``train.jsonl`` (rows checked against the schema), ``dataset_info.json`` and ``README.md``."""
    schema = SCHEMAS[fmt]
    checked = [conform(row, schema, f"{fmt} row {i}") for i, row in enumerate(rows)]
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    data = out / "train.jsonl"
    tmp = data.with_name(data.name + ".tmp")
    with tmp.open("w") as f:
        for row in checked:
            f.write(json.dumps(row, sort_keys=False, allow_nan=False) + "\n")
    tmp.replace(data)
    meta = {
        "description": _DESCRIPTIONS[fmt],
        "format": fmt,
        "num_rows": len(checked),
        "data_files": ["train.jsonl"],
        "features": features(fmt),
        "schema": schema,
        **info,
    }
    (out / "dataset_info.json").write_text(json.dumps(meta, indent=1) + "\n")
    (out / "README.md").write_text(_card(fmt, len(checked), info))
    return [data, out / "dataset_info.json", out / "README.md"]


def source_notices(runs: list[Path], filters: Filters | None = None) -> list[str]:
    """One line per kind of run whose kernels did not come fresh from a language model (the runs the filters
    keep): the offline demo (model ``scripted/demo``: a hand-written transcript) and replayed runs."""

    def names(found: list[str]) -> str:
        return ", ".join(f"`{n}`" for n in found)

    infos = [info for info in map(run_info, runs) if (filters or Filters()).keeps_run(info)]
    demo = [i.name for i in infos if i.coder_model == DEMO_MODEL]
    demo_judge = [i.name for i in infos if i.judge_model == DEMO_MODEL and i.name not in demo]
    replayed = [i.name for i in infos if i.replayed and i.name not in demo]
    notices = []
    if demo:
        which = "These kernels" if len(demo) == len(infos) else f"The kernels of run(s) {names(demo)}"
        notices.append(
            f"**Demo data, not model output.** {which} come from a hand-written demo transcript "
            f"(model `{DEMO_MODEL}`, cudaforge/resources/demo/), not from a language model; do not use "
            "them as training data or as evidence about any model. They show the export's format."
        )
    if demo_judge:
        notices.append(
            f"**Demo Judge.** In run(s) {names(demo_judge)} the Judge's feedback comes from a hand-written "
            f"demo transcript (model `{DEMO_MODEL}`), not from a language model."
        )
    if replayed:
        notices.append(
            f"**Replayed from cache.** The LLM replies of run(s) {names(replayed)} were served from a "
            "response cache recorded by an earlier run (`llm_cache.mode=replay_only`, or every call a "
            "cache hit), not sampled anew: the same kernels may be in that earlier run's export."
        )
    return notices


def filters_of(cfg: Any) -> Filters:
    """The run and task filters of an ``ExportConfig`` or ``SkillConfig``."""
    return Filters(
        levels=list(cfg.levels),
        models=list(cfg.models),
        strategies=list(cfg.strategies),
        tasks=list(getattr(cfg, "tasks", []) or []),
    )


def build_rows(cfg: ExportConfig) -> list[dict[str, Any]]:
    """The rows of ``cfg.format`` from ``cfg.runs`` (nothing written)."""
    tasks = load_tasks(list(cfg.runs), filters_of(cfg))
    return BUILDERS[ExportFormat(_value(cfg.format)).value](tasks, cfg)


def export_dataset(cfg: ExportConfig) -> ExportResult:
    """Read ``cfg.runs``, build the rows of ``cfg.format``, write them (``cfg.out_dir``, default
    ``<first run>/export/<format>``)."""
    fmt = ExportFormat(_value(cfg.format)).value
    runs = expand_runs(list(cfg.runs))
    rows = build_rows(cfg)
    out_dir = Path(cfg.out_dir).expanduser() if cfg.out_dir else runs[0] / "export" / fmt
    notices = source_notices(runs, filters_of(cfg))
    info = {
        "runs": [str(r) for r in runs],
        "export": _plain(cfg) | {"runs": [str(r) for r in runs]},
        "notices": notices,
    }
    files = write_dataset(rows, fmt, out_dir, info)
    return ExportResult(format=fmt, rows=len(rows), out_dir=out_dir, files=files, runs=runs, notices=notices)
