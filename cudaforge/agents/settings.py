"""The agents' settings: the Coder's model and skills (group ``coder``) and what the prompts show (group ``agents``).

Registered with Hydra by ``cudaforge/config.py`` (docs/configuration.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# enums their layers define (one definition each), under the names the schemas have always used
from cudaforge.llm.settings import LLMConfig


@dataclass
class CoderConfig(LLMConfig):
    """The Coder's model, and what its prompts show besides the task (group ``coder``)."""

    skills: list[str] = field(default_factory=list)
    """Skill documents (Markdown, from ``cudaforge skill distill``) shown under a heading in the first-attempt and
    optimize prompts; paths absolute, or relative to the working directory, else to the project root."""
    pool: str | None = None
    """For the search simulator (``coder=simulator``, docs/simulator.md): the pool file its kernels come from; null:
    the packaged pool of the ``tiny`` suite. A path absolute, or relative to the working directory, else to the
    project root, else the file name of a pool packaged with cudaforge (``sim20_pool.yaml``, for ``suite=sim20``)."""


class TemplateSetName(str, enum.Enum):
    """Which set of Coder and Judge templates the agents are prompted with (docs/agents.md)."""

    default = "default"  # our own templates: agents/coder/, agents/judge/
    cudaforge_paper = "cudaforge_paper"  # what the CudaForge paper's agents see, per mode: agents/cudaforge_paper/
    cudaforge_authors = "cudaforge_authors"  # the authors' own prompt builders, from your checkout (authors_root)


class JudgeMetrics(str, enum.Enum):
    """Which of the profiled metrics the Judge's optimisation prompt shows."""

    all = "all"  # every metric the profile's metric set collected
    cudaforge24 = "cudaforge24"  # only the CudaForge paper's 24 (of any set that holds them)
    profile_set = "profile_set"  # what the profile's metric set names, without the duration added to every set


@dataclass
class AgentsConfig:
    """What the agents' prompts show (group ``agents``; docs/agents.md)."""

    template_set: TemplateSetName = TemplateSetName.default
    """The set of templates: ``default`` (ours) or ``cudaforge_paper`` (each agent, in each mode, gets what the
    CudaForge paper's agents get, and answers with their JSON keys). ``strategy.templates`` still swaps single ones."""
    judge_metrics: JudgeMetrics = JudgeMetrics.all
    """The Judge's metric block: ``all`` (whatever ``profile`` collected) or ``cudaforge24`` (only the paper's 24
    metrics, from any metric set that holds them; launch shapes, rules and the roofline left out too)."""
    gpu_spec: str = "local"
    """The GPU spec sheet in the prompts: ``local`` (the GPU the run uses, read from the device), or a GPU of the
    datasheet table named by key or product name (``quadro-rtx-6000``, ``"Quadro RTX 6000"``: the paper's), which
    holds only the name, architecture and datasheet peaks. Profiling and the roofline always use the local GPU."""
    authors_root: str | None = None
    """For ``template_set=cudaforge_authors``: your checkout of github.com/OptimAI-Lab/CudaForge, whose prompt
    builders, few-shot example and GPU sheet make every prompt, as they are (``cudaforge.agents.authors``)."""
    authors_gpu: str | None = None
    """For ``template_set=cudaforge_authors``: the key of the authors' GPU sheet their prompts describe (``H100``,
    ``"Quadro RTX 6000"`` ...; null: the local GPU's name, when it is a key)."""
