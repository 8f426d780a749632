"""Typed Hydra configs: one dataclass per config group, registered in Hydra's ConfigStore.

The YAML options under the top-level ``configs/`` folder extend these schemas
(``defaults: [schema]``), so a misspelt key or a bad enum value fails at composition
with Hydra's own error naming the key. See docs/configuration.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Each layer owns its settings (its ``settings.py``); this module puts them together and registers them.
from cudaforge.agents.settings import AgentsConfig, CoderConfig, JudgeMetrics, TemplateSetName
from cudaforge.eval import EvalConfig
from cudaforge.graph.settings import ProfiledKernel, StrategyConfig
from cudaforge.llm.settings import LLMCacheConfig, LLMConfig
from cudaforge.profile.settings import ProfileConfig
from cudaforge.report.settings import ReportConfig
from cudaforge.run.settings import CampaignConfig, CampaignEngine, IntegrateConfig, PlanConfig, RescoreConfig
from cudaforge.tasks.settings import AuditConfig, SuiteConfig, SuiteKind
from cudaforge.teach.settings import ExportConfig, ExportFormat, RewardConfig, RewardKind, SftPrompt, SkillConfig
from cudaforge.track.settings import TrackerConfig, WandbMode

__all__ = [
    "AgentsConfig",
    "AuditConfig",
    "CampaignConfig",
    "CampaignEngine",
    "CoderConfig",
    "CudaforgeConfig",
    "EvalConfig",
    "ExportConfig",
    "ExportFormat",
    "GROUP_SCHEMAS",
    "IntegrateConfig",
    "JudgeMetrics",
    "LLMCacheConfig",
    "LLMConfig",
    "PlanConfig",
    "ProfileConfig",
    "ProfiledKernel",
    "ReportConfig",
    "RescoreConfig",
    "RewardConfig",
    "RewardKind",
    "SftPrompt",
    "SkillConfig",
    "StrategyConfig",
    "SuiteConfig",
    "SuiteKind",
    "TemplateSetName",
    "TrackerConfig",
    "WandbMode",
    "field_limits",
    "mapping_keys",
    "register_configs",
]


@dataclass
class CudaforgeConfig:
    """The whole configuration of every ``cudaforge`` subcommand."""

    suite: SuiteConfig = field(default_factory=SuiteConfig)
    """Which tasks (group ``suite``)."""
    coder: CoderConfig = field(default_factory=CoderConfig)
    """The Coder's model and skills (group ``coder``)."""
    judge: LLMConfig = field(default_factory=LLMConfig)
    """The Judge's model (group ``judge``)."""
    strategy: StrategyConfig = field(default_factory=StrategyConfig)
    """The loop and its budgets (group ``strategy``)."""
    agents: AgentsConfig = field(default_factory=AgentsConfig)
    """What the agents' prompts show (group ``agents``)."""
    llm_cache: LLMCacheConfig = field(default_factory=LLMCacheConfig)
    """The LLM response cache."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """The evaluation protocol (group ``eval``)."""
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    """Profiling (group ``profile``)."""
    tracker: TrackerConfig = field(default_factory=TrackerConfig)
    """W&B (group ``tracker``)."""
    audit: AuditConfig = field(default_factory=AuditConfig)
    """``cudaforge tasks audit`` settings."""
    report: ReportConfig = field(default_factory=ReportConfig)
    """``cudaforge report`` settings."""
    export: ExportConfig = field(default_factory=ExportConfig)
    """``cudaforge export`` settings."""
    skill: SkillConfig = field(default_factory=SkillConfig)
    """``cudaforge skill`` settings."""
    integrate: IntegrateConfig = field(default_factory=IntegrateConfig)
    """``cudaforge integrate`` settings."""
    rescore: RescoreConfig = field(default_factory=RescoreConfig)
    """``cudaforge rescore`` settings."""
    plan: PlanConfig = field(default_factory=PlanConfig)
    """``cudaforge plan`` settings."""
    campaign: CampaignConfig = field(default_factory=CampaignConfig)
    """Where ``cudaforge run``'s tasks run: here or over a Ray cluster."""
    task: str | None = None
    """One task id (``eval``, ``profile``)."""
    candidate: str | None = None
    """A candidate source file (``eval``, ``profile``)."""
    output: str | None = None
    """Where a subcommand writes its JSON result (null: stdout only)."""
    tags: list[str] = field(default_factory=list)
    """Free-form labels recorded with the run (experiment overlays set them)."""
    concurrency: int = field(default=1, metadata={"min": 1})
    """Tasks in flight at once in ``cudaforge run``."""
    seed: int = field(default=0, metadata={"min": 0})
    """The sampling seed of ``cudaforge run``: a run under another seed samples every reply afresh (its LLM requests
    are cached apart, and providers that take a seed get it), so ``cudaforge run -m seed=0,1,2`` repeats each task
    three times independently and ``cudaforge report`` pools the three into one row with intervals over seeds and
    tasks (docs/reports.md). 0: no seed sent, the cache keys of runs made before seeds."""


GROUP_SCHEMAS: dict[str, type] = {
    "suite": SuiteConfig,
    "coder": CoderConfig,
    "judge": LLMConfig,
    "strategy": StrategyConfig,
    "agents": AgentsConfig,
    "eval": EvalConfig,
    "profile": ProfileConfig,
    "tracker": TrackerConfig,
}


def mapping_keys(schema: type | None = None, prefix: str = "") -> set[str]:
    """Dotted keys whose value is a mapping of free names (``strategy.templates``, ``skill.categories``): Hydra's
    struct mode refuses a new name in them (``key={a: b}`` fails with "Key 'a' is not in struct"), so the CLI sets
    them with ``++``."""
    import dataclasses
    import typing

    keys: set[str] = set()
    schema = schema or CudaforgeConfig
    for name, hint in typing.get_type_hints(schema).items():
        if typing.get_origin(hint) is dict:
            keys.add(prefix + name)
        elif dataclasses.is_dataclass(hint):
            keys |= mapping_keys(typing.cast(type, hint), f"{prefix}{name}.")
    return keys


def field_limits(schema: type | None = None, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every dotted key whose field declares its limits beside it (``metadata``: ``min``, ``max``,
    ``positive_or_null``), with them: what ``cudaforge``'s value check reads (``cli/checks.py``)."""
    import dataclasses
    import typing

    found: list[tuple[str, dict[str, Any]]] = []
    schema = schema or CudaforgeConfig
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            found += field_limits(typing.cast(type, hint), f"{prefix}{f.name}.")
        elif f.metadata:
            found.append((prefix + f.name, dict(f.metadata)))
    return found


def register_configs() -> None:
    """Register the schemas: ``cudaforge_schema`` and one ``<group>/schema`` per group."""
    from hydra.core.config_store import ConfigStore  # here: importing this module must not load Hydra

    cs = ConfigStore.instance()
    cs.store(name="cudaforge_schema", node=CudaforgeConfig)
    for group, schema in GROUP_SCHEMAS.items():
        cs.store(group=group, name="schema", node=schema)
