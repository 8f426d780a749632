"""Skills: short documents distilled from the Judge's advice that led to verified speedups.

Evidence: a Judge ``optimization`` verdict on a verified kernel in round r, followed in round r+1 by an
``optimize`` step whose new kernel is verified too and at least ``min_gain`` times faster (with
``allow_untimed``, a new verified kernel of unknown speed also counts: CPU runs; the document then says how
much of its evidence is untimed, and without it an untimed run fails with one line naming the option).
Evidence is grouped by bottleneck (keyword rules on the Judge's ``bottleneck`` field, then its method and
plan), rendered with ``agents/skills/distill.j2`` and sent through ``LLMClient`` (ledger row, record/replay
cache). The document
is the model's guidance, cut to ``max_words``, then an evidence section written here (tasks, speedups,
runs), with YAML front matter saying where it came from. ``read_skills`` strips the front matter for the
Coder's prompt (``coder.skills``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cudaforge.llm.settings import LLMConfig
from cudaforge.teach.runs import Filters, TaskView, load_tasks
from cudaforge.teach.settings import SkillConfig
from cudaforge.track.store import LEDGER_FILE, LLM_CACHE_FILE

DEFAULT_CATEGORIES: dict[str, list[str]] = {
    "occupancy": ["occupancy", "register", "blocks per sm", "warps per", "active warps", "spill"],
    "stalls and latency": ["stall", "latency", "scoreboard", "dependency", "barrier", "synchron", "divergen"],
    "launch overhead and fusion": ["launch", "overhead", "fuse", "fusion", "kernel count", "tiny kernel"],
    "compute-bound": [
        "compute-bound",
        "compute bound",
        "tensor core",
        "fma",
        "flop",
        "arithmetic",
        "mma",
        "instruction",
        "throughput of the sm",
        "alu",
    ],
    "memory-bound": [
        "memory",
        "bandwidth",
        "dram",
        "coalesc",
        "l2",
        "l1",
        "cache",
        "traffic",
        "load",
        "store",
        "vectori",
    ],
}
"""Bottleneck groups, matched in this order on the Judge's ``bottleneck`` text, then its method and plan."""
OTHER = "other"
"""The group of advice no keyword matches."""


# --------------------------------------------------------------------------- evidence


@dataclass
class Evidence:
    """One piece of advice and what followed it."""

    task_id: str
    level: int | None
    run: str
    """The run directory's name."""
    round: int
    """The round whose kernel the Judge advised on (the new kernel is round + 1)."""
    before: float | None
    """Speedup of the advised kernel (None: untimed)."""
    after: float | None
    """Speedup of the kernel written after the advice (None: untimed)."""
    advice: dict[str, str]
    """The Judge's fields: bottleneck, optimisation_method, modification_plan, expected_effect."""
    category: str = OTHER
    """The bottleneck group."""

    @property
    def gain(self) -> float | None:
        """after / before (None when either is untimed)."""
        return self.after / self.before if self.before and self.after else None

    @property
    def timed(self) -> bool:
        """Both speedups were measured."""
        return self.gain is not None

    def line(self) -> str:
        """One line for the evidence section."""
        speed = f"{self.before:.2f}x -> {self.after:.2f}x, {self.gain:.2f}x gain" if self.timed else "verified, untimed"
        return f"{self.task_id} ({speed}; rounds {self.round}->{self.round + 1}; run {self.run})"


def categorize(advice: dict[str, Any], categories: dict[str, list[str]] | None = None) -> str:
    """The bottleneck group of one piece of advice (``OTHER`` when no keyword matches)."""
    rules = categories or DEFAULT_CATEGORIES
    texts = [
        str(advice.get("bottleneck", "")),
        " ".join(str(advice.get(k, "")) for k in ("optimisation_method", "modification_plan")),
    ]
    for text in texts:
        low = text.lower()
        for name, words in rules.items():
            if any(w.lower() in low for w in words):
                return name
    return OTHER


def collect_evidence(
    tasks: list[TaskView],
    *,
    min_gain: float = 1.05,
    allow_untimed: bool = False,
    categories: dict[str, list[str]] | None = None,
) -> list[Evidence]:
    """Advice that led to a verified speedup (or, ``allow_untimed``, to a new verified kernel), in task order."""
    out = []
    for view in tasks:
        by_round = {r.round: r for r in view.rounds}
        for r in view.rounds:
            judge = r.judge or {}
            fields = (judge.get("feedback") or {}).get("fields") or {}
            nxt = by_round.get(r.round + 1)
            if judge.get("mode") != "optimization" or not fields or not r.verified or nxt is None:
                continue
            if nxt.coder_mode != "optimize" or not nxt.verified or nxt.candidate_hash == r.candidate_hash:
                continue
            before, after = r.speedup, nxt.speedup
            timed = before is not None and after is not None
            if before is not None and after is not None and after < before * min_gain:  # timed, and too slow
                continue
            if not timed and not allow_untimed:
                continue
            advice = {str(k): str(v) for k, v in fields.items()}
            out.append(
                Evidence(
                    view.task.id,
                    view.level,
                    view.run.name,
                    r.round,
                    r.speedup if timed else None,
                    nxt.speedup if timed else None,
                    advice,
                    categorize(advice, categories),
                )
            )
    return out


def group_evidence(
    evidence: list[Evidence], categories: dict[str, list[str]] | None = None
) -> dict[str, list[Evidence]]:
    """Evidence by group (the groups' order, then ``other``), each best gain first (untimed last)."""
    order = [*(categories or DEFAULT_CATEGORIES), OTHER]
    groups: dict[str, list[Evidence]] = {}
    for name in order:
        items = [e for e in evidence if e.category == name]
        if items:
            groups[name] = sorted(items, key=lambda e: (-(e.gain or 0.0), e.task_id, e.round))
    return groups


def prompt_context(groups: dict[str, list[Evidence]], max_words: int) -> dict[str, Any]:
    """The context of ``skills/distill``."""

    def fmt(x: float | None) -> str:
        return f"{x:.2f}x" if x is not None else "untimed"

    return {
        "groups": [
            {
                "name": name,
                "items": [
                    {
                        "task": e.task_id,
                        "level": e.level,
                        "before": fmt(e.before),
                        "after": fmt(e.after),
                        "gain": f"{e.gain:.2f}x faster" if e.gain else "verified correct, speed not measured",
                        "bottleneck": e.advice.get("bottleneck", ""),
                        "method": e.advice.get("optimisation_method", ""),
                        "plan": e.advice.get("modification_plan", ""),
                        "expected": e.advice.get("expected_effect", ""),
                    }
                    for e in items
                ],
            }
            for name, items in groups.items()
        ],
        "max_words": max_words,
        "untimed": any(not e.timed for items in groups.values() for e in items),
    }


# --------------------------------------------------------------------------- the document


def cap_words(text: str, max_words: int) -> tuple[str, bool]:
    """The text cut to at most ``max_words`` words, at a line end where possible; and whether it was cut."""
    lines, count = text.strip().splitlines(), 0
    kept: list[str] = []
    for line in lines:
        n = len(line.split())
        if count + n > max_words:
            room = max_words - count
            if room > 0 and not kept:
                kept.append(" ".join(line.split()[:room]))
            while kept and (not kept[-1].strip() or kept[-1].lstrip().startswith("#")):
                kept.pop()  # no heading or blank line left dangling at the end
            return "\n".join(kept).strip(), True
        kept.append(line)
        count += n
    return "\n".join(kept).strip(), False


def clean_reply(text: str) -> str:
    """The model's Markdown: a ```markdown fence unwrapped, any evidence section it wrote dropped."""
    text = text.strip()
    fence = re.fullmatch(r"```(?:markdown|md)?\s*\n(.*?)\n```", text, re.S)
    if fence:
        text = fence.group(1).strip()
    return re.split(r"(?im)^#+\s*evidence\b.*$", text)[0].strip()


def word_count(text: str) -> int:
    """Words (whitespace-separated) in a text."""
    return len(text.split())


@dataclass
class SkillDocument:
    """A distilled skill: front matter, guidance and evidence."""

    title: str
    guidance: str
    """The model's text, capped."""
    evidence: dict[str, list[Evidence]]
    """The groups listed in the evidence section (``max_evidence`` per group)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Front matter: source runs, distilling model, request key, counts, caps."""
    notice: str = ""
    """A line shown under the title (how much of the evidence is untimed); empty: none."""

    def body(self) -> str:
        """The document without front matter: what the Coder reads."""
        notice = [f"> {self.notice}", ""] if self.notice else []
        lines = [f"# Skill: {self.title}", "", *notice, self.guidance, "", "## Evidence", ""]
        for name, items in self.evidence.items():
            lines.append(f"- {name}: " + "; ".join(e.line() for e in items))
        return "\n".join(lines).rstrip() + "\n"

    def markdown(self) -> str:
        """The whole file: YAML front matter, then the body."""
        front = yaml.safe_dump(self.meta, sort_keys=False, width=120).strip()
        return f"---\n{front}\n---\n\n{self.body()}"


# --------------------------------------------------------------------------- distillation


@dataclass
class DistillResult:
    """What ``distill`` produced."""

    document: SkillDocument
    path: Path | None
    """Where the document was written (None: not written)."""
    evidence: list[Evidence]
    """All the evidence found (the document lists at most ``max_evidence`` per group)."""
    reply: Any
    """The model's ``LLMReply`` (ledger row included)."""


def untimed_allowed(setting: bool | None, tasks: list[TaskView]) -> bool:
    """``skill.allow_untimed``: true or false as set; null (the default) counts untimed evidence only when no kernel
    of the runs was timed at all (runs without a GPU), where it is the only evidence there is."""
    if setting is not None:
        return bool(setting)
    return not any(r.speedup is not None for t in tasks for r in t.rounds)


def no_evidence_message(
    tasks: list[TaskView], *, min_gain: float, allow_untimed: bool, categories: dict[str, list[str]] | None = None
) -> str:
    """Why nothing can be distilled, in one line, with what to do.

    A run without a GPU times nothing, so its advice can never show a speedup; the way out is
    ``allow_untimed=true`` (advice followed by a new verified-correct kernel of unknown speed), which is not
    the default because such advice has no speedup behind it.
    """
    where = f"{len({t.run.path for t in tasks})} run(s), {len(tasks)} task(s)"
    timed = any(r.speedup is not None for t in tasks for r in t.rounds)
    untimed = (
        [] if allow_untimed else collect_evidence(tasks, min_gain=min_gain, allow_untimed=True, categories=categories)
    )
    if not timed and untimed:
        return (
            f"nothing to distil: no kernel in the {where} was timed (a run without a GPU measures no speedup), "
            f"so no advice can show one; {len(untimed)} piece(s) of Judge advice were followed by a new "
            "verified-correct kernel of unknown speed: add allow_untimed=true to distil those (the skill then "
            "marks its evidence untimed)"
        )
    if untimed:
        return (
            f"no Judge advice led to a verified speedup of at least {min_gain:g}x in the {where}; "
            f"{len(untimed)} piece(s) were followed by a new verified-correct but untimed kernel: "
            "allow_untimed=true counts those (marked untimed), or lower min_gain"
        )
    untimed_too = ", nor to a new verified-correct untimed kernel" if allow_untimed else ""
    return (
        f"no Judge advice led to a verified speedup of at least {min_gain:g}x in the {where}{untimed_too}: "
        "evidence is Judge `optimization` advice followed by an `optimize` round whose new kernel is verified "
        "(lower min_gain to count smaller gains)"
    )


def distill(
    tasks: list[TaskView],
    llm: Any,
    *,
    max_words: int = 300,
    max_evidence: int = 3,
    min_gain: float = 1.05,
    allow_untimed: bool = False,
    categories: dict[str, list[str]] | None = None,
    title: str = "",
    prompts: Any = None,
    sources: list[str] | None = None,
) -> DistillResult:
    """Distil a skill from the runs' tasks with ``llm`` (an ``LLMClient``, or anything with ``complete``).

    ValueError, one line saying what to do, when no advice qualifies (``no_evidence_message``; CPU runs are
    untimed: ``allow_untimed=True`` counts advice followed by a new verified kernel, and the document then
    says which of its evidence is untimed).
    """
    from cudaforge.agents.templates import PromptLibrary

    if max_words < 20:
        raise ValueError(f"skill.max_words must be at least 20, not {max_words}")
    evidence = collect_evidence(tasks, min_gain=min_gain, allow_untimed=allow_untimed, categories=categories)
    if not evidence:
        raise ValueError(
            no_evidence_message(tasks, min_gain=min_gain, allow_untimed=allow_untimed, categories=categories)
        )
    groups = group_evidence(evidence, categories)
    library = prompts or PromptLibrary()
    message = library.render("skills/distill", **prompt_context(groups, max_words))
    reply = llm.complete([{"role": "user", "content": message}], purpose="skill_distill")
    guidance, cut = cap_words(clean_reply(reply.text), max_words)
    model = getattr(getattr(llm, "config", None), "model", None) or "unknown"
    row = getattr(reply, "row", None)
    names = list(groups)
    meta = {
        "skill": title or ", ".join(names),
        "distilled_by": model,
        "request_key": getattr(row, "request_key", None),
        "source_runs": sorted(sources or {str(t.run.path) for t in tasks}),
        "evidence": {
            "advice": len(evidence),
            "tasks": len({e.task_id for e in evidence}),
            "timed": sum(e.timed for e in evidence),
            "min_gain": min_gain,
            "allow_untimed": allow_untimed,
        },
        "max_words": max_words,
        "guidance_words": word_count(guidance),
        "truncated": cut,
    }
    shown = {name: items[:max_evidence] for name, items in groups.items()}
    n_untimed = sum(not e.timed for e in evidence)
    notice = (
        f"Untimed evidence: {n_untimed} of {len(evidence)} piece(s) of advice were followed by a new "
        "verified-correct kernel whose speed was not measured (no GPU), not by a measured speedup."
        if n_untimed
        else ""
    )
    what = (
        "optimisation advice followed by verified, untimed kernels"
        if n_untimed == len(evidence)
        else "optimisation advice that paid off"
    )
    document = SkillDocument(
        title=title or f"{what} ({', '.join(names)})", guidance=guidance, evidence=shown, meta=meta, notice=notice
    )
    return DistillResult(document=document, path=None, evidence=evidence, reply=reply)


def distiller_config(judge: LLMConfig, model: str | None) -> LLMConfig:
    """The distilling model's settings: the Judge's, with ``model`` swapped in when given."""
    return dataclasses.replace(judge, model=model) if model else judge


def distill_from_config(skill: SkillConfig, judge: LLMConfig, cache_cfg: Any) -> DistillResult:
    """``cudaforge skill distill``: read ``skill.runs``, distil with the configured model through an
    ``LLMClient`` (ledger and cache beside ``skill.out``), write the document and its evidence."""
    from cudaforge.llm import Backoff, Ledger, LLMClient, ResponseCache

    out = Path(skill.out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    filters = Filters(levels=list(skill.levels), models=list(skill.models), strategies=list(skill.strategies))
    runs: list[str | Path] = list(skill.runs)
    tasks = load_tasks(runs, filters)
    config = distiller_config(judge, skill.model)
    mode = getattr(cache_cfg.mode, "value", cache_cfg.mode)
    cache = ResponseCache(Path(cache_cfg.path) if cache_cfg.path else out.parent / LLM_CACHE_FILE, mode)
    ledger = Ledger(out.parent / LEDGER_FILE)
    client = LLMClient(
        config,
        role="distiller",
        cache=cache,
        ledger=ledger,
        backoff=Backoff(config.retry_base_delay_s, config.retry_max_delay_s),
    )
    try:
        result = distill(
            tasks,
            client,
            max_words=skill.max_words,
            max_evidence=skill.max_evidence,
            min_gain=skill.min_gain,
            allow_untimed=untimed_allowed(skill.allow_untimed, tasks),
            categories=dict(skill.categories) or None,
            sources=sorted({str(t.run.path) for t in tasks}),
        )
    finally:
        cache.close()
        ledger.close()
    out.write_text(result.document.markdown(), encoding="utf-8")
    evidence = [dict(dataclasses.asdict(e), gain=e.gain) for e in result.evidence]
    out.with_suffix(".evidence.json").write_text(json.dumps(evidence, indent=1) + "\n")
    result.path = out
    return result
