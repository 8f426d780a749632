"""The evaluation layer's settings: the protocol's fields and the enums they take, defined once.

Plain dataclasses and enums that import nothing heavy (no torch, no Hydra): the evaluator takes its defaults from
:class:`EvalConfig` (``Evaluator()`` with no config evaluates under exactly these), and ``cudaforge/config.py``
registers the same class with Hydra's ConfigStore as the ``eval`` group's schema.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cudaforge.eval.guards.catalog import all_guards
from cudaforge.proc.sandbox import SandboxMode
from cudaforge.types import DevicePreference  # the task audit's too: defined below both layers


class BaselineMode(str, enum.Enum):
    """What the candidate's speedup is measured against."""

    eager = "eager"
    compile = "compile"


class JitAhead(str, enum.Enum):
    """When the kernels of a JIT language that can be built ahead (Triton) are compiled before the correctness
    phase (docs/isolation.md, "JIT kernels compiled ahead")."""

    pool = "pool"
    """In the CPU pool of a batch (``evaluate_batch``), for the GPU's architecture; a single evaluation leaves them
    to their first call."""
    compile = "compile"
    """Also in the compile phase of a GPU evaluation the pool did not prepare, in a fresh CPU-only process (its
    start costs seconds; the correctness phase then compiles nothing)."""
    off = "off"
    """Never: they compile at their first call, in the correctness phase."""


HIDDEN_DISTRIBUTIONS = ("x3", "x0.01", "negated", "offset", "wide")
"""The hidden input distributions derived from a task's ``get_inputs`` (``cudaforge.eval.hidden`` says what each
does and why)."""


class GuardPolicy(str, enum.Enum):
    """What an integrity guard does when it fires (docs/guards.md, "Integrity guards")."""

    reject = "reject"  # the result is ``rejected`` (or ``incorrect``), with the guard's evidence
    report = "report"  # the candidate goes on; the finding is kept in ``EvalResult.guard_findings``


class TorchOpsPolicy(str, enum.Enum):
    """How PyTorch compute inside ``ModelNew.forward`` is judged."""

    strict = "strict"  # only allocation, views, reshapes and the candidate's own kernels
    lenient = "lenient"  # PyTorch ops allowed (KernelBench's partial replacement), reported and measured


class WeightsMode(str, enum.Enum):
    """How the candidate's model gets its weights."""

    seed = "seed"  # built with the reference's seed, nothing copied (KernelBench's harness)
    copy_matching = "copy_matching"  # the reference's parameters copied in where names and shapes match (reported)
    authors = "authors"  # the CudaForge authors' aligner: by name, then by a unique shape, then shape mappings


class OutputsCompared(str, enum.Enum):
    """Which outputs the correctness check compares."""

    all = "all"  # every output, in the reference's structure, shape and dtype (our protocol)
    first = "first"  # only the first tensor of each, cast to the reference's dtype, torch.allclose (the CudaForge code)


class SpeedupStatistic(str, enum.Enum):
    """How a speedup is computed from the timed calls."""

    median = "median"  # median(reference) / median(candidate) (our protocol)
    mean = "mean"  # mean(reference) / mean(candidate) (the CudaForge code)


class Tf32Mode(str, enum.Enum):
    """TF32 in fp32 matmuls and convolutions while the reference and the candidate run."""

    off = "off"  # both off: fp32 references are fp32-accurate (our protocol)
    torch_default = "torch_default"  # PyTorch's defaults (cuDNN convolutions in TF32; the CudaForge code leaves them)
    on = "on"  # TF32 in matmuls and cuDNN convolutions (``set_float32_matmul_precision("high")``: KernelBench-Verified)


class GuardPoliciesBase:
    """What each integrity guard does when it fires, under its own name: ``eval.guards.<guard>`` is ``reject`` or
    ``report`` (docs/guards.md, "Integrity guards"; ``guards_enforce=false`` makes every rejection a report).
    :class:`GuardPolicies` is made from the guards' definitions (:mod:`cudaforge.eval.guards.catalog`): one field per
    guard with a policy of its own, its default the guard's. A config written before 2026-12-05 named them
    ``eval.guard_<guard>``: :meth:`EvalConfig.from_dict` still reads those, and the command line says the new name."""

    def __setattr__(self, name: str, value: Any) -> None:
        """Each policy checked whenever it is set: ``reject`` or ``report`` (``ValueError`` naming
        ``eval.guards.<guard>``)."""
        if name in _policy_names():
            value = _checked(f"guards.{name}", GuardPolicy, {}, value)
        object.__setattr__(self, name, value)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GuardPolicies:
        """The policies of ``data`` over the defaults; an unknown guard is a ``ValueError`` that names it."""
        if isinstance(data, GuardPoliciesBase):
            return typing.cast(GuardPolicies, dataclasses.replace(typing.cast(Any, data)))
        if not isinstance(data, Mapping):
            raise ValueError(f"eval.guards={data!r}: expected a mapping of guard names to reject or report")
        unknown = sorted(str(k) for k in data if k not in _policy_names())
        if unknown:
            raise ValueError(
                f"unknown guard(s) in eval.guards: {', '.join(unknown)} (known: {', '.join(sorted(_policy_names()))})"
            )
        return GuardPolicies(**{str(k): data[k] for k in data})

    def to_dict(self) -> dict[str, str]:
        """Each policy's name."""
        return {f.name: getattr(self, f.name).value for f in dataclasses.fields(typing.cast(Any, self))}


def _guard_policies() -> type[GuardPoliciesBase]:
    """The dataclass of every guard's policy, from the guards' definitions."""
    fields = [
        (g.name, GuardPolicy, field(default=GuardPolicy(g.default), metadata={"doc": g.what}))
        for g in all_guards()
        if g.own_policy
    ]
    made = dataclasses.make_dataclass("GuardPolicies", fields, bases=(GuardPoliciesBase,))
    made.__module__, made.__doc__ = __name__, GuardPoliciesBase.__doc__
    return typing.cast(type[GuardPoliciesBase], made)


if typing.TYPE_CHECKING:

    class GuardPolicies(GuardPoliciesBase):
        """Each guard's policy by name (made from the guards' definitions)."""

        def __init__(self, **policies: GuardPolicy | str) -> None: ...
        def __getattr__(self, name: str) -> GuardPolicy: ...

else:
    GuardPolicies = _guard_policies()


@functools.cache
def _policy_names() -> frozenset[str]:
    return frozenset(g.name for g in all_guards() if g.own_policy)


LEGACY_GUARD_PREFIX = "guard_"
"""``eval.guard_<guard>``: how a guard's policy was named before ``eval.guards.<guard>`` (read from old configs)."""


def _plain(value: Any) -> Any:
    return getattr(value, "value", value)


def upgrade_saved(data: Mapping[str, Any]) -> dict[str, Any]:
    """An eval config as written before the guard policies were nested (``guard_<guard>`` keys), as it is written
    now (``guards: {<guard>: ...}``); both forms of one guard given with different policies is a ``ValueError``;
    other keys as they are, nothing else checked. What reads a saved config (a run's ``.hydra/config.yaml``, a payload) reads it through this."""
    data = dict(data)
    legacy = {
        str(k)[len(LEGACY_GUARD_PREFIX) :]: data.pop(k)
        for k in list(data)
        if str(k).startswith(LEGACY_GUARD_PREFIX) and str(k)[len(LEGACY_GUARD_PREFIX) :] in _policy_names()
    }
    if legacy:
        given = data.get("guards") or {}
        given = given.to_dict() if isinstance(given, GuardPolicies) else dict(given)
        clash = sorted(k for k in legacy if k in given and _plain(given[k]) != _plain(legacy[k]))
        if clash:  # never in a saved config: a merge of an old key over new settings, which must not pass silently
            raise ValueError(
                "; ".join(
                    f"eval.{LEGACY_GUARD_PREFIX}{k}={_plain(legacy[k])} and eval.guards.{k}={_plain(given[k])}"
                    for k in clash
                )
                + " disagree: name each guard's policy once, as eval.guards.<guard>"
            )
        data["guards"] = {**given, **legacy}
    return data


@dataclass
class EvalConfig:
    """The evaluation protocol (docs/evaluation.md states it in full)."""

    correctness_trials: int = field(default=5, metadata={"min": 1})
    """Correctness trials, each with fresh seeded inputs."""
    check_variants: bool = True
    """Also check the input variants a task declares (distributions, second shapes)."""
    hidden_inputs: list[str] = field(
        default_factory=lambda: list(HIDDEN_DISTRIBUTIONS), metadata={"choices": HIDDEN_DISTRIBUTIONS}
    )
    """Hidden input distributions checked after the scored trials, each derived from the task's ``get_inputs``
    (``x3``, ``x0.01``, ``negated``, ``offset``, ``wide``; docs/checks.md, "Beyond the scored inputs"); a
    distribution under which the reference itself degenerates is dropped, said why (``[]``: none)."""
    hidden_inputs_show_values: bool = False
    """A wrong output on a hidden distribution tells the agents which distribution failed and how large the error was;
    true also shows them the worst elements' values (the values of the default and declared inputs are always
    shown)."""
    vary_parameters: bool = True
    """The reference's floating parameters and buffers that are built constant (a scale of ones, a bias of zeros, a
    norm's affine, running statistics) get seeded values as they are registered, on both sides alike, so a kernel
    that ignores one is wrong; a candidate whose tensors do not match the reference's is evaluated with the initial
    values and carries a ``parameters_not_varied`` finding (docs/checks.md, "Parameters away from their initial
    values")."""
    fp64_reference: bool = True
    """Evaluate the reference in float64 too: a hidden distribution or varied parameters under which the reference's
    fp32 output disagrees with its fp64 one are dropped, and each output's error against fp64 names a precision drop
    (the ``precision_fp64`` finding)."""
    fp64_max_gb: float = field(default=8.0, metadata={"min": 0})
    """The most memory an fp64 evaluation of the reference may take (its inputs and outputs at twice their size),
    and never more than half the device's free memory: a larger one is not made, and ``checks["fp64"]`` says so (the
    hidden distributions are then judged by finiteness alone)."""
    precision_fp64_ratio: float = field(default=32.0, metadata={"min": 1})
    """``precision_fp64`` fires when the candidate's median error against the fp64 reference exceeds this multiple
    of the fp32 reference's own (at least a quarter of the output dtype's unit roundoff)."""
    held_out_decides: bool = False
    """A task's kernel that fails a held-out shape is not correct: the loop keeps the fastest correct kernel that
    passes every held-out shape, ``cudaforge eval`` and ``cudaforge rescore`` say ``incorrect`` (the report keeps the
    scored verdict beside it). False: held-out verdicts are reported only."""
    held_out_shapes: bool = True
    """After the loop, check each task's best kernel on shapes it never saw, derived from the task's top-level sizes
    (a non-power-of-two one and a larger one; docs/correctness.md, "Held-out shapes"), and time it there on a GPU. The
    verdicts are kept in ``TaskResult.held_out`` and tabled by ``cudaforge report``; they change no verdict of the
    loop."""
    compile_beside: bool = True
    """On a GPU, after the loop, time each task's reference under ``torch.compile`` beside eager (cached per task, GPU
    model, torch and mode), so the report gives every speedup over torch.compile too (docs/correctness.md, "torch.compile
    beside eager"). Off, or with ``baseline=compile``, nothing is added."""
    compile_beside_mode: str = "max-autotune"
    """The torch.compile mode timed beside eager."""
    held_out_max_input_mb: int = 4096
    """A held-out shape whose inputs are larger than this is skipped, said why (on a CPU at most 64 MiB)."""
    atol_fp32: float = 1e-4
    """Absolute tolerance for fp32 outputs (a task's ATOL overrides it)."""
    rtol_fp32: float = 1e-4
    """Relative tolerance for fp32 outputs (a task's RTOL overrides it)."""
    atol_half: float = 1e-2
    """Absolute tolerance for fp16/bf16 outputs."""
    rtol_half: float = 1e-2
    """Relative tolerance for fp16/bf16 outputs."""
    timing_trials: int = field(default=100, metadata={"min": 1})
    """Timed calls of each of reference and candidate (interleaved): the most, when the timing may stop early."""
    timing_min_trials: int = field(default=25, metadata={"min": 2})
    """Kept trials before the interleaved timing may stop early (looked at again every ``timing_stop_every``): it
    stops once the paired speedup's 95% interval is within ``timing_stop_halfwidth`` of the speedup, on average on either
    side. The rule fixes the interval's width, not where it lies, so a speedup that looks good stops nothing early.
    At least ``timing_trials``: always ``timing_trials``."""
    timing_stop_halfwidth: float = field(default=0.01, metadata={"min": 0})
    """The interval's relative half-width at which the timing stops early (0: never; ``timing_min_trials``)."""
    timing_stop_every: int = field(default=5, metadata={"min": 1})
    """Kept trials between two looks of the early stop once ``timing_min_trials`` are kept (inside a telemetry batch
    too: a batch cut short by the stop is read at its end like any other). One look costs a few milliseconds of the
    verifier's time between trials, never inside a timed call."""
    warmup: int = field(default=10, metadata={"min": 0})
    """Untimed trials before the timed ones, the launch-inclusive series (``launch_inclusive_trials`` and its 2
    warm-ups, run first) among them, with at least 2 (or all, when fewer are set) under the main series' own
    stopwatch (``verifier.timing.main_warmup``)."""
    flush_l2: bool = True
    """Flush the L2 cache before each timed call."""
    poison_memory: bool = True
    """Fill the GPU's free memory with NaN bytes before each candidate call, so a kernel that reads what it never wrote
    fails (the ``uninitialised_memory`` guard). The CudaForge authors' harness does not (``eval=cudaforge_authors``)."""
    stricter_checks_decide: bool = True
    """A wrong output in a timed call, the cross-check or the launch-inclusive calls makes the candidate
    ``incorrect``; false keeps it as a reported ``timed_output`` finding and lets the correctness trials alone decide
    (the authors' harness checks one forward per input set: ``eval=cudaforge_authors``)."""
    launch_inclusive_trials: int = field(default=6, metadata={"min": 0})
    """Trials timed again the way KernelBench and the CudaForge paper time (no lead, no L2 flush), outputs checked,
    for ``EvalResult.launch_inclusive`` beside our number (0: not measured)."""
    precision_probe: bool = True
    """Run the reference under TF32 and in bf16 through the task's tolerance and time it alone
    (``EvalResult.precision``): the speedup over strict fp32, over the best precision the tolerance allows, and a flag
    where that precision alone reproduces the candidate's win."""
    telemetry_batch: int = field(default=25, metadata={"min": 1})
    """Kept trials per batch between two readings of the GPU's clocks, temperature, power and throttle reasons."""
    telemetry_remeasure: int = field(default=2, metadata={"min": 0})
    """Batches measured again, at most, per evaluation when the GPU was throttled or its clock off (0: never)."""
    timing_lead_us: float = field(default=500.0, metadata={"min": 0, "max": 100_000})
    """Microseconds of GPU spin queued before each timed call's start event. The host then launches the call's
    first kernel while the GPU is still busy, so the event time is GPU time: it leaves out that launch's host
    latency, and the host's jitter with it (on an H200 five evaluations of one pair spread 0.04% with the default
    lead, 4.9% without). 0 is KernelBench's launch-inclusive protocol (the CudaForge paper's); docs/evaluation.md."""
    baseline: BaselineMode = BaselineMode.eager
    """Time the reference eagerly or under torch.compile."""
    compile_mode: str = "default"
    """torch.compile mode for the ``compile`` baseline."""
    seed: int = 42
    """Base seed for inputs and weights."""
    device: DevicePreference = DevicePreference.auto
    """Where candidates run."""
    devices: list[int] = field(default_factory=list)
    """GPU indices to use (empty: all visible)."""
    static_timeout_s: float = 30.0
    """Timeout for the static check (the analysis of the source, in a child process of its own; a source it cannot
    finish within this is ``invalid``), and for the worker's start-up."""
    static_memory_gb: float = 2.0
    """Address space the static analysis's child may use (RLIMIT_AS), in GiB; a source that needs more is
    ``invalid``. A 1 MB source of plain functions took about 0.35 GB."""
    max_source_bytes: int = 1 << 20
    """The largest candidate source (bytes of UTF-8) that is analysed or run: a larger one is ``invalid`` before
    anything parses it. KernelBench kernels, CUDA sources inlined, take well under 100 KB; the analysis of a 1 MB
    source took about 30 s on a CPU core."""
    compile_timeout_s: float = 600.0
    """Timeout for building the candidate."""
    jit_ahead: JitAhead = JitAhead.pool
    """When Triton kernels are compiled before the correctness phase, by running ``forward`` once on fake tensors of
    the task's inputs with launches made compile-only: ``pool`` (in a batch's CPU pool), ``compile`` (also in the
    compile phase of an evaluation the pool did not prepare) or ``off`` (docs/evaluation.md)."""
    correctness_timeout_s: float = 300.0
    """Timeout for the correctness trials."""
    timing_timeout_s: float = 300.0
    """Timeout for the timed trials."""
    gpu_wait_timeout_s: float = 3600.0
    """How long a worker may wait for its GPU's lock (held by another candidate's timing or a profile)
    before the timed trials; the wait is not charged to ``timing_timeout_s``."""
    build_cache_dir: str | None = None
    """Where compiled candidates are cached (null: ~/.cache/cudaforge/build)."""
    build_cache_max_gb: float = field(default=20.0, metadata={"min": 0})
    """Size limit of the build cache's builds and kept Triton kernels, in GB (0: none): after each new build the
    least recently used entries are removed until the rest fits; entries in use are kept, precompiled headers
    are not counted (docs/evaluation.md, "Caches"; ``cudaforge cache info``)."""
    target_arch: str | None = None
    """CUDA arch to build for, e.g. ``9.0`` (null: the visible GPU's, or 9.0 without a GPU)."""
    guards_enforce: bool = True
    """Guards act on their policies; false turns every guard's rejection into a report (fault-path tests,
    ablations of the guards)."""
    torch_ops: TorchOpsPolicy = TorchOpsPolicy.lenient
    """PyTorch compute in ModelNew.forward (torch.matmul, F.conv2d, nn layers, ...): ``strict`` rejects it, and
    on a GPU a candidate whose GPU time is mostly library kernels; ``lenient`` reports it with the share."""
    guards: GuardPolicies = field(default_factory=GuardPolicies)
    """Each guard's policy, under the guard's name (``eval.guards.hidden_work=report``; :class:`GuardPolicies`)."""
    hidden_work_ms: float = 0.05
    """hidden_work fires when the candidate's median host-minus-event gap exceeds the reference's by more than
    this many ms and by more than half the candidate's event time."""
    speed_of_light_margin: float = 0.5
    """speed_of_light fires below this fraction of the floor (the floor uses the fastest peak of any dtype)."""
    library_share_max: float = 0.5
    """Under ``torch_ops=strict``, the largest share of GPU time library kernels (aten, cuBLAS, cuDNN) may take."""
    crosscheck_calls: int = field(default=8, metadata={"min": 2})
    """Calls in the timing cross-check's batch (fewer when their inputs and outputs exceed ``crosscheck_max_gb``,
    never fewer than 2)."""
    crosscheck_max_gb: float = field(default=8.0, metadata={"min": 0})
    """GPU memory the cross-check's batch may hold (inputs and outputs of all its calls) beyond its first two calls,
    which always run unless the GPU's free memory cannot hold them (then a guard note says it did not run)."""
    crosscheck_ratio: float = field(default=1.5, metadata={"min": 1})
    """timing_crosscheck fires when the verifier's time per call exceeds this multiple of the reported median ..."""
    crosscheck_slack_ms: float = field(default=0.25, metadata={"min": 0})
    """... and the part of it no reported time or reference overhead explains exceeds this many ms per call, or the
    timing lead when longer (host launch costs of honest kernels stay under both; docs/evaluation.md says what a lie
    below them can gain)."""
    reference_slowdown_tolerance: float = field(default=0.2, metadata={"min": 0})
    """reference_slowdown fires when the reference's median beside the candidate exceeds its median alone by this
    fraction (and by 5 us)."""
    sandbox: SandboxMode = SandboxMode.auto
    """Candidates, and the compiler on their sources, run sandboxed (cudaforge.proc.sandbox): ``auto`` and ``required``
    refuse to evaluate (status ``unsupported``) where this machine cannot give the sandbox's wall (namespaces, a
    minimal root, an unprivileged uid, a seccomp filter); under ``auto``, ``allow_weak_sandbox`` runs them anyway;
    ``off`` only for tests of the unsandboxed behaviour (docs/threat-model.md, "Threat model")."""
    allow_weak_sandbox: bool = False
    """With ``sandbox=auto``: evaluate even where a part of the sandbox's wall is missing, with what this machine
    offers; every result made so says it (its fingerprint's sandbox summary starts with ``WEAK``)."""
    sandbox_namespaces: bool = True
    """Give each sandbox new pid, network, mount and IPC namespaces. Off only where they break a tool: the wall is
    then missing (see ``allow_weak_sandbox``)."""
    sandbox_memory_gb: float = field(default=16.0, metadata={"min": 0})
    """Memory the candidate's processes may hold together (a memory cgroup, where this machine delegates one; 0: no
    limit). Past it the kernel ends the candidate's process, which fails as ``crashed``; nothing outside is hurt."""
    sandbox_scratch_gb: float = field(default=2.0, metadata={"min": 0})
    """Size quota of the candidate's scratch folder and of its private /tmp, each (a tmpfs of its own: needs root;
    0: none). A write past it fails with "No space left on device"."""
    sandbox_scratch_files: int = field(default=50_000, metadata={"min": 0})
    """Files and folders each of the two may hold."""
    weights: WeightsMode = WeightsMode.seed
    """How ModelNew gets its weights: the reference's seed, as KernelBench does (init-time transforms stay), or
    ``copy_matching`` (the reference's matching tensors copied in; the result says how many), or ``authors`` (the
    CudaForge authors' aligner: a single convolution weight as it is or transposed, else by name, then by a shape
    only one tensor on each side has, then shape mappings; ``cudaforge.eval.align``)."""
    standby_workers: bool = True
    """On a GPU, start the next candidate's worker (a fresh process: imports, CUDA context, fingerprint caches)
    while this one is evaluated, so each candidate skips that start-up. Every candidate still gets its own process.
    Only with a timing lead: under ``timing_lead_us=0`` every candidate starts cold (docs/evaluation.md)."""
    compare_outputs: OutputsCompared = OutputsCompared.all
    """``all`` outputs in the reference's structure, or only the ``first`` tensor of each, cast to the reference's
    dtype and compared by ``torch.allclose`` (shapes that broadcast pass as allclose broadcasts them): the CudaForge
    authors' check (``eval=cudaforge_paper``)."""
    equal_nan: bool = True
    """A NaN where the reference has NaN matches. False: every NaN fails, as ``torch.allclose`` by default does."""
    fresh_inputs: bool = True
    """Every timed call gets inputs never seen before (from a secret seed). False: the same inputs for every call,
    warm-up included, as the CudaForge code times (the result_caching guard can then not tell a cached result)."""
    interleave: bool = True
    """Reference and candidate timed in alternating trials. False: all of the reference's calls, then all of the
    candidate's, as the CudaForge code times (needs ``fresh_inputs=false``)."""
    speedup_statistic: SpeedupStatistic = SpeedupStatistic.median
    """``median`` or ``mean`` of each side's timed calls, the ratio of the two being the speedup."""
    deterministic: bool = False
    """Deterministic cuDNN and cuBLAS in the verifier and the worker (``cudnn.deterministic``, no cuDNN benchmark,
    ``use_deterministic_algorithms(warn_only)``, ``CUBLAS_WORKSPACE_CONFIG``), as the CudaForge code sets them."""
    no_grad: bool = True
    """Reference and candidate run under ``torch.no_grad()``. False: with autograd recording where parameters need
    gradients, as the CudaForge code runs both (it slows references with trainable parameters)."""
    tf32: Tf32Mode = Tf32Mode.off
    """TF32 off for fp32 matmuls and convolutions, PyTorch's defaults (``torch_default``: cuDNN convolutions may use
    TF32), or ``on`` in both (KernelBench-Verified's baseline)."""

    def __setattr__(self, name: str, value: Any) -> None:
        """Every field checked against its type and limits whenever it is set, at construction and after
        (``ValueError`` naming ``eval.<field>``); enum fields given as their names become the enums."""
        known = _field_types().get(name)
        if known is not None:
            kind, limits = known
            value = _checked(name, kind, limits, value)
        object.__setattr__(self, name, value)

    def __post_init__(self) -> None:
        """The rule between two fields (checked when the settings are made: change both with ``replace``)."""
        if not self.interleave and self.fresh_inputs:
            raise ValueError(
                "eval.interleave=false times the reference's calls before the candidate's, which needs "
                "the same inputs for both: set eval.fresh_inputs=false too"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalConfig:
        """The settings of ``data`` (a dict, a DictConfig, or what ``to_dict`` wrote) over the defaults, checked; an
        unknown key is a ``ValueError`` that names it."""
        names = {f.name for f in dataclasses.fields(cls)}
        data = upgrade_saved(data)
        unknown = sorted(str(k) for k in data if k not in names)
        if unknown:
            raise ValueError(f"unknown eval setting(s): {', '.join(unknown)} (known: see docs/configuration.md)")
        return cls(**{str(k): data[k] for k in data})

    def replace(self, **changes: Any) -> EvalConfig:
        """A copy with ``changes``, checked."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (enums as their names): what crosses a process boundary, and what a result records."""
        return {
            f.name: (
                v.value
                if isinstance(v, enum.Enum)
                else list(v)
                if isinstance(v, list)
                else v.to_dict()
                if isinstance(v, GuardPolicies)
                else v
            )
            for f in dataclasses.fields(self)
            for v in [getattr(self, f.name)]
        }


@functools.cache
def _field_types() -> dict[str, Any]:
    hints = typing.get_type_hints(EvalConfig)
    return {f.name: (hints[f.name], f.metadata) for f in dataclasses.fields(EvalConfig)}


def _checked(name: str, kind: Any, limits: Mapping[str, Any], value: Any) -> Any:
    """``value`` for the field ``name`` of type ``kind``, coerced (an enum's name, a whole float for an int) or
    refused; ``limits``: the field's metadata (``min``, ``max``)."""
    if kind is GuardPolicies:  # a mapping (a DictConfig from Hydra, what to_dict wrote) or the policies themselves
        return GuardPolicies.from_dict(value)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value.value if isinstance(value, enum.Enum) else value)
        except ValueError:
            allowed = " or ".join(str(m.value) for m in kind)
            raise ValueError(f"eval.{name}={value!r}: expected {allowed}") from None
    if typing.get_origin(kind) is list:  # a ListConfig from Hydra, a tuple: a plain list
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise ValueError(f"eval.{name}={value!r}: expected a list")
        choices: tuple[str, ...] = tuple(limits.get("choices") or ())
        unknown = [v for v in value if choices and v not in choices]
        if unknown:
            raise ValueError(f"eval.{name}: unknown {', '.join(map(repr, unknown))} (known: {', '.join(choices)})")
        return list(value)
    if kind is bool and not isinstance(value, bool):
        raise ValueError(f"eval.{name}={value!r}: expected true or false")
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"eval.{name}={value!r}: expected a number")
        if kind is int and isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"eval.{name}={value!r}: expected a whole number")
            value = int(value)
        low, high = limits.get("min"), limits.get("max")
        if high is not None and not low <= value <= high:
            raise ValueError(f"eval.{name}={value!r}: expected a number between {low} and {high}")
        if low is not None and value < low:
            raise ValueError(f"eval.{name}={value!r}: expected a number of at least {low}")
    return value
