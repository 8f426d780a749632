"""The runner's settings: ``cudaforge integrate``, ``rescore``, ``plan`` and the campaign engine.

Registered with Hydra by ``cudaforge/config.py`` (docs/configuration.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# enums their layers define (one definition each), under the names the schemas have always used


@dataclass
class IntegrateConfig:
    """``cudaforge integrate``: a run's best kernels patched into a whole model and timed end to end."""

    runs: list[str] = field(default_factory=list)
    """Run directories (or sweep folders); ``cudaforge integrate DIR [DIR ...]`` fills this."""
    recipe: str = "tiny_mlp"
    """A bundled recipe (``tiny_mlp``, ``transformer_block``) or a recipe file: the model and which kernels go where
    (docs/reports.md, "In a model")."""
    out_dir: str | None = None
    """Where ``<recipe>.json`` and ``<recipe>.md`` go (null: <first run dir>/integrate, where ``cudaforge report``
    finds them)."""


@dataclass
class RescoreConfig:
    """``cudaforge rescore RUN_DIR eval=...``: a run's kept kernels evaluated again under another protocol."""

    run: str | None = None
    """The run directory whose kernels are rescored (the positional RUN_DIR)."""
    all_rounds: bool = False
    """Every round's kernel, not only each task's best."""


class CampaignEngine(str, enum.Enum):
    """Where a run's tasks run."""

    local = "local"  # in this process, ``concurrency`` at a time
    ray = "ray"  # as Ray tasks over a Ray cluster's nodes (docs/campaigns.md)


@dataclass
class CampaignConfig:
    """How a run's tasks are spread: here, or over a Ray cluster (docs/campaigns.md)."""

    engine: CampaignEngine = CampaignEngine.local
    """``local`` or ``ray``."""
    address: str | None = None
    """The Ray cluster (``auto``: the one this machine belongs to, ``ray://HOST:10001``); null starts a Ray
    instance on this machine."""
    gpus_per_task: float | None = field(default=None, metadata={"min": 0})
    """GPUs each task asks Ray for (null: 1 when the cluster has GPUs, else 0)."""
    cpus_per_task: float = field(default=1.0, metadata={"min": 0})
    """CPUs each task asks Ray for."""
    max_retries: int = field(default=3, metadata={"min": 0})
    """Times a task whose node or worker is lost is run again (elsewhere if need be)."""
    work_dir: str | None = None
    """Where workers keep each task's own run directory (null: the node's temporary folder). On storage every node
    shares, a task retried on another node resumes from its checkpoint and replays its paid LLM calls."""
    outage_trip_after: int = field(default=3, metadata={"min": 1})
    """Tasks in a row stopped by the model's provider (unreachable, rate-limited, failing after every retry) before
    the run pauses: such tasks are not failures, they stay unfinished for a resume (``cudaforge/run/outage.py``)."""
    outage_pause_s: float = field(default=120.0, metadata={"min": 0})
    """How long no task starts once the breaker opened; then one task probes the provider."""
    outage_max_pauses: int = field(default=5, metadata={"min": 0})
    """Pauses in a row without a finished task before the run stops (exit 1; the same command resumes it)."""


@dataclass
class PlanConfig:
    """``cudaforge plan``: what a campaign should cost and take (docs/campaigns.md). The per-call defaults are
    calibrated on the CudaForge paper: o3 as both agents over 10 rounds (19 calls) at litellm's o3 prices gives its
    $0.30 a kernel, and with the H200's stored round time its 26.5 minutes a kernel (§3.6, Table 3)."""

    run: str | None = None
    """A run directory: set its plan beside what it measured (the positional RUN_DIR)."""
    from_run: str | None = None
    """A finished run whose measured tokens, call latencies and round times replace the defaults below."""
    nodes: int = field(default=1, metadata={"min": 1})
    """Machines the campaign is spread over (shards, docs/campaigns.md), each running ``concurrency`` tasks."""
    gpus: int | None = field(default=None, metadata={"min": 1})
    """GPUs per node (null: this machine's count, at least 1)."""
    input_tokens_per_call: int = field(default=4000, metadata={"min": 0})
    """Prompt tokens of one agent call."""
    output_tokens_per_call: int = field(default=1000, metadata={"min": 0})
    """Reply tokens of one agent call, reasoning included."""
    llm_seconds_per_call: float = field(default=80.0, metadata={"min": 0})
    """Seconds one hosted agent call takes (scripted models take none)."""
    round_seconds: float | None = field(default=None, metadata={"min": 0})
    """Seconds of one round besides its LLM calls (null: the stored benchmark for this machine's device)."""
