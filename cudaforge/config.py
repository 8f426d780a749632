"""Typed Hydra configs: one dataclass per config group, registered in Hydra's ConfigStore.

The YAML options under the top-level ``configs/`` folder extend these schemas
(``defaults: [schema]``), so a misspelt key or a bad enum value fails at composition
with Hydra's own error naming the key. See docs/configuration.md.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# enums their layers define (one definition each), under the names the schemas have always used
from cudaforge.agents.records import Backend as KernelBackend
from cudaforge.eval.settings import BaselineMode, DevicePreference, EvalConfig  # the eval layer defines them
from cudaforge.llm.cache import CacheMode
from cudaforge.llm.settings import LLMConfig
from cudaforge.profile.settings import ProfileConfig
from cudaforge.report.stats import FailedAs
from cudaforge.tasks.audit import EXCLUDED_SEVERITIES, AuditSeverity


class SuiteKind(str, enum.Enum):
    """Where a suite's problem files come from."""

    bundled = "bundled"  # benchmarks/suites/<name>/level<L>/<id>_<Name>.py
    kernelbench = "kernelbench"  # a KernelBench checkout: <root>/level<L>/<id>_<Name>.py
    hf_export = "hf_export"  # KernelBench's Hugging Face export as a local .parquet/.jsonl
    file = "file"  # a single problem file


class WandbMode(str, enum.Enum):
    """Weights & Biases mode."""

    online = "online"
    offline = "offline"
    disabled = "disabled"


@dataclass
class SuiteConfig:
    """Which tasks to load and how to select among them."""

    name: str = "tiny"
    """Suite name; the first part of every task id."""
    kind: SuiteKind = SuiteKind.bundled
    """Loader to use."""
    root: str | None = None
    """KernelBench checkout, export file or problem file; for ``bundled``, null means benchmarks/suites/<name>."""
    levels: list[int] = field(default_factory=list)
    """Keep only these levels (empty: all)."""
    problem_ids: list[int] = field(default_factory=list)
    """Keep only these problem ids (empty: all)."""
    names: list[str] = field(default_factory=list)
    """Keep only tasks whose name matches one of these globs (empty: all)."""
    subset: str | None = None
    """A named subset (``cudaforge_dstar``) or a YAML file mapping level -> problem ids."""
    first_n: int | None = None
    """Keep the first N tasks after the other filters (and after shuffling)."""
    shuffle_seed: int | None = None
    """Shuffle the selection with this seed (null: keep level/id order)."""
    shard_count: int = 1
    """Split the selection into this many shards (every shard_count-th task, after every other filter): each
    shard is run on its own (a SLURM array job, another machine) and ``cudaforge merge`` joins their run
    directories into one (docs/campaigns.md)."""
    shard_index: int = 0
    """Which shard to run, 0 .. shard_count - 1."""
    exclude_flagged: bool = False
    """Leave out the tasks that an audit report (``suite.audit_report``) flags ``hack_enabling`` or ``broken``:
    tasks on which zeros, a constant or an input-blind kernel would pass, or whose reference fails. Applied after
    ``subset`` and before shuffling, ``first_n`` and the shard."""
    audit_report: str | None = None
    """The audit report ``exclude_flagged`` reads (``cudaforge tasks audit ... output=FILE``)."""
    expected_problem_set: str | None = None
    """The problem set a run must find (``cudaforge tasks pin ROOT`` prints it): the digest of the suite's tasks of
    ``levels`` (all levels when empty), before every other filter, or its first 12 or more hex digits. A run on
    another set stops with both digests; the paper overlays pin theirs."""
    allow_other_problem_set: bool = False
    """Run on another problem set than ``expected_problem_set`` all the same; the run records it, and every table of
    ``cudaforge report`` marks the run ``other problem set``."""


@dataclass
class LLMCacheConfig:
    """Record/replay of LLM replies (SQLite)."""

    mode: CacheMode = CacheMode.read_write
    """``off``, ``read_write`` (record) or ``replay_only`` (offline; a miss is an error)."""
    path: str | None = None
    """The cache file (null: <run dir>/llm_cache.sqlite)."""


class ProfiledKernel(str, enum.Enum):
    """Which kernel the profiler measures for the Judge (``strategy.profiled_kernel``)."""

    latest = "latest"  # the kernel the Judge is shown
    best = "best"  # the fastest correct kernel so far (the CudaForge authors' code)


@dataclass
class StrategyConfig:
    """The loop's shape and budgets."""

    name: str = "cudaforge"
    """The strategy's name, as results and reports label it (choose a packaged one with ``strategy=NAME``)."""
    judge_corrects: bool | None = None
    """A failed candidate goes to the Judge (correction) before the Coder repairs it. Strategies are defined in
    YAML alone (``configs/strategy/<name>.yaml``); null here takes the packaged strategy of ``name``'s value."""
    judge_optimizes: bool | None = None
    """A correct candidate goes to the Judge (optimisation) before the Coder optimises it (null: as above)."""
    profile: bool | None = None
    """Correct candidates are profiled; the metrics go to whoever speaks next (null: as above)."""
    metric_set: str | None = None
    """A metric set this strategy insists on, over ``profile.metric_set`` (``full_metrics``: ``full``)."""
    round_cap: int | None = None
    """A round cap this strategy insists on whatever ``max_rounds`` says (``one_shot``: 1; null: none)."""
    max_rounds: int = 10
    """Round budget per task (CudaForge: 10)."""
    max_dollars: float | None = None
    """Dollar budget per task (null: none)."""
    max_minutes: float | None = None
    """Wall-clock budget per task (null: none)."""
    memory_rounds: int = 0
    """How many earlier rounds each agent sees a summary of, besides the latest kernel (CudaForge: 0)."""
    backend: KernelBackend = KernelBackend["any"]  # a member made at run time, from the language registry
    """Which kernel technology the Coder is asked for (the CudaForge paper: ``cuda``)."""
    max_follow_ups: int = 1
    """Follow-up prompts after an unusable reply before the round counts as failed."""
    templates: dict[str, str] = field(default_factory=dict)
    """Template overrides: name (``coder/repair``) -> file path or another template's name."""
    profiled_kernel: ProfiledKernel = ProfiledKernel.latest
    """Whose Nsight Compute metrics the Judge reads: ``latest`` (the kernel it is shown) or ``best`` (the fastest
    correct kernel so far, as the CudaForge authors' main.py profiles it: the paper overlays set it)."""


@dataclass
class TrackerConfig:
    """Where results go besides the run directory."""

    wandb_mode: WandbMode = WandbMode.offline
    """W&B mode; the run directory is the source of truth either way."""
    project: str = "cudaforge"
    """W&B project."""
    entity: str | None = None
    """W&B entity (team)."""
    tags: list[str] = field(default_factory=list)
    """W&B tags."""


@dataclass
class AuditConfig:
    """``cudaforge tasks audit``."""

    device: DevicePreference = DevicePreference.auto
    """Run references on the GPU if there is one, else on the CPU."""
    cpu_variant: str = "small"
    """On the CPU, use this declared input variant (scaled-down shapes) when the task has it."""
    timeout_s: float = 300.0
    """Per-task timeout."""
    min_reference_ms: float = 0.0
    """On a GPU, flag references faster than this (the main suite asks for 0.5 ms)."""
    atol: float = 1e-4
    """Tolerance used to decide that two outputs are the same (tasks' ATOL/RTOL override)."""
    rtol: float = 1e-4
    """Relative tolerance, as ``atol``."""
    batch_size: int = 16
    """Tasks audited one after another in one warm child process (each keeps its own ``timeout_s``)."""
    workers_per_gpu: int = 2
    """Children at a time on each local GPU (every local GPU is used)."""
    cpu_workers: int = 1
    """Children at a time when the audit runs on the CPU."""
    fail_on: list[AuditSeverity] = field(default_factory=lambda: list(EXCLUDED_SEVERITIES))
    """Finding severities that make the command exit 1: ``hack_enabling``, ``broken``, ``note``."""


@dataclass
class ReportConfig:
    """``cudaforge report``: tables and plots from run directories (docs/reports.md)."""

    runs: list[str] = field(default_factory=list)
    """Run directories; ``cudaforge report DIR [DIR ...]`` fills this from its positional arguments."""
    labels: list[str] = field(default_factory=list)
    """One name per run for tables and plots (empty: strategy and models from each run's config, else the
    directory name)."""
    compare: list[str] = field(default_factory=lambda: ["cudaforge_table1"])
    """Published tables to set beside the runs: names from benchmarks/published/*.yaml (empty: none)."""
    failed_as: FailedAs = FailedAs.zero
    """How a task without a correct kernel counts in the median, 75th percentile and Perf."""
    fast_p: list[float] = field(default_factory=lambda: [0.0, 1.0, 1.5, 2.0])
    """Thresholds of fast_p (KernelBench): the share of tasks that are correct with speedup > p."""
    bootstrap: int = 1000
    """Bootstrap resamples of the tasks for the confidence intervals (0: no intervals)."""
    confidence: float = 0.95
    """Confidence level of the intervals."""
    seed: int = 0
    """Seed of the bootstrap: the same report every time."""
    out_dir: str | None = None
    """Where report.md, report.tex, report.csv, scaling.csv and plots/ go (null: <first run dir>/report)."""
    plots: bool = True
    """Write the PNG figures (needs matplotlib: pip install 'cudaforge[report]')."""
    published_dir: str | None = None
    """Folder of published tables (null: benchmarks/published)."""
    baseline: str | None = None
    """A ``baseline.jsonl`` from ``cudaforge baseline``: its medians become the speedups' denominator (null: the
    reference timed beside the candidate, as in the run)."""
    baseline_mode: BaselineMode = BaselineMode.eager
    """Which stored baseline: ``eager`` or ``compile`` (torch.compile)."""
    paired_with: int | None = None
    """Compare every other run with this one task by task (its position among the runs, from 0: an ablation
    multirun's baseline arm); null: only a report of exactly two runs compares them (docs/reports.md)."""
    pool_seeds: bool = True
    """Runs that differ only in their ``seed`` are one row: per metric the mean over seeds, with an interval over
    seeds and tasks (false: a row per run)."""


@dataclass
class CoderConfig(LLMConfig):
    """The Coder's model, and what its prompts show besides the task (group ``coder``)."""

    skills: list[str] = field(default_factory=list)
    """Skill documents (Markdown, from ``cudaforge skill distill``) shown under a heading in the first-attempt and
    optimize prompts; paths absolute, or relative to the working directory, else to the project root."""


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
    gpus_per_task: float | None = None
    """GPUs each task asks Ray for (null: 1 when the cluster has GPUs, else 0)."""
    cpus_per_task: float = 1.0
    """CPUs each task asks Ray for."""
    max_retries: int = 3
    """Times a task whose node or worker is lost is run again (elsewhere if need be)."""
    work_dir: str | None = None
    """Where workers keep each task's own run directory (null: the node's temporary folder). On storage every node
    shares, a task retried on another node resumes from its checkpoint and replays its paid LLM calls."""
    outage_trip_after: int = 3
    """Tasks in a row stopped by the model's provider (unreachable, rate-limited, failing after every retry) before
    the run pauses: such tasks are not failures, they stay unfinished for a resume (``cudaforge/run/outage.py``)."""
    outage_pause_s: float = 120.0
    """How long no task starts once the breaker opened; then one task probes the provider."""
    outage_max_pauses: int = 5
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
    nodes: int = 1
    """Machines the campaign is spread over (shards, docs/campaigns.md), each running ``concurrency`` tasks."""
    gpus: int | None = None
    """GPUs per node (null: this machine's count, at least 1)."""
    input_tokens_per_call: int = 4000
    """Prompt tokens of one agent call."""
    output_tokens_per_call: int = 1000
    """Reply tokens of one agent call, reasoning included."""
    llm_seconds_per_call: float = 80.0
    """Seconds one hosted agent call takes (scripted models take none)."""
    round_seconds: float | None = None
    """Seconds of one round besides its LLM calls (null: the stored benchmark for this machine's device)."""


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
    concurrency: int = 1
    """Tasks in flight at once in ``cudaforge run``."""
    seed: int = 0
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


def register_configs() -> None:
    """Register the schemas: ``cudaforge_schema`` and one ``<group>/schema`` per group."""
    from hydra.core.config_store import ConfigStore  # here: importing this module must not load Hydra

    cs = ConfigStore.instance()
    cs.store(name="cudaforge_schema", node=CudaforgeConfig)
    for group, schema in GROUP_SCHEMAS.items():
        cs.store(group=group, name="schema", node=schema)
