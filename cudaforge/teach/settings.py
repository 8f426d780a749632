"""The teaching layer's settings: ``cudaforge export`` and ``cudaforge skill``.

Registered with Hydra by ``cudaforge/config.py`` (docs/configuration.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# enums their layers define (one definition each), under the names the schemas have always used


class ExportFormat(str, enum.Enum):
    """What ``cudaforge export`` writes (docs/teaching.md)."""

    sft = "sft"  # task prompt -> best verified kernel
    trajectories = "trajectories"  # whole multi-turn runs of a task, with a reward per round
    preferences = "preferences"  # a faster correct kernel over a slower or incorrect one, same task and prompt
    turns = "turns"  # every Coder and Judge turn, labelled with the verdict (hacks as such), findings and metrics


class RewardKind(str, enum.Enum):
    """The reward of a verified-correct round in an exported trajectory."""

    binary = "binary"  # 1
    speedup = "speedup"  # the median speedup (correct x speedup)
    log_speedup = "log_speedup"  # log of the median speedup


class SftPrompt(str, enum.Enum):
    """Which prompt an SFT row pairs with its kernel."""

    first_attempt = "first_attempt"  # the task's first-attempt prompt (no earlier kernel shown)
    round = "round"  # the prompt of the round that wrote the kernel (earlier kernel and feedback shown)


@dataclass
class RewardConfig:
    """The per-round reward of exported trajectories (and preference rows)."""

    kind: RewardKind = RewardKind.speedup
    """Reward of a verified-correct candidate: ``binary``, ``speedup`` or ``log_speedup``."""
    untimed_speedup: float = 1.0
    """The speedup assumed for a verified-correct candidate that was not timed (CPU runs)."""
    max_speedup: float | None = None
    """Clip speedups above this before the reward (null: no clip)."""
    failed: float = 0.0
    """Reward of a candidate that is wrong, does not compile, crashes, times out or is unverified."""
    hacked: float = -1.0
    """Reward of a candidate an integrity guard rejected."""
    no_code: float = 0.0
    """Reward of a round that produced no candidate (unusable reply, LLM error)."""


@dataclass
class ExportConfig:
    """``cudaforge export``: datasets from run directories (docs/teaching.md)."""

    runs: list[str] = field(default_factory=list)
    """Run directories (or sweep folders holding them); ``cudaforge export DIR [DIR ...]`` fills this."""
    format: ExportFormat = ExportFormat.sft
    """``sft``, ``trajectories`` or ``preferences``."""
    out_dir: str | None = None
    """Where train.jsonl, dataset_info.json and README.md go (null: <first run dir>/export/<format>)."""
    levels: list[int] = field(default_factory=list)
    """Keep only tasks of these KernelBench levels (empty: all)."""
    min_speedup: float | None = None
    """Keep only kernels at least this fast (null: no threshold); when set, untimed (CPU) kernels are left out."""
    models: list[str] = field(default_factory=list)
    """Keep only runs whose Coder model matches one of these globs (empty: all)."""
    strategies: list[str] = field(default_factory=list)
    """Keep only runs of these strategies (empty: all)."""
    tasks: list[str] = field(default_factory=list)
    """Keep only task ids matching one of these globs (empty: all)."""
    dedup: bool = True
    """Drop rows whose kernel (sft), kernel pair (preferences) or trajectory repeats one already kept, by the
    hash of the normalised source (comments and formatting removed)."""
    best_only: bool = True
    """sft: only each task's best verified kernel over all runs; false: every verified kernel."""
    sft_prompt: SftPrompt = SftPrompt.first_attempt
    """sft: pair the kernel with the task's first-attempt prompt, or with the prompt of the round that wrote it."""
    min_margin: float = 0.05
    """preferences: between two correct timed kernels, the chosen one is at least this much faster (0.05: 5%)."""
    max_pairs_per_task: int = 16
    """preferences: at most this many pairs per task and prompt."""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """The per-round reward of trajectories."""


@dataclass
class SkillConfig:
    """``cudaforge skill distill`` (and ``skill compare``): skill documents from the Judge's advice."""

    runs: list[str] = field(default_factory=list)
    """Run directories; ``cudaforge skill distill DIR [DIR ...]`` fills this."""
    out: str = "outputs/skills/skill.md"
    """The skill document to write (its ledger, cache and evidence go beside it); ``experiment=skill_with``
    reads it back."""
    model: str | None = None
    """The distilling model (null: the Judge's model and settings)."""
    max_words: int = 300
    """Cap on the words of the distilled guidance (about 1.3 tokens a word); the evidence section is extra."""
    max_evidence: int = 3
    """Evidence lines (task, speedups) listed per bottleneck."""
    min_gain: float = 1.05
    """Advice counts when the kernel written after it is verified and at least this many times faster."""
    allow_untimed: bool | None = None
    """Also count advice followed by a new verified-correct but untimed kernel (CPU runs, the offline demo).
    null: only when no kernel of the runs was timed at all (runs without a GPU), and the skill then says that its
    evidence is untimed; false: never; true: always."""
    levels: list[int] = field(default_factory=list)
    """Keep only tasks of these levels (empty: all)."""
    models: list[str] = field(default_factory=list)
    """Keep only runs whose Coder model matches one of these globs (empty: all)."""
    strategies: list[str] = field(default_factory=list)
    """Keep only runs of these strategies (empty: all)."""
    categories: dict[str, list[str]] = field(default_factory=dict)
    """Bottleneck groups: name -> keywords, matched in order (empty: the built-in memory-bound, occupancy,
    stalls, launch overhead, compute-bound)."""
