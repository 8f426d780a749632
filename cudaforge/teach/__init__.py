"""Teaching open models from runs: datasets of verified kernels, and distilled skills (docs/teaching.md).

- ``export_dataset`` / ``build_rows``: ``cudaforge export`` (formats ``sft``, ``trajectories``,
  ``preferences``); ``sft_rows``, ``trajectory_rows``, ``preference_rows`` build the rows of each.
- ``verified`` / ``guard_rejected``: what counts as a positive (correct, no integrity rejection).
- ``load_tasks`` / ``load_run_view``: run directories read round by round from their files.
- ``distill`` / ``distill_from_config``: ``cudaforge skill distill``; ``read_skills`` for ``coder.skills``.
- ``skill_effect``: ``cudaforge skill compare``, the paired with/without-skill difference.

Nothing here is needed for a run to succeed.
"""

from cudaforge.agents.skills import read_skills  # read by the Coder; re-exported beside distill
from cudaforge.teach.experiment import Effect, effect_table, skill_effect
from cudaforge.teach.export import (
    ExportResult,
    build_rows,
    export_dataset,
    preference_rows,
    reward,
    sft_rows,
    trajectory_rows,
    write_dataset,
)
from cudaforge.teach.runs import (
    Filters,
    RoundView,
    RunView,
    TaskView,
    expand_runs,
    guard_rejected,
    load_run_view,
    load_tasks,
    normalized_source_hash,
    verified,
)
from cudaforge.teach.schema import SCHEMAS, SchemaError, conform
from cudaforge.teach.skills import (
    DistillResult,
    Evidence,
    SkillDocument,
    collect_evidence,
    distill,
    distill_from_config,
)

__all__ = [
    "SCHEMAS",
    "DistillResult",
    "Effect",
    "Evidence",
    "ExportResult",
    "Filters",
    "RoundView",
    "RunView",
    "SchemaError",
    "SkillDocument",
    "TaskView",
    "build_rows",
    "collect_evidence",
    "conform",
    "distill",
    "distill_from_config",
    "effect_table",
    "expand_runs",
    "export_dataset",
    "guard_rejected",
    "load_run_view",
    "load_tasks",
    "normalized_source_hash",
    "preference_rows",
    "read_skills",
    "reward",
    "sft_rows",
    "skill_effect",
    "trajectory_rows",
    "verified",
    "write_dataset",
]
