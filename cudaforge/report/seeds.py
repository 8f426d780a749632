"""Seeds as an axis of a report: runs that differ only in their sampling ``seed`` are one arm.

``cudaforge run -m seed=0,1,2 strategy=cudaforge,one_shot`` makes six run directories; the report reads them as two
arms of three seeds. An arm's row in every table holds, per metric, the mean over its seeds of the per-seed statistic,
and an interval from a bootstrap that resamples seeds and tasks jointly (``stats.seeded_group_stats``). Runs are the
same arm when their configurations are equal once the seed and the keys that do not change what a run measures
(where it writes, how it is reported or tracked, how many tasks ran at once) are left out, and they ran the same
problem set. ``report.pool_seeds=false`` keeps a row per run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cudaforge.report.load import RunData
from cudaforge.report.stats import GroupStats, group_results, seeded_group_stats
from cudaforge.types import TaskResult

NOT_THE_ARM = (
    "seed",
    "output",
    "report",
    "export",
    "skill",
    "plan",
    "rescore",
    "audit",
    "tracker",
    "campaign",
    "concurrency",
    "llm_cache",
    "task",
    "candidate",
)
"""Top-level config keys that do not tell two arms apart."""


def run_seed(run: RunData) -> int:
    """A run's sampling seed (0 for a run made before seeds)."""
    value = run.config.get("seed") if isinstance(run.config, dict) else None
    return int(value) if isinstance(value, (int, float)) else 0


@dataclass
class Arm:
    """Runs of one configuration under distinct seeds (one run: an arm of one seed)."""

    label: str
    """The row's name: the runs' label, with ``(N seeds)`` when there are several."""
    runs: list[RunData]
    """In seed order."""
    seeds: list[int] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    """Task ids every seed has a result for: the pooled statistics' tasks."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Task id -> how many seeds lack it (tasks some seed did not finish, left out of the pooled statistics)."""

    @property
    def pooled(self) -> bool:
        return len(self.runs) > 1

    def per_seed(self, task_ids: list[str] | None = None) -> list[list[TaskResult]]:
        """Each seed's results for ``task_ids`` (default: the shared tasks), in that order."""
        ids = self.shared if task_ids is None else task_ids
        return [[{r.task_id: r for r in run.results}[t] for t in ids] for run in self.runs]


def _arm_key(run: RunData) -> str | None:
    """What makes a run's arm: its configuration without ``NOT_THE_ARM`` and its problem set (None: no config)."""
    if not run.config:
        return None
    config: dict[str, Any] = {k: v for k, v in run.config.items() if k not in NOT_THE_ARM}
    digest = (run.problem_set or {}).get("digest")
    return json.dumps([config, digest, run.base_label], sort_keys=True, default=str)


def arms(runs: list[RunData], pool: bool = True) -> list[Arm]:
    """The runs as arms, in the order of each arm's first run. With ``pool``, runs of one arm key and distinct seeds
    are one arm (a repeated seed starts no pooling: such runs stay one arm each)."""
    if not pool:
        return [_single(run) for run in runs]
    groups: dict[str, list[RunData]] = {}
    order: list[tuple[str, RunData | None]] = []
    for run in runs:
        key = _arm_key(run)
        if key is None:
            order.append(("", run))
            continue
        if key not in groups:
            groups[key] = []
            order.append((key, None))
        groups[key].append(run)
    out = []
    for key, single in order:
        if single is not None:
            out.append(_single(single))
            continue
        members = groups[key]
        seeds = [run_seed(r) for r in members]
        if len(members) == 1 or len(set(seeds)) != len(seeds):
            out += [_single(r) for r in members]
            continue
        members = [r for _, r in sorted(zip(seeds, members), key=lambda pair: pair[0])]
        seeds = sorted(seeds)
        has = [{r.task_id for r in m.results} for m in members]
        shared = sorted(set.intersection(*has))
        every = set.union(*has)
        left_out = {t: sum(1 for h in has if t not in h) for t in sorted(every - set(shared))}
        out.append(Arm(f"{members[0].base_label} ({len(members)} seeds)", members, seeds, shared, left_out))
    return out


def _single(run: RunData) -> Arm:
    return Arm(run.label, [run], [run_seed(run)], [r.task_id for r in run.results])


def arm_stats(arm: Arm, **options: Any) -> dict[str, GroupStats]:
    """Per group (levels, then ``overall``) the pooled statistics of an arm of several seeds (``group_stats``'s
    options)."""
    groups = group_results(arm.per_seed()[0])
    return {
        name: seeded_group_stats(name, arm.per_seed([r.task_id for r in results]), **options)
        for name, results in groups.items()
    }


def arm_notes(arm_list: list[Arm]) -> list[str]:
    """One note per pooled arm: its seeds, its runs, and the tasks left out because a seed lacks them."""
    notes = []
    for arm in arm_list:
        if not arm.pooled:
            continue
        text = (
            f"{arm.label}: seeds {', '.join(map(str, arm.seeds))} ({', '.join(r.path.name for r in arm.runs)}) "
            "pooled: each value is the mean over seeds of the per-seed statistic over the "
            f"{len(arm.shared)} task(s) every seed finished; its interval resamples seeds and tasks jointly."
        )
        if arm.left_out:
            ids = list(arm.left_out)
            text += f" Left out, missing from some seed: {', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''}."
        notes.append(text)
    return notes
