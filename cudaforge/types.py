"""Plain, serialisable records passed between the layers of cudaforge.

Nothing here imports torch, litellm or langgraph: every record is a dataclass of
JSON-friendly values, with ``to_dict`` / ``from_dict`` for the run directory.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import typing
from dataclasses import dataclass, field
from typing import Any, Self


def _to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_jsonable(v) for v in value]
    return value


def _from_jsonable(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        non_none = [a for a in args if a is not type(None)]
        return _from_jsonable(non_none[0], value) if len(non_none) == 1 else value
    if origin in (list, tuple):
        inner = args[0] if args else Any
        return [_from_jsonable(inner, v) for v in value]
    if origin is dict:
        inner = args[1] if len(args) == 2 else Any
        return {k: _from_jsonable(inner, v) for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return typing.cast(Any, tp).from_dict(value)
    return value


class DevicePreference(str, enum.Enum):
    """Where task audits and evaluations run."""

    auto = "auto"  # the GPU when there is one, else the CPU
    cuda = "cuda"
    cpu = "cpu"


class Record:
    """Mixin: JSON round-tripping for the dataclasses below."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict of this record."""
        return typing.cast(dict[str, Any], _to_jsonable(self))

    def to_json(self) -> str:
        """Return this record as a JSON string."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild a record from ``to_dict`` output (unknown keys are ignored)."""
        hints = typing.get_type_hints(cls)
        kwargs = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name in data:
                kwargs[f.name] = _from_jsonable(hints[f.name], data[f.name])
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Rebuild a record from ``to_json`` output."""
        return cls.from_dict(json.loads(text))


def source_hash(source: str) -> str:
    """Stable short hash of a source text (sha256, 16 hex digits)."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- tasks


@dataclass
class Task(Record):
    """One reference problem in KernelBench's problem-file format.

    The loader reads these fields from the file's text and AST; it never executes
    the module. The evaluator executes ``source`` in an isolated worker.
    """

    id: str
    """Stable, unique id: ``<suite>/level<L>/<problem_id>_<name>``."""
    suite: str
    """Name of the suite the task came from."""
    level: int
    """KernelBench level (1 single op, 2 fused chain, 3 architecture, 4 HF models)."""
    problem_id: int
    """Problem number within its level."""
    name: str
    """Human name, e.g. ``Softmax``."""
    source: str
    """The whole reference source: defines ``Model``, ``get_inputs``, ``get_init_inputs``."""
    path: str | None = None
    """Where the source was read from (file path, or ``file#row`` for exports)."""
    atol: float | None = None
    """Absolute tolerance declared by the task (``ATOL``), else the dtype default applies."""
    rtol: float | None = None
    """Relative tolerance declared by the task (``RTOL``), else the dtype default applies."""
    input_variants: list[str] = field(default_factory=list)
    """Extra input distributions/shapes declared in ``INPUT_VARIANTS`` (see docs/tasks.md)."""

    @property
    def source_hash(self) -> str:
        """Hash of the reference source."""
        return source_hash(self.source)


# --------------------------------------------------------------------------- evaluation


class GpuUnavailable(RuntimeError):
    """The GPU an evaluation ran on stopped answering (its management library says it is lost): the machine's
    failure, never the kernel's. The evaluator raises it instead of a verdict; the run stops the task unfinished."""


class SandboxUnavailable(GpuUnavailable):
    """The candidate's sandbox could not be built for an evaluation (its wall is missing on this machine, although
    the run's pre-flight found it): the machine's failure, never the kernel's. Raised, and handled, as a lost GPU is:
    the task stops unfinished (``not_run.jsonl``, reason ``sandbox_unavailable``) and the run stops."""


class EvalStatus(str, enum.Enum):
    """Outcome of evaluating one candidate."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    INVALID = "invalid"  # failed a static check (does not parse, no ModelNew, ...)
    COMPILED = "compiled"  # CUDA source compiled, but no GPU here to load and run it
    UNSUPPORTED = "unsupported"  # this machine cannot build or run it (e.g. a CUDA header it lacks)
    REJECTED = "rejected"  # an integrity guard rejected it (guard_findings holds the guard and its evidence)


class Phase(str, enum.Enum):
    """Phases of an evaluation, in order."""

    STATIC = "static"
    COMPILE = "compile"
    CORRECTNESS = "correctness"
    TIMING = "timing"


@dataclass
class Candidate(Record):
    """A kernel written by the Coder (or by hand) for one task."""

    task_id: str
    source: str
    """Python source defining ``ModelNew`` (KernelBench format)."""
    round: int = 0
    origin: str = "coder"
    """Who wrote it: ``coder``, ``human``, ``demo`` ..."""

    @property
    def source_hash(self) -> str:
        """Hash of the candidate source."""
        return source_hash(self.source)


@dataclass
class PhaseRecord(Record):
    """How one phase went."""

    phase: Phase
    status: str
    """``ok``, ``failed``, ``skipped``, ``timeout`` or ``crashed``."""
    seconds: float = 0.0
    message: str = ""


@dataclass
class Mismatch(Record):
    """One element where candidate and reference disagree."""

    index: list[int]
    expected: float
    actual: float


@dataclass
class CorrectnessDiff(Record):
    """What the Judge reads when outputs disagree."""

    trial: int
    variant: str
    """``default`` or a declared input variant name."""
    expected_shape: list[int] = field(default_factory=list)
    actual_shape: list[int] = field(default_factory=list)
    expected_dtype: str = ""
    actual_dtype: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mean_abs_error: float | None = None
    """The mean absolute error over the output (NaN and infinities as the comparison saw them); None where the
    outputs could not be compared element by element."""
    mismatch_count: int = 0
    mismatch_fraction: float = 0.0
    worst: list[Mismatch] = field(default_factory=list)
    region: str = ""
    """Where the mismatches are: ``everywhere``, ``tail (from flat index N)``, ... ."""
    atol: float = 0.0
    rtol: float = 0.0
    message: str = ""

    def summary(self) -> str:
        """A few lines for a prompt."""
        lines = [f"trial {self.trial} ({self.variant} inputs): {self.message}".rstrip()]
        if self.expected_shape != self.actual_shape or self.expected_dtype != self.actual_dtype:
            lines.append(
                f"expected shape {self.expected_shape} {self.expected_dtype}, "
                f"got {self.actual_shape} {self.actual_dtype}"
            )
        if self.max_abs_error is not None:  # a relative error left unset (a comparison that could not compute it): n/a
            lines.append(
                f"max abs error {self.max_abs_error:.3g}, max rel error "
                f"{'n/a' if self.max_rel_error is None else format(self.max_rel_error, '.3g')} (atol {self.atol:g}, "
                f"rtol {self.rtol:g}); {self.mismatch_count} mismatches ({self.mismatch_fraction:.2%}); {self.region}"
            )
        for m in self.worst:
            lines.append(f"  at {m.index}: expected {m.expected:.6g}, got {m.actual:.6g}")
        return "\n".join(lines)


@dataclass
class TimingStats(Record):
    """Summary of repeated timings, in milliseconds."""

    n: int
    median: float
    mean: float
    min: float
    max: float
    std: float
    ci_low: float
    """Lower end of the 95% bootstrap confidence interval of the median."""
    ci_high: float


@dataclass
class SpeedupStats(Record):
    """Speedup = reference time / candidate time, with its interval."""

    median: float
    """The speedup: the ratio of the two sides' medians (or of their means: ``statistic``)."""
    ci_low: float
    ci_high: float
    baseline: str = "eager"
    statistic: str = "median"
    """Which statistic of each side's timed calls the ratio is of (``eval.speedup_statistic``)."""
    precision: str = ""
    """The reference's precision policy (``strict_fp32``: no TF32; ``torch_default``: cuDNN in TF32, as PyTorch
    leaves it; ``cudaforge.eval.precision``); "" in results recorded before it was kept."""


CHECK_FLAGS = ("precision", "precision_fp64", "parameters_not_varied")
"""Findings that leave a verdict correct but say it was checked less than it seems, or computed in less precision:
the report counts them apart and ``cudaforge export`` keeps their kernels out of its positives."""


@dataclass
class EvalResult(Record):
    """Everything one evaluation found. JSON-serialisable."""

    task_id: str
    candidate_hash: str
    status: EvalStatus
    message: str = ""
    """One paragraph the Judge can read: what went wrong, or what was measured."""
    phases: list[PhaseRecord] = field(default_factory=list)
    compile_log: str = ""
    """The whole compiler output."""
    compile_log_trimmed: str = ""
    """The first errors with their source lines, for the Judge."""
    compile_cached: bool = False
    diff: CorrectnessDiff | None = None
    trials_passed: int = 0
    trials_total: int = 0
    reference_timing: TimingStats | None = None
    candidate_timing: TimingStats | None = None
    speedup: SpeedupStats | None = None
    timing_unavailable_reason: str = ""
    fingerprint: dict[str, Any] = field(default_factory=dict)
    guard_findings: list[dict[str, Any]] = field(default_factory=list)
    """Integrity findings: ``{guard, verdict, evidence}``."""
    precision: dict[str, Any] = field(default_factory=dict)
    """The reference's precision as it ran (policy, TF32 and reduced-precision flags, output dtypes) and the
    precision probe's findings (``cudaforge.eval.precision``): solo times, which precisions the tolerance allows,
    ``speedups`` (over strict fp32, over the best allowed, ``probe_reproduces_win``)."""
    launch_inclusive: dict[str, Any] = field(default_factory=dict)
    """The same kernels timed as KernelBench and the CudaForge paper time them (events around each call, no lead, no
    L2 flush): ``reference_ms``, ``candidate_ms``, ``speedup``, ``ci_low``, ``ci_high``, ``trials``, ``how``."""
    telemetry: dict[str, Any] = field(default_factory=dict)
    """The GPU's state around each batch of timed calls (``cudaforge.eval.telemetry.summary``)."""
    checks: dict[str, Any] = field(default_factory=dict)
    """What the checks beyond the scored inputs saw (docs/checks.md, "Beyond the scored inputs"): ``hidden`` (the
    hidden distributions kept and those dropped, with why), ``parameters`` (how many constant tensors were varied,
    or why none), ``fp64`` (the error against an fp64 evaluation of the reference, the candidate's and the fp32
    reference's own)."""
    memory: dict[str, Any] = field(default_factory=dict)
    """Peak device memory of one call (GPU): ``reference_bytes`` and ``candidate_bytes`` (each model's parameters and
    buffers, or what the worker held, plus the most allocated during a call, inputs not counted), their ``ratio``
    (candidate over reference) and ``how`` (docs/checks.md, "Peak memory")."""
    device: str = ""
    seconds: float = 0.0

    @property
    def correct(self) -> bool:
        """True when the candidate passed every correctness trial."""
        return self.status is EvalStatus.CORRECT

    def report(self) -> str:
        """A few lines for a terminal or a prompt: verdict, message, phases."""
        lines = [f"{self.status.value.upper()}  {self.task_id}  (candidate {self.candidate_hash})", self.message]
        phases = ", ".join(f"{p.phase.value} {p.status} {p.seconds:.2f}s" for p in self.phases)
        lines.append(f"phases: {phases}" + ("  [build cache hit]" if self.compile_cached else ""))
        if self.timing_unavailable_reason:
            lines.append(f"timing: unavailable ({self.timing_unavailable_reason})")
        return "\n".join(line for line in lines if line)

    def measurement(self) -> dict[str, Any]:
        """How the speedup was measured, for the run's records and reports: ``precision`` (the reference's policy),
        the precision probe's ``over_strict_fp32``, ``best_allowed``, ``over_best_allowed`` and
        ``probe_reproduces_win``, the ``launch_inclusive`` speedup, and ``timing_clean`` (False when no batch of
        timed calls was clean; None when unknown). Empty without a speedup."""
        if self.speedup is None:
            return {}
        out: dict[str, Any] = {"precision": self.speedup.precision or None}
        probe = (self.precision or {}).get("speedups") or {}
        for key in ("over_strict_fp32", "best_allowed", "over_best_allowed", "probe_reproduces_win"):
            if key in probe:
                out[key] = probe[key]
        if "speedup" in (self.launch_inclusive or {}):
            out["launch_inclusive"] = self.launch_inclusive["speedup"]
        if self.telemetry:
            out["timing_clean"] = not self.telemetry.get("never_clean", False)
        return out

    def checks_summary(self) -> dict[str, Any]:
        """What the checks beyond the scored inputs say of this result, for the run's records and reports: ``flags``
        (the guards among ``CHECK_FLAGS`` whose findings it carries), ``memory_ratio`` (candidate over reference peak
        memory, GPU), ``hidden_dropped`` (hidden distributions the reference could not judge). Empty when none
        applies."""
        out: dict[str, Any] = {}
        flags = sorted({str(f.get("guard")) for f in self.guard_findings if f.get("guard") in CHECK_FLAGS})
        if flags:
            out["flags"] = flags
        ratio = (self.memory or {}).get("ratio")
        if isinstance(ratio, (int, float)):
            out["memory_ratio"] = float(ratio)
        dropped = ((self.checks or {}).get("hidden") or {}).get("dropped") or {}
        if dropped:
            out["hidden_dropped"] = sorted(dropped)
        return out

    def phase(self, phase: Phase) -> PhaseRecord | None:
        """The record of one phase, if it ran."""
        for record in self.phases:
            if record.phase is phase:
                return record
        return None


# --------------------------------------------------------------------------- the loop


class JudgeMode(str, enum.Enum):
    """What the Judge is asked to do; each mode has a template ``judge/<value>``."""

    correction = "correction"
    optimization = "optimization"


@dataclass
class Feedback(Record):
    """The Judge's advice to the Coder: one JSON object's fields, by mode."""

    mode: JudgeMode
    """``correction`` (one critical issue) or ``optimization`` (one bottleneck and a plan)."""
    fields: dict[str, Any] = field(default_factory=dict)
    """The Judge's JSON, keyed as the mode's required keys (extra keys kept as sent)."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    """The same JSON object as the Judge's reply wrote it, in its own key spellings: what the CudaForge authors'
    prompt builders read (``agents=cudaforge_authors``); empty for feedback made before it was kept."""

    def summary(self) -> str:
        """One ``key: value`` line per field, for logs and prompts."""
        return "\n".join(f"{key}: {value}" for key, value in self.fields.items())


@dataclass
class RoundRecord(Record):
    """One round of the Coder/Judge loop: a Coder step, its evaluation, and what followed."""

    round: int
    """1-based round number."""
    coder_mode: str
    """``first_attempt``, ``repair`` or ``optimize``."""
    candidate_hash: str | None = None
    """Hash of the candidate written this round (None when the Coder gave no usable code)."""
    status: str = ""
    """The evaluation's status, or ``no_code`` / ``llm_error`` when nothing was evaluated."""
    speedup: float | None = None
    """Median speedup when correct and timed."""
    speedup_ci: list[float] | None = None
    """95% interval of the speedup."""
    message: str = ""
    """The evaluation's one-paragraph message, or why the round failed."""
    judge_mode: str | None = None
    """``correction`` / ``optimization`` when the Judge spoke after this round."""
    feedback: dict[str, Any] | None = None
    """The Judge's JSON fields (or the raw feedback a self-refining Coder gets)."""
    profile_status: str | None = None
    """The profiler's status when the candidate was profiled."""
    reused_evaluation: bool = False
    """True when the same source was evaluated in an earlier round and its result reused."""
    cost_usd: float = 0.0
    """Dollars of the round's LLM calls (priced ones)."""
    seconds: float = 0.0
    """Wall-clock seconds of the round's steps."""


@dataclass
class TaskResult(Record):
    """The outcome of the loop on one task: the best correct candidate over all rounds."""

    task_id: str
    correct: bool
    """True when some round produced a correct candidate."""
    best_round: int | None = None
    best_speedup: float | None = None
    best_speedup_ci: list[float] | None = None
    best_candidate_hash: str | None = None
    best_candidate_ms: float | None = None
    """Median time of the best candidate (GPU runs)."""
    best_reference_ms: float | None = None
    """Median time of the reference it was timed against, in the same session."""
    best_measurement: dict[str, Any] = field(default_factory=dict)
    """How the best speedup was measured (``EvalResult.measurement``): the reference's precision, the precision
    probe's speedups and flag, the launch-inclusive speedup, whether its timing was clean. Empty for runs made before
    it was kept."""
    best_checks: dict[str, Any] = field(default_factory=dict)
    """What the checks beyond the scored inputs say of the best kernel (``EvalResult.checks_summary``): its precision
    and parameter ``flags``, its ``memory_ratio``. Empty: none applies, or a run made before it was kept."""
    rounds: int = 0
    """Rounds used."""
    stop_reason: str = ""
    """``max_rounds``, ``max_dollars``, ``max_minutes``, ``llm_error: ...``."""
    cost_usd: float | None = 0.0
    """Dollars of priced LLM calls; None when every call was unpriced (never $0 for unknown prices).
    With ``unpriced_calls`` > 0 a number is a lower bound: the priced calls only."""
    unpriced_calls: int = 0
    """LLM calls whose price is unknown (their cost is not in ``cost_usd``)."""
    tokens_in: int = 0
    tokens_out: int = 0
    minutes: float = 0.0
    """Minutes of the task's steps, summed, GPU-lock waits included: what ``strategy.max_minutes`` counts, and the
    only time runs made before ``wall_minutes`` have. Newer runs' ``wall_minutes`` add the bookkeeping between
    steps (milliseconds)."""
    wall_minutes: float | None = None
    """Wall-clock minutes from the task's first step to its last, GPU-lock waits included (a killed run's downtime
    is not). With one task at a time this is what the CudaForge paper reports as minutes per kernel; with
    ``concurrency`` > 1 it includes waiting for GPUs other tasks hold. None: a run made before it was recorded."""
    active_minutes: float | None = None
    """``wall_minutes`` less the time the task waited for a GPU's lock that another task held (before the
    evaluator's timing, and in profiling where the profiler records it): closer to what the task takes with one
    task at a time. None: a run made before it was recorded."""
    time_split: dict[str, float] = field(default_factory=dict)
    """Seconds in ``llm``, ``compile``, ``correctness``, ``timing``, ``profiling``, ``queue`` (waiting for a worker
    before the task started) and ``gpu_lock_wait`` (waiting for a GPU's lock, inside evaluation and profiling)."""
    history: list[RoundRecord] = field(default_factory=list)
    held_out: dict[str, Any] = field(default_factory=dict)
    """The best kernel on shapes it never saw (``eval.held_out_shapes``, ``cudaforge/eval/held_out.py``): ``shapes``, a
    row per shape (``shape``, ``sizes``, ``status``, ``correct``, ``speedup`` ...), ``note`` (why there are none) and
    ``seconds``. Empty: not checked (no correct kernel, the setting off, or a run made before it existed)."""
    compile_beside: dict[str, Any] = field(default_factory=dict)
    """The reference timed eagerly and under torch.compile beside the loop (``eval.compile_beside``,
    ``cudaforge/eval/compile_beside.py``): ``mode``, ``gpu``, ``eager_ms``, ``compile_ms``, ``compile_over_eager``,
    ``cached``, ``status``. Empty: not measured (no GPU, no timed correct kernel, the setting off)."""
