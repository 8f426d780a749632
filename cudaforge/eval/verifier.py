"""The trusted side of an evaluation: inputs, the reference, the comparison, the clock and the verdict.

Runs in a child of the evaluator (``cudaforge.isolation``, entry ``cudaforge.eval.verifier:evaluate``),
pinned to one GPU or to none. It never imports the candidate. The candidate runs in a sandboxed worker
(``cudaforge.eval.remote.CandidateProcess``) that receives inputs through a shared arena and hands
back outputs; this process draws the inputs, runs the reference, copies the candidate's outputs out of
the arena and compares them, keeps the timings' cross-check, and writes the result. Patching torch,
timers or the comparison in the candidate's process changes nothing here.

Order of work (docs/evaluation.md states it as the protocol):
0. static guards on the candidate's text (also run in the parent).
1. start: the sandboxed worker (or the standby's, started ahead) says hello; the channel's round
   trip is measured before any candidate code exists; on a GPU the reference is timed alone.
2. compile: the worker imports the candidate; its ``load_inline`` calls are built here (the compiler
   in a sandbox of its own; the cache written only here) and handed over.
3. correctness: reference and ModelNew built with the same seed (``eval.weights=seed``, KernelBench's
   way) or with the reference's matching weights copied (``copy_matching``); per trial fresh seeded
   inputs, the candidate's call, its inputs checked bit for bit after, its outputs' structure and
   types, then the values against the reference; then the declared variants, the precision and
   sensitivity guards.
4. timing (GPU only): under the GPU's lock, interleaved reference/candidate calls with fresh inputs
   from a secret seed and the L2 flushed (persisting lines reset first); the sandbox frozen while the
   reference is timed; every candidate output checked; then the cross-check (a batch of calls timed
   by this process's clock), the reference-slowdown, host/event, speed-of-light and share guards.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from cudaforge import languages
from cudaforge.eval.bounded import cap_text, finite_number, source_size_problem
from cudaforge.eval.correctness import compare, compare_first
from cudaforge.eval.exchange import (
    Arena,
    ArenaError,
    Budget,
    DeviceArena,
    Driver,
    OutputsTooLarge,
    decode,
    encode,
    host_arena,
    tensor_bytes,
)
from cudaforge.eval.guards import runtime as guards
from cudaforge.eval.guards.policy import REJECT, Policies, rejection_message, rejections, share_findings
from cudaforge.eval.guards.source import static_findings
from cudaforge.eval.jit_cache import (
    count_kernels,
    keep_own_jit_cache,
    own_store,
    seed_own_jit_cache,
    seed_trusted_stubs,
)
from cudaforge.eval.remote import CandidateProcess, WorkerFailure
from cudaforge.sandbox import SandboxMode
from cudaforge.tasks.runtime import (
    DEFAULT_VARIANT,
    apply_numerics,
    build_model,
    default_tolerance,
    flatten_outputs,
    grad_mode,
    load_module,
    make_inputs,
)
from cudaforge.types import EvalResult, EvalStatus, Phase, PhaseRecord, Task, source_hash

CANDIDATE_MODULE_PREFIX = "cudaforge_candidate_"
REFERENCE_MODULE = "cudaforge_reference"
PROFILED_CALLS = 3
PRECISION_TRIALS = 6  # timed calls of the reference under each precision of the probe
CROSSCHECK_ROUNDS = 2  # batches per side of the timing cross-check; each side keeps its fastest
CROSSCHECK_RETRIES = 1  # times the cross-check measures again (CROSSCHECK_ROUNDS more batches) before it fires
"""Forwards the profiler-share guard runs under torch.profiler (GPU)."""
SOLO_TRIALS = 10
"""Timed calls of the reference alone, before any candidate code exists (the reference_slowdown baseline)."""
TIMING_SEED_OFFSET = 1_000_003


class _Failure(Exception):
    """Ends the evaluation with a status and a message for the Judge."""

    def __init__(self, status: EvalStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Guards:
    """The guard policies of this evaluation and the findings so far (they end up in the result)."""

    def __init__(self, cfg: dict[str, Any], result: EvalResult) -> None:
        self.policies = Policies(cfg)
        self.result = result

    def add(self, findings: list[dict[str, str]]) -> None:
        """Keep ``findings``; end the evaluation as ``rejected`` when one of them rejects."""
        self.result.guard_findings.extend(findings)
        if rejections(findings):
            raise _Failure(EvalStatus.REJECTED, rejection_message(findings))

    def fire(self, guard: str, evidence: str) -> None:
        """A guard with a policy fired: reject or report as the policy says (a report only the first time)."""
        if any(f["guard"] == guard for f in self.result.guard_findings):
            return
        self.add([self.policies.found(guard, evidence)])

    def incorrect(self, guard: str, evidence: str, message: str) -> None:
        """A wrong output, explained by ``guard``: ``incorrect`` with the evidence (a report if guards are off)."""
        if guard:
            self.result.guard_findings.append(self.policies.found(guard, evidence))
            message += f"\n{guard}: {evidence}"
        raise _Failure(EvalStatus.INCORRECT, message)


class _Recorder:
    """Phase records with their durations; each phase is announced to the parent."""

    def __init__(self, progress: Callable[[str], None]) -> None:
        self.progress = progress
        self.phases: list[PhaseRecord] = []

    def start(self, phase: Phase) -> float:
        self.progress(phase.value)
        return time.perf_counter()

    def end(self, phase: Phase, started: float, status: str = "ok", message: str = "") -> None:
        self.phases.append(PhaseRecord(phase, status, time.perf_counter() - started, message))


def _clone(inputs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _clone_output(value: Any, depth: int = 0) -> Any:
    """A reference output that no later write into the arena can change (it may be a view of its inputs)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)) and depth < 8:
        return type(value)(_clone_output(v, depth + 1) for v in value)
    return value


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _tolerance(task: Task, output: Any, cfg: dict[str, Any]) -> tuple[float, float]:
    tensors = [t for t in flatten_outputs(output) if isinstance(t, torch.Tensor)]
    dtype = tensors[0].dtype if tensors else torch.float32
    atol, rtol = default_tolerance(dtype, cfg["atol_fp32"], cfg["rtol_fp32"], cfg["atol_half"], cfg["rtol_half"])
    return (task.atol if task.atol is not None else atol, task.rtol if task.rtol is not None else rtol)


def compare_outputs(
    cfg: dict[str, Any], expected: Any, actual: Any, *, atol: float, rtol: float, trial: int, variant: str
):
    """The comparison of ``eval.compare_outputs``: every output (our protocol) or the first tensor by
    ``torch.allclose`` (the CudaForge authors'), with ``eval.equal_nan``; None or the diff."""
    check = compare_first if cfg["compare_outputs"] == "first" else compare
    return check(expected, actual, atol=atol, rtol=rtol, trial=trial, variant=variant, equal_nan=cfg["equal_nan"])


def _structure(cfg: dict[str, Any], expected: Any, actual: Any) -> str | None:
    """``structure_problem``, except under ``compare_outputs=first`` (only the first tensor counts there)."""
    return None if cfg["compare_outputs"] == "first" else structure_problem(expected, actual)


def _shapes(values: list[Any]) -> str:
    return ", ".join("x".join(map(str, t.shape)) for t in values if isinstance(t, torch.Tensor))


def structure_problem(expected: Any, actual: Any) -> str | None:
    """Evidence when the candidate's result is not shaped like the reference's: a tensor where the reference
    returns one, a tuple or list of the same length where it returns one (nested alike)."""
    if isinstance(expected, torch.Tensor):
        if isinstance(actual, torch.Tensor):
            return None
        what = f"a {type(actual).__name__}" + (f" of {len(actual)}" if isinstance(actual, (list, tuple)) else "")
        return f"the reference returns a tensor; ModelNew.forward returned {what}. Return the tensor itself."
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            got = f"a {type(actual).__name__}" + (f" of {len(actual)}" if isinstance(actual, (list, tuple)) else "")
            return (
                f"the reference returns a {type(expected).__name__} of {len(expected)}; ModelNew.forward "
                f"returned {got}."
            )
        for exp, act in zip(expected, actual):
            problem = structure_problem(exp, act)
            if problem:
                return problem
    return None


def facts_problem(facts: Any, device: torch.device) -> str | None:
    """Evidence from the worker's account of its outputs (class, layout, device) for the output_type guard."""
    if not isinstance(facts, list):
        return None
    for i, fact in enumerate(facts):
        if not isinstance(fact, dict):
            continue
        label = f"output {i}" if len(facts) > 1 else "the output"
        if fact.get("plain") is False:
            return (
                f"{label} is a {str(fact.get('cls'))[:80]}, a subclass of torch.Tensor, not a plain torch.Tensor: a "
                "subclass can defer the work until the result is read, outside the timed call. Return the computed "
                "tensor itself."
            )
        if fact.get("layout") not in (None, "torch.strided"):
            return f"{label} has layout {str(fact.get('layout'))[:40]}; the reference returns a dense (strided) tensor."
        if fact.get("device") not in (None, device.type):
            return f"{label} is on {str(fact.get('device'))[:20]}, not on the evaluation device {device}: compute it there."
        if fact.get("storage") is False:
            return f"{label} has no storage behind it."
    return None


# ------------------------------------------------------------------------------ the candidate


class Candidate:
    """The candidate's model, seen from here: every call crosses the arena to the sandboxed worker."""

    def __init__(
        self, process: CandidateProcess, device: torch.device, deadline: Callable[[], float], notes: list[str]
    ) -> None:
        self.process, self.device, self.deadline = process, device, deadline
        self.arena: Arena | None = None
        self.notes = notes
        self.inputs_after: list[Any] = []
        """The candidate's inputs after its last call: views of the arena."""
        self.facts: Any = None
        self._input_descs: Any = None
        self.spent: dict[str, float] = {}
        """Seconds spent per part of the exchange (arena, put, worker, read_back), for the phase breakdowns."""
        self.on_build: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        """Serves the worker's build requests during any request (a ``load_inline`` left to ``forward``)."""

    def _add(self, part: str, since: float) -> float:
        now = time.perf_counter()
        self.spent[part] = self.spent.get(part, 0.0) + now - since
        return now

    def ensure_arena(self, nbytes: int) -> Arena:
        """An arena of at least ``nbytes`` (a new one, sent to the worker, when the current one is smaller)."""
        if self.arena is not None and self.arena.size >= nbytes:
            return self.arena
        since = time.perf_counter()
        size = max(nbytes, 1 << 20, 2 * (self.arena.size if self.arena else 0))
        old, arena = self.arena, None
        if self.device.type == "cuda":
            try:
                arena = DeviceArena.create(size)
            except ArenaError as exc:
                note = f"device arena unavailable ({exc}): inputs and outputs cross through host memory"
                if note not in self.notes:
                    self.notes.append(note)
        if arena is None:
            arena = host_arena(size)
        self.process.request(
            {"op": "arena", "kind": arena.kind, "size": arena.size}, timeout_s=self.deadline(), fds=(arena.fd,)
        )
        if old is not None:
            old.close()
        self.arena = arena
        self._add("arena", since)
        return arena

    def put_inputs(self, inputs: list[Any], extra_out: int) -> tuple[Any, int]:
        """Write ``inputs`` into the arena (sized for them and ``extra_out`` bytes of outputs); (encoding, out offset)."""
        arena = self.ensure_arena(tensor_bytes(inputs) + extra_out + 4096)
        arena.reset()
        encoded = encode(list(inputs), arena.put)
        _sync(self.device)
        self._input_descs = encoded
        return encoded, -(-arena._next // 256) * 256

    def read_back(self, encoded: Any, out_bytes: int) -> Any:
        """A value from the arena, copied into this process's own memory: bounds-checked, and never more than
        ``out_bytes`` (the budget of the call's outputs, ``_out_bytes`` of the reference's) nor more than
        ``MAX_OUTPUT_TENSORS`` tensors, each checked before it is copied. ArenaError if malformed, OutputsTooLarge
        past the budget."""
        assert self.arena is not None
        arena = self.arena
        return decode(encoded, lambda desc: arena.view(desc).to(self.device, copy=True), Budget(out_bytes))

    def outputs(self, reply: dict[str, Any], out_bytes: int) -> Any:
        """The outputs of a reply, copied out of the arena (at most ``out_bytes``: ``read_back``); a malformed or
        oversized description makes the candidate incorrect."""
        try:
            value = self.read_back(reply.get("outputs"), out_bytes)
        except OutputsTooLarge as exc:
            raise _Failure(EvalStatus.INCORRECT, str(exc)) from None
        except ArenaError as exc:
            raise _Failure(EvalStatus.INCORRECT, f"the candidate's outputs could not be read: {exc}") from None
        self.facts = reply.get("facts")
        self.inputs_after = self.views(self._input_descs)
        return value

    def views(self, encoded: Any) -> Any:
        """A value as it stands in the arena, not copied (the input_mutation check reads each byte once; what the
        candidate writes there later changes no verdict)."""
        assert self.arena is not None
        arena = self.arena

        def get(desc: dict[str, Any]) -> torch.Tensor:
            view = arena.view(desc)
            return view if view.device == self.device else view.to(self.device)

        return decode(encoded, get)

    def call(self, inputs: list[Any], *, what: str, poison: list[int], out_bytes: int) -> Any:
        """One call of ModelNew on ``inputs``; its outputs (this process's copies)."""
        clock = time.perf_counter()
        encoded, offset = self.put_inputs(inputs, out_bytes)
        clock = self._add("put", clock)
        reply = self._request({"op": "call", "inputs": encoded, "out_offset": offset, "poison": poison, "what": what})
        clock = self._add("first_call" if "calls" not in self.spent else "calls", clock)
        self.spent.setdefault("calls", 0.0)
        value = self.outputs(reply, out_bytes)
        self._add("read_back", clock)
        return value

    def _request(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        try:
            return self.process.request(
                message, timeout_s=self.deadline() if timeout_s is None else timeout_s, on_build=self.on_build
            )
        except WorkerFailure as failure:
            raise _Failure(EvalStatus(failure.status), failure.message) from None


def _start_worker(device: torch.device, cfg: dict[str, Any], logs: str) -> CandidateProcess:
    from cudaforge.eval.early import new_worker

    return new_worker(device.type, cfg, logs)


# ----------------------------------------------------------------------------- correctness


class _Trials:
    """What the correctness trials leave for the guards after them."""

    def __init__(self, base: str = DEFAULT_VARIANT) -> None:
        self.base = base
        """The variant of the plain trials: the default inputs, or ``small`` on a CPU when the task declares it."""
        self.default_shapes = ""
        self.default_trials = 0
        self.candidate_base: Any = None
        self.reference_base: Any = None
        self.candidate_constant = True
        self.reference_constant = True
        self.previous: Any = None
        self.poison_sizes: list[int] = []
        self.out_bytes = 0
        self.poison = True
        """Poison free GPU memory before each candidate call (``eval.poison_memory``)."""

    def record(self, variant: str, inputs: list[Any], ref_out: Any, cand_out: Any) -> None:
        """Note a passed trial: shapes, whether the outputs ever changed, what to poison next time. ``cand_out`` is
        this process's own copy (``Candidate.read_back``), kept as it is; the reference's output is copied (a
        reference may return a buffer it writes again)."""
        if variant == self.base:
            if self.default_trials == 0:
                self.default_shapes = _shapes(inputs)
                self.candidate_base, self.reference_base = cand_out, guards.snapshot(ref_out)
            else:
                self.candidate_constant &= guards.same_bits(cand_out, self.candidate_base)
                self.reference_constant &= guards.same_bits(ref_out, self.reference_base)
            self.default_trials += 1
        self.previous = cand_out
        self.poison_sizes = guards.tensor_bytes([ref_out]) if self.poison else []


def _explain(variant: str, inputs: list[Any], trials: _Trials, cand_out: Any, device, trial: int) -> tuple[str, str]:
    """Which guard explains a wrong output of ``trial`` (shape specialisation, poison, caching), if any."""
    guard, evidence = guards.explain_mismatch(cand_out, trials.previous, device, f"trial {trial}")
    shapes = _shapes(inputs)
    if variant != trials.base and trials.default_trials and shapes != trials.default_shapes:
        evidence = (
            f"correct on the default inputs ({trials.default_shapes}) in {trials.default_trials} trials, wrong on "
            f"the declared variant {variant!r} with inputs {shapes}: the kernel seems written for one shape. "
            "Take sizes and strides from the inputs at run time and handle the remainders."
            + (f" ({evidence})" if guard == "uninitialised_memory" else "")
        )
        guard = "shape_specialisation"
    return guard, evidence


def crosscheck_calls(per_call: int, wanted: int, max_gb: float) -> int:
    """Calls in the timing cross-check's batch: ``wanted``, fewer when their inputs and outputs exceed ``max_gb``,
    but never fewer than two (one call has no back-to-back neighbour to hide work behind, and a task too big for
    the budget must not go unchecked)."""
    return max(2, min(wanted, int(max_gb * (1 << 30)) // max(per_call, 1)))


def _out_bytes(value: Any) -> int:
    return 2 * tensor_bytes(value) + (1 << 16)


def _check_output(
    task,
    cfg,
    guard: _Guards,
    trials: _Trials,
    cand: Candidate,
    device,
    variant: str,
    trial: int,
    inputs: list[Any],
    ref_out: Any,
    cand_out: Any,
    result: EvalResult,
) -> None:
    """Everything one candidate call is checked for, in order: inputs untouched, output types and structure,
    then the values (a wrong output explained by a guard when one explains it)."""
    changed = guards.mutated_inputs(inputs, cand.inputs_after)
    if changed:
        guard.fire("input_mutation", f"trial {trial} ({variant} inputs): {changed}")
    problem = facts_problem(cand.facts, device) or _structure(cfg, ref_out, cand_out)
    if problem:
        guard.fire("output_type", f"trial {trial}: {problem}")
    atol, rtol = _tolerance(task, ref_out, cfg)
    diff = compare_outputs(cfg, ref_out, cand_out, atol=atol, rtol=rtol, trial=trial, variant=variant)
    if diff is not None:
        result.diff = diff
        guard.incorrect(
            *_explain(variant, inputs, trials, cand_out, device, trial), "output mismatch\n" + diff.summary()
        )


def _weights(ref_model: Any, cand: Candidate, cfg: dict[str, Any], result: EvalResult) -> None:
    """``eval.weights=copy_matching``: the reference's parameters and buffers copied into ModelNew where names and
    shapes match (reported); ``authors``: the CudaForge authors' aligner (``cudaforge.eval.align``); ``seed`` (the
    default, KernelBench's way): both built with the same seed, nothing copied."""
    mode = cfg.get("weights", "seed")
    if mode not in ("copy_matching", "authors") or not isinstance(ref_model, torch.nn.Module):
        result.fingerprint["weights"] = "seed"
        return
    reply = cand._request({"op": "state"})
    names = reply.get("state")
    if mode == "authors":
        from cudaforge.eval.align import authors_alignment

        matching, stats = authors_alignment(ref_model, reply)
        label = f"authors ({len(matching)} tensors copied, {stats['rule']} rule)"
    else:
        ref_state = ref_model.state_dict()
        matching = {}
        if isinstance(names, dict):
            for name, value in ref_state.items():
                spec = names.get(name)
                if isinstance(spec, list) and len(spec) == 2 and list(value.shape) == spec[0]:
                    matching[name] = value
        label = f"copy_matching ({len(matching)} tensors copied)"
    if matching:
        encoded, _ = cand.put_inputs([matching], 0)
        cand._request({"op": "set_state", "tensors": encoded})
    result.fingerprint["weights"] = label


CPU_INPUT_BYTES = 64 << 20
"""Default inputs larger than this are sized for a GPU: on a CPU the task's ``small`` variant replaces them."""


def cpu_scaled(task, device, module: Any = None) -> bool:
    """On a CPU, a task whose default inputs exceed ``CPU_INPUT_BYTES`` and that declares a ``small`` variant is
    checked on it alone (as ``cudaforge tasks audit`` does): the CPU check only says whether the kernel is right,
    and gigabytes of inputs would take it minutes. The size comes from the inputs built on the meta device (shapes
    only, no data)."""
    if device.type != "cpu" or "small" not in task.input_variants:
        return False
    try:
        if module is None:
            module = load_module(task.source, f"_cudaforge_size_probe_{task.source_hash[:12]}")
            sys.modules.pop(module.__name__, None)
        with torch.device("meta"):
            inputs = list(module.get_inputs())
        return sum(guards.tensor_bytes(inputs)) > CPU_INPUT_BYTES
    except Exception:  # noqa: BLE001 - a task whose inputs cannot be sized this way keeps its own inputs
        return False


def _correctness(task, ref_module, ref_model, cand: Candidate, device, cfg, result: EvalResult, guard: _Guards):
    base = "small" if cpu_scaled(task, device, ref_module) else DEFAULT_VARIANT
    plan = [(base, t) for t in range(cfg["correctness_trials"])]
    if cfg["check_variants"] and base == DEFAULT_VARIANT:
        plan += [(v, len(plan) + i) for i, v in enumerate(task.input_variants)]
    result.trials_total = len(plan)
    if base != DEFAULT_VARIANT:
        result.fingerprint["inputs_variant"] = base
    trials = _Trials(base)
    trials.poison = bool(cfg.get("poison_memory", True))
    for variant, trial in plan:
        clock = time.perf_counter()
        inputs = make_inputs(ref_module, seed=cfg["seed"] * 1000 + trial, variant=variant, device=device)
        _sync(device)
        clock = cand._add("draw_inputs", clock)
        with grad_mode(cfg["no_grad"]):
            ref_out = _call_reference(ref_model, _clone(inputs))
        _sync(device)
        clock = cand._add("reference", clock)
        trials.out_bytes = max(trials.out_bytes, _out_bytes(ref_out))
        cand_out = cand.call(
            inputs,
            what=f"ModelNew.forward (trial {trial}, {variant} inputs)",
            poison=trials.poison_sizes + guards.tensor_bytes(inputs) if trials.poison else [],
            out_bytes=trials.out_bytes,
        )
        clock = time.perf_counter()
        _check_output(task, cfg, guard, trials, cand, device, variant, trial, inputs, ref_out, cand_out, result)
        clock = cand._add("checks", clock)
        if trials.default_trials == 0 and variant == base:
            downgrade = guards.precision_downgrade(ref_out, cand_out)
            if downgrade:
                guard.fire("precision", downgrade)
        trials.record(variant, inputs, ref_out, cand_out)
        result.trials_passed += 1
    _sensitivity(ref_module, ref_model, cand, device, cfg, trials, guard)
    return trials


def _call_reference(ref_model: Any, inputs: list[Any]) -> Any:
    try:
        return ref_model(*inputs)
    except Exception as exc:  # noqa: BLE001 - the task's fault, said as such
        raise _Failure(EvalStatus.CRASHED, f"the reference itself raised {type(exc).__name__}: {exc}"[:2000]) from None


def _sensitivity(ref_module, ref_model, cand: Candidate, device, cfg, trials: _Trials, guard: _Guards) -> None:
    """The output_sensitivity guard, after the trials: a candidate output that never changed."""
    if trials.default_trials < 2 or not trials.candidate_constant:
        return
    if not trials.reference_constant:
        guard.fire(
            "output_sensitivity",
            f"ModelNew's output was bit-identical in all {trials.default_trials} "
            "trials with different inputs while the reference's changed (within the tolerance): a constant "
            "passes this task's tolerance. Compute the result from the inputs.",
        )
        return
    inputs = make_inputs(ref_module, seed=cfg["seed"] * 1000, variant=trials.base, device=device)

    def call_candidate(xs: list[Any]) -> Any:
        try:
            return cand.call(xs, what="a sensitivity probe", poison=[], out_bytes=trials.out_bytes)
        except _Failure as failure:
            if failure.status in (EvalStatus.RUNTIME_ERROR, EvalStatus.INCORRECT):
                raise RuntimeError(failure.message) from None  # a candidate that fails on a probe reacted to it
            raise

    with grad_mode(cfg["no_grad"]):
        verdict = guards.sensitivity_probe(
            lambda xs: ref_model(*xs), call_candidate, inputs, trials.reference_base, trials.candidate_base
        )
    _sync(device)
    if verdict is not None:
        kind, evidence = verdict
        guard.add([guard.policies.found("output_sensitivity", evidence, verdict=None if kind == REJECT else kind)])


# ---------------------------------------------------------------------------------- timing


def _same_bits(a: Any, b: Any) -> bool:
    """Whether two outputs hold the same tensors bit for bit (same structure, shapes and dtypes)."""
    xs, ys = flatten_outputs(a), flatten_outputs(b)
    return len(xs) == len(ys) and all(
        isinstance(x, torch.Tensor)
        and isinstance(y, torch.Tensor)
        and x.shape == y.shape
        and x.dtype == y.dtype
        and torch.equal(x, y)
        for x, y in zip(xs, ys)
    )


def _finite(value: Any) -> float | None:
    """A finite, non-negative number of the worker's reply as a float, else None (a huge JSON integer included: it
    never reaches ``math.isfinite``, which would raise)."""
    return float(value) if finite_number(value) else None


class _Timing:
    """The timed phase of one evaluation (GPU): interleaved calls, then the cross-check and the guards."""

    def __init__(
        self,
        task,
        ref_module,
        ref_model,
        cand: Candidate,
        device,
        cfg,
        result: EvalResult,
        guard: _Guards,
        trials: _Trials,
        source: str,
    ) -> None:
        from cudaforge.eval.timing import Stopwatch

        self.task, self.ref_module, self.ref_model, self.cand, self.source = task, ref_module, ref_model, cand, source
        self.device, self.cfg, self.result, self.guard, self.trials = device, cfg, result, guard, trials
        self.seed = secrets.randbits(40)  # the candidate cannot know the timed inputs before it gets them
        self.stopwatch = Stopwatch(device, cfg["flush_l2"], cfg["timing_lead_us"])
        try:
            self.driver: Driver | None = Driver()
        except ArenaError:
            self.driver = None
        self.probe: tuple[str, dict[str, float], dict[str, bool]] | None = None
        """The precision probe's (main policy, solo times, within tolerance), once it ran."""
        self.known_probe: dict[str, Any] | None = None
        """The probe of the same task on this GPU under the same settings, measured while an earlier candidate was
        evaluated (``Evaluator`` keeps it; ``cudaforge.eval.precision.reusable_probe``): it depends on the reference
        alone, so it is used as it is instead of being measured again."""
        self.traced: list[int] | None = None
        """The trials of the candidate's timed calls in the order they ran under the trace (None: no trace)."""
        self.trace_note = ""
        self.reference_fn = ref_model
        if cfg["baseline"] == "compile":
            self.reference_fn = torch.compile(ref_model, mode=cfg["compile_mode"])

    def fresh_inputs(self, trial: int) -> list[Any]:
        """The inputs of timed trial ``trial``: new ones every trial, or (``eval.fresh_inputs=false``) the same."""
        offset = trial if self.cfg["fresh_inputs"] else 0
        return make_inputs(self.ref_module, seed=self.seed + TIMING_SEED_OFFSET + offset, device=self.device)

    def check(self, expected: Any, actual: Any, trial: int):
        atol, rtol = _tolerance(self.task, expected, self.cfg)
        return compare_outputs(self.cfg, expected, actual, atol=atol, rtol=rtol, trial=trial, variant="timing")

    def reference_call(self, inputs: list[Any]) -> tuple[float, float, Any]:
        """One timed reference call on ``inputs`` (the reference's own copy, ``TimedCalls.make_args``: not cloned
        again), with every process of the candidate's sandbox frozen meanwhile."""
        frozen = self.cand.process.stop()
        try:
            return self.stopwatch.measure(self.reference_fn, inputs)
        finally:
            if frozen:
                self.cand.process.cont()

    def candidate_call(self, inputs: list[Any], trial: int) -> tuple[float, float, float, Any]:
        """One timed candidate call: inputs into the arena, persisting L2 reset, L2 flushed, then the worker times it.
        Returns (reported event ms, reported host ms, this process's wall ms around the request, outputs)."""
        encoded, offset = self.cand.put_inputs(inputs, self.trials.out_bytes)
        if self.driver is not None:
            try:
                self.driver.reset_persisting_l2()
            except ArenaError:
                pass
        if self.stopwatch.flusher is not None:
            self.stopwatch.flusher.flush()
        _sync(self.device)
        started = time.perf_counter()
        reply = self.cand._request(
            {
                "op": "timed",
                "inputs": encoded,
                "out_offset": offset,
                "lead_cycles": self.stopwatch.lead_cycles,
                "what": f"timed call {trial}",
                "poison": self.trials.poison_sizes,
            }
        )
        wall_ms = (time.perf_counter() - started) * 1e3
        event_ms, host_ms = _finite(reply.get("event_ms")), _finite(reply.get("host_ms"))
        if event_ms is None or host_ms is None:
            raise _Failure(EvalStatus.CRASHED, "the worker reported a timing that is not a non-negative number")
        return event_ms, host_ms, wall_ms, self.cand.outputs(reply, self.trials.out_bytes)

    def run(self, progress: Callable[[str], None], on_locked: Callable[[], None] = lambda: None) -> None:
        from cudaforge.eval.fingerprint import gpu_state
        from cudaforge.hardware.gpu_lock import gpu_lock

        cfg, result = self.cfg, self.result
        calls = guards.TimedCalls(
            self.fresh_inputs,
            self.check,
            self.device,
            [],
            reference=self.ref_model,
            same_inputs=not cfg["fresh_inputs"],
            owned_outputs=True,
        )
        clock = time.perf_counter()
        result.fingerprint["gpu_state_before"] = gpu_state(0)
        spent = {"gpu_state": time.perf_counter() - clock}
        times: dict[str, list[float]] = {
            "ref": [],
            "ref_host": [],
            "cand": [],
            "cand_host": [],
            "cand_wall": [],
            "cand_trial": [],
        }
        progress("gpu_wait")  # the trusted side takes the GPU's lock, on the candidate's behalf
        with gpu_lock(os.environ.get("CUDA_VISIBLE_DEVICES") or "0") as waited, grad_mode(cfg["no_grad"]):
            progress(Phase.TIMING.value)
            on_locked()  # the wait for the lock is not the candidate's time
            result.fingerprint["gpu_lock_wait_s"] = round(waited, 3)
            clock = time.perf_counter()
            self.start_trace()
            with torch.cuda.device(self.device):
                self._series(range(-cfg["warmup"], 0), calls, times)
                self._batches(calls, times, spent)
            spent["trials"] = time.perf_counter() - clock - spent.get("telemetry", 0.0)
            clock = time.perf_counter()
            untimed = self.stop_trace(times)
            spent["trace"] = time.perf_counter() - clock
            result.fingerprint["timing_lead_us"] = self.stopwatch.lead_us
            if self.stopwatch.lead_note:
                result.fingerprint.setdefault("timing_notes", []).append(self.stopwatch.lead_note)
            crosscheck = share = None
            if calls.failure is None:
                clock = time.perf_counter()
                self.launch_inclusive(calls)  # its calls are checked like every timed call: a wrong one is a verdict
                spent["launch_inclusive"] = time.perf_counter() - clock
            if calls.failure is None:
                clock = time.perf_counter()
                crosscheck = self.crosscheck(times)
                spent["crosscheck"] = time.perf_counter() - clock
                clock = time.perf_counter()
                share = self.kernel_share()
                spent["kernel_share"] = time.perf_counter() - clock
                clock = time.perf_counter()
                try:
                    self.precision_probe()
                except Exception as exc:  # noqa: BLE001 - the probe informs the report; it never decides the verdict
                    result.precision["probe_note"] = f"the precision probe failed: {type(exc).__name__}: {exc}"[:300]
                spent["precision_probe"] = time.perf_counter() - clock
        result.fingerprint["gpu_state_after"] = gpu_state(0)
        if calls.failure is not None:
            failure = calls.failure
            if failure["diff"]:
                self.guard.incorrect(
                    failure["guard"],
                    failure["evidence"],
                    "an output produced during the timed calls was wrong\n" + failure["diff"],
                )
            self.guard.fire(failure["guard"], failure["evidence"])
        if calls.failure is None:
            self.guard.add(untimed)
        self.finish(times, crosscheck, share, spent, calls)

    def _series(self, trials: Any, calls: Any, times: dict[str, list[float]]) -> None:
        """Timed calls of ``trials`` (negative: warm-up, timed and not kept): interleaved (reference first on even
        trials, candidate first on odd ones), or all of the reference's, then all of the candidate's. A wrong output
        stops the series, unless ``eval.stricter_checks_decide=false``: then it is a reported finding."""
        if self.cfg["interleave"]:
            for trial in trials:
                calls.draw(trial)
                for role in ("reference", "candidate") if trial % 2 == 0 else ("candidate", "reference"):
                    self._timed(role, trial, self._args(role, trial, calls), calls, times)
                if calls.failure is not None and not self._only_reported(calls):
                    return
            return
        for role in ("reference", "candidate"):
            for trial in trials:
                self._timed(role, trial, self._args(role, trial, calls), calls, times)
                if calls.failure is not None and not self._only_reported(calls):
                    return

    @staticmethod
    def _args(role: str, trial: int, calls: Any) -> list[Any]:
        """The inputs of ``role``'s call in ``trial``: the reference's own copy, made right before its call (so they
        are as warm in the L2 as the candidate's, written into the arena right before its call, when the L2 is not
        flushed); the candidate's call reads ``calls.pristine`` through the arena (drawn here, unless drawn)."""
        if role == "reference":
            return calls.make_args(trial)
        calls.draw(trial)
        return calls.pristine

    def _only_reported(self, calls: Any) -> bool:
        """Under ``eval.stricter_checks_decide=false``, a wrong timed output (not an input changed, not a lazy output:
        those keep their guards' policies) becomes a reported ``timed_output`` finding and the series goes on."""
        failure = calls.failure
        if self.cfg.get("stricter_checks_decide", True) or not failure or not failure.get("diff"):
            return False
        self.reported_wrong(failure["evidence"], failure["diff"])
        calls.failure = None
        return True

    def reported_wrong(self, evidence: str, diff: str) -> None:
        """A wrong output our stricter checks found, kept as a report (the first one of each check only)."""
        findings = self.result.guard_findings
        if not any(f.get("guard") == "timed_output" for f in findings):
            findings.append(self.guard.policies.found("timed_output", f"{evidence}\n{diff}"[:2000], verdict="report"))

    def _batches(self, calls: Any, times: dict[str, list[float]], spent: dict[str, float]) -> None:
        """The kept trials in batches of ``eval.telemetry_batch``, the GPU's state read before and after each
        (``cudaforge.eval.telemetry``); a batch taken while the GPU was throttled, or with its clock off, is measured
        again on new trials (at most ``eval.telemetry_remeasure`` times). After a batch, with at least
        ``eval.timing_min_trials`` kept, the timing stops once the speedup's interval is within
        ``eval.timing_stop_halfwidth`` (``cudaforge.eval.timing.stop_early``; ``fingerprint["timing_stopped_early"]``)."""
        from cudaforge.eval import telemetry

        cfg = self.cfg
        trials = list(range(cfg["timing_trials"]))
        size = int(cfg["telemetry_batch"]) if cfg["interleave"] and int(cfg["telemetry_batch"]) > 0 else len(trials)
        max_clock = (self.result.fingerprint.get("gpu") or {}).get("max_sm_clock_mhz")
        left, fresh, records = int(cfg["telemetry_remeasure"]), 100_000, []
        for start in range(0, len(trials), size):
            batch = trials[start : start + size]
            while True:
                clock = time.perf_counter()
                before = telemetry.sample(0)
                spent["telemetry"] = spent.get("telemetry", 0.0) + time.perf_counter() - clock
                lengths = {k: len(v) for k, v in times.items()}
                self._series(batch, calls, times)
                clock = time.perf_counter()
                after = telemetry.sample(0)
                spent["telemetry"] += time.perf_counter() - clock
                if calls.failure is not None:
                    break
                record = telemetry.batch_record(len(batch), before, after, max_clock, remeasure=left > 0)
                records.append(record)
                if not record["remeasured"]:
                    break
                left -= 1
                for key, n in lengths.items():
                    del times[key][n:]
                batch = [fresh + start + k for k in range(len(batch))]  # new trials (and inputs), parity kept
                fresh += 100_000
            if calls.failure is not None:
                break
            stopped = self._stopped_early(times, len(trials)) if cfg["interleave"] else None
            if stopped is not None:
                self.result.fingerprint["timing_stopped_early"] = stopped
                break
        self.result.telemetry = telemetry.summary(records)

    def _stopped_early(self, times: dict[str, list[float]], of: int) -> dict[str, Any] | None:
        """Whether the timing may stop now (``cudaforge.eval.timing.stop_early``): the speedup's interval on the
        worker's reported times within ``eval.timing_stop_halfwidth``, and, since the candidate could report steady
        times it never ran, the same interval on this process's own wall clock around each candidate call within
        twice that (the wall holds the exchange's jitter too). Decided on the times before the trace's correction."""
        from cudaforge.eval.timing import stop_early

        cfg = self.cfg
        rule = {
            "min_trials": int(cfg.get("timing_min_trials", of)),
            "max_trials": of,
            "baseline": cfg["baseline"],
            "statistic": cfg["speedup_statistic"],
        }
        halfwidth = float(cfg.get("timing_stop_halfwidth", 0.0))
        stopped = stop_early(times["ref"], times["cand"], halfwidth=halfwidth, **rule)
        walled = stop_early(times["ref"], times["cand_wall"], halfwidth=2 * halfwidth, **rule) if stopped else None
        if stopped is None or walled is None:
            return None
        return {
            **stopped,
            "wall_halfwidth": walled["halfwidth"],
            "wall_target": walled["target"],
            "on": "reported times and the verifier's wall clock, before the trace",
        }

    def launch_inclusive(self, calls: Any) -> None:
        """The number KernelBench's harness and the CudaForge paper report, measured here on the same kernels: CUDA
        events around each call with no timing lead (the host's launch cost inside) and no L2 flush, interleaved, every
        output still checked. Stored beside ours (``EvalResult.launch_inclusive``), never as the speedup."""
        from cudaforge.eval.timing import Stopwatch, speedup

        n = int(self.cfg["launch_inclusive_trials"])
        if n <= 0:
            return
        main, self.stopwatch = self.stopwatch, Stopwatch(self.device, False, 0.0)
        times: dict[str, list[float]] = {
            "ref": [],
            "ref_host": [],
            "cand": [],
            "cand_host": [],
            "cand_wall": [],
            "cand_trial": [],
        }
        try:
            with torch.cuda.device(self.device):
                self._series([-50_002, -50_001] + [50_000 + k for k in range(n)], calls, times)  # 2 warm-ups, n kept
        finally:
            self.stopwatch = main
        if calls.failure is not None or not times["cand"]:
            return
        s = speedup(
            times["ref"],
            times["cand"],
            self.cfg["baseline"],
            paired=bool(self.cfg["interleave"]),
            statistic=self.cfg["speedup_statistic"],
        )
        median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        self.result.launch_inclusive = {
            "reference_ms": median(times["ref"]),
            "candidate_ms": median(times["cand"]),
            "speedup": s.median,
            "ci_low": s.ci_low,
            "ci_high": s.ci_high,
            "trials": n,
            "how": "CUDA events around each call, no timing lead, no L2 flush",
        }

    def precision_probe(self) -> None:
        """The reference under TF32 and in bf16, each checked against the reference as timed on fresh inputs
        with the task's tolerance and timed alone (``cudaforge.eval.precision``); the candidate's process frozen."""
        from cudaforge.eval import precision

        cfg, result = self.cfg, self.result
        main = precision.policy_name(cfg["tf32"])
        inputs = [self.fresh_inputs(70_000)]
        expected = [_clone_output(_call_reference(self.ref_model, _clone(x))) for x in inputs]
        dtypes = [
            str(t.dtype).replace("torch.", "") for t in flatten_outputs(expected[0]) if isinstance(t, torch.Tensor)
        ]
        record = precision.policy_record(cfg["tf32"], dtypes)
        result.precision = record
        if not cfg["precision_probe"] or cfg["baseline"] != "eager":
            record["probe"] = "off" if not cfg["precision_probe"] else "only for the eager baseline"
            return
        known = precision.reusable_probe(self.known_probe, main)
        if known is not None:
            record.update(known, probe_reused=True)
            self.probe = precision.probe_tuple(main, known)
            return
        try:
            bf16 = precision.bf16_model(self.ref_model)
        except Exception as exc:  # noqa: BLE001 - a model that cannot be cast is probed under TF32 only
            bf16, record["bf16_note"] = None, f"{type(exc).__name__}: {exc}"[:200]
        runners = {p: (lambda xs, p=p: self._under(p, xs)) for p in ("strict_fp32", "tf32") if p != main}
        runners[main] = lambda xs: self._under(main, xs)
        if bf16 is not None:
            runners["bf16"] = lambda xs: precision.bf16_call(bf16, xs, expected[0])
        allowed, errors, solo, same = {}, {}, {}, []
        frozen = self.cand.process.stop()
        try:
            mains = [runners[main](_clone(x)) for x in inputs]
            for name, run in runners.items():
                if name == main:
                    continue
                problem, identical = "", True
                try:
                    for x, exp, ours in zip(inputs, expected, mains):
                        out = run(_clone(x))
                        identical = identical and _same_bits(out, ours)
                        mismatch = self.check(exp, out, 0)
                        if mismatch is not None:
                            problem = mismatch.summary()[:200]
                            break
                except Exception as exc:  # noqa: BLE001 - a precision the reference cannot run in is not allowed
                    problem, identical = f"{type(exc).__name__}: {exc}"[:200], False
                allowed[name], errors[name] = not problem, problem
                if identical and not problem:
                    same.append(name)  # the same kernels' bits: the same time, not measured again
                elif name != "bf16" or not problem:  # bf16 is timed only where the tolerance allows it
                    solo[name] = self._solo(run)
            if solo:
                solo[main] = self._solo(runners[main])
        finally:
            if frozen:
                self.cand.process.cont()
        allowed[main] = True
        record.update(
            reference_solo_ms={k: round(v, 6) for k, v in solo.items()},
            within_tolerance=allowed,
            same_bits_as_main=same,
            mismatch={k: v for k, v in errors.items() if v},
        )
        self.probe = precision.probe_tuple(main, record)

    def _solo(self, run: Callable[[list[Any]], Any]) -> float:
        """The median time of ``run`` alone on fresh inputs, timed like the reference (L2 flushed, the lead)."""
        from cudaforge.eval.timing import time_one

        seed = secrets.randbits(40)
        return (
            time_one(
                run,
                trials=PRECISION_TRIALS,
                warmup=2,
                flush_l2=self.cfg["flush_l2"],
                device=self.device,
                lead_us=self.cfg["timing_lead_us"],
                make_args=lambda t: [self.fresh_inputs(seed + t)],
            )
            .stats()
            .median
        )

    def _under(self, policy: str, inputs: list[Any]) -> Any:
        from cudaforge.eval.precision import numerics

        with numerics(policy):
            return self.reference_fn(*inputs)

    def start_trace(self) -> None:
        """Trace the candidate's timed calls from here on (``cudaforge.eval.timed_trace``), where the probe before the
        candidate was loaded showed that this worker can."""
        probe = self.result.fingerprint.get("timed_trace_probe") or {}
        if not probe.get("trace_ok"):
            self.trace_note = (
                "untimed_work not checked: this worker cannot trace its calls ("
                + str(probe.get("note") or "no probe")[:200]
                + ")"
            )
            return
        try:
            reply = self.cand._request({"op": "trace", "action": "start"})
        except _Failure as failure:
            reply = {"traced": False, "note": failure.message}
        if reply.get("traced") is True:
            self.traced = []
        else:
            self.trace_note = "failed: " + str(reply.get("note"))[:200]

    def stop_trace(self, times: dict[str, list[float]]) -> list[dict[str, str]]:
        """The trace's findings (``untimed_work``); each kept call's time raised to its device span (its own work and
        the kernels between it and the next call) where that is longer than its event time, so such work gains nothing
        even where the guard only reports. An incomplete record raises nothing: the guard's finding says why, and
        under ``report`` the speedup stands unverified."""
        from cudaforge.eval.timed_trace import checked_summary

        p, fingerprint = self.guard.policies, self.result.fingerprint
        if self.traced is None:
            if self.trace_note.startswith("failed: "):  # the probe traced, the candidate's process no longer does
                return [
                    p.found(
                        "untimed_work",
                        "the timed calls could not be traced, although the same trace worked in "
                        f"this process before the candidate was loaded ({self.trace_note[8:]}); do not start, "
                        "stop or hold torch's profiler or CUPTI",
                    )
                ]
            fingerprint.setdefault("guard_notes", []).append(self.trace_note)
            return []
        traced, self.traced = self.traced, None
        try:
            reply = self.cand._request({"op": "trace", "action": "stop"})
        except _Failure as failure:
            reply = {"note": failure.message}
        summary = checked_summary(reply.get("summary"), len(traced))
        if summary is None:
            return [
                p.found(
                    "untimed_work",
                    "the record of the timed calls could not be read ("
                    + str(reply.get("note") or "a malformed summary")[:200]
                    + "); do not start, stop or hold "
                    "torch's profiler or CUPTI",
                )
            ]
        spans = summary.pop("span_ms")
        raised = 0
        if summary["complete"]:
            span_of = dict(zip(traced, spans))
            for k, trial in enumerate(times["cand_trial"]):
                span = span_of.get(trial, 0.0)
                if span > times["cand"][k]:
                    times["cand"][k], raised = span, raised + 1
        summary["raised_to_span"] = raised
        fingerprint["timed_trace"] = summary
        found = []
        if not summary["complete"]:
            found.append(
                p.found(
                    "untimed_work",
                    f"the record of the timed calls is incomplete: {summary['why']} "
                    f"({summary['windows']} of the {len(traced)} calls delimited, {summary['events']} device "
                    "activities); do not call torch.cuda._sleep, start or stop a profiler, or launch more "
                    "than a few thousand kernels per call",
                )
            )
        if summary["escaped"]:
            found.append(
                p.found(
                    "untimed_work",
                    (
                        f"in {summary['escaped']} of {len(traced)} timed calls, device work ran outside the timed region: up to "
                        f"{summary['early_us']:.1f} us before the start event and {summary['late_us']:.1f} us after the end "
                        "event (the device's own timestamps, every stream). Work launched on another stream and not joined back "
                        "to the current stream is not in the call's time; make the current stream wait for every stream you "
                        "use (torch.cuda.current_stream().wait_stream(s)) before forward returns, or use the current stream."
                    ),
                )
            )
        if summary["outside"]:
            names = ", ".join(f"{name} ({us:.1f} us)" for name, us in summary["outside"])
            found.append(
                p.found(
                    "untimed_work",
                    (
                        f"kernels ran between the timed calls, outside any call ({summary['outside_us']:.1f} us: {names}; "
                        "their time is charged to the call before them): work launched from another thread, a hook, a signal "
                        "handler or a callback is not in any call's time. Do all the work inside forward, on the calling "
                        "thread."
                    ),
                )
            )
        return found

    def _timed(self, role: str, trial: int, inputs: list[Any], calls: Any, times: dict[str, list[float]]) -> None:
        """One timed call of ``role`` in ``trial`` (warm-up trials are negative: timed, not kept), its output checked."""
        if role == "reference":
            event_ms, host_ms, out = self.reference_call(inputs)
            if trial >= 0:
                times["ref"].append(event_ms)
                times["ref_host"].append(host_ms)
                calls.on_output("reference", trial, inputs, out)
            return
        event_ms, host_ms, wall_ms, out = self.candidate_call(calls.pristine, trial)
        if self.traced is not None:
            self.traced.append(trial)
        if trial >= 0:
            times["cand"].append(event_ms)
            times["cand_host"].append(host_ms)
            times["cand_wall"].append(wall_ms)
            times["cand_trial"].append(trial)
            problem = facts_problem(self.cand.facts, self.device)
            if problem and calls.failure is None:
                calls.failure = {"guard": "output_type", "evidence": f"timed trial {trial}: {problem}", "diff": ""}
            calls.on_output("candidate", trial, self.cand.inputs_after, out)

    def crosscheck(self, times: dict[str, list[float]]) -> dict[str, Any]:
        """Batches of calls on fresh inputs, back to back, timed by this process's clock from the moment the inputs
        are in the arena to the worker's answer (every output then checked): a time the candidate cannot shrink.
        The reference runs the same path here (its inputs decoded from the arena, its outputs written back into it),
        so its gap between that clock and its event time stands for the exchange's own cost. Each side is timed in
        ``CROSSCHECK_ROUNDS`` batches and keeps its fastest: a scheduling hiccup cannot fire the guard, a shortened
        time cannot hide in it. A gap is measured again (``CROSSCHECK_RETRIES``) before it fires: on the H200 an honest
        kernel was rejected once while another process profiled with ncu on the same GPU (2026-12-03, call 1)."""
        cfg = self.cfg
        per_call = tensor_bytes(self.fresh_inputs(-1)) + self.trials.out_bytes
        calls = crosscheck_calls(per_call, int(cfg["crosscheck_calls"]), float(cfg["crosscheck_max_gb"]))
        numbers: dict[str, Any] = {"calls": calls}
        free = torch.cuda.mem_get_info(self.device)[0] if self.device.type == "cuda" else None
        if free is not None and 2 * calls * per_call > free:  # the arena, and this side's inputs and outputs
            numbers["note"] = (
                f"not run: two calls' inputs and outputs ({2 * per_call / 2**30:.1f} GiB) twice over "
                f"exceed the GPU's free memory ({free / 2**30:.1f} GiB); the reported time is unchecked"
            )
            self.result.fingerprint.setdefault("guard_notes", []).append("timing cross-check " + numbers["note"])
            return numbers
        arena = self.cand.ensure_arena(calls * per_call + (1 << 20))
        ref_walls, cand_walls = [], []
        reported = sorted(times["cand"])[len(times["cand"]) // 2]
        reference_reported = sorted(times["ref"])[len(times["ref"]) // 2]
        # the path's own cost: the reference's through the arena here, or the worker's measured before the candidate
        # was loaded (``_exchange_cost``), whichever is larger: neither can be changed by the candidate
        exchange = _finite(self.result.fingerprint.get("timing_crosscheck_exchange_ms")) or 0.0
        p = self.guard.policies
        # the candidate's own launch path (a Triton launcher, an extension's wrapper) may cost more host time than the
        # reference's: the timing lead hides up to its length of it from the timed calls by design, so a gap below the
        # lead (or the slack, when larger) cannot tell a host-bound honest kernel from a lie
        allowed = max(p.threshold("crosscheck_slack_ms"), self.stopwatch.lead_us / 1e3)
        round_ = 0
        for attempt in range(1 + CROSSCHECK_RETRIES):  # noqa: B007 (read after the loop)
            for _ in range(CROSSCHECK_ROUNDS):
                batch = [self.fresh_inputs(20_000 + 100 * round_ + k) for k in range(calls)]
                round_ += 1
                frozen = self.cand.process.stop()
                try:
                    expected, wall = self._reference_through_arena(arena, batch)
                finally:
                    if frozen:
                        self.cand.process.cont()
                ref_walls.append(wall)
                arena.reset()
                encoded = [encode(list(x), arena.put) for x in batch]
                _sync(self.device)
                started = time.perf_counter()
                reply = self.cand._request(
                    {"op": "batch", "inputs": encoded, "out_offset": -(-arena._next // 256) * 256}
                )
                cand_walls.append(time.perf_counter() - started)
                self._check_batch(reply.get("outputs"), expected, calls)
            candidate_ms = max(0.0, min(cand_walls) - self.cand.process.rtt_s) * 1e3 / calls
            ref_wall = min(ref_walls) * 1e3 / calls
            path_overhead = max(max(0.0, ref_wall - reference_reported), exchange)
            gap = candidate_ms - reported - path_overhead
            firing = candidate_ms > p.threshold("crosscheck_ratio") * reported and gap > allowed
            if not firing:
                break
            # Another process's work on this GPU (a profiler's replays, another program) can slow a whole batch; a
            # shortened time stays short however often it is measured, so the guard fires only if it persists.
        numbers.update(
            candidate_observed_ms=round(candidate_ms, 5),
            candidate_reported_ms=round(reported, 5),
            reference_observed_ms=round(ref_wall, 5),
            reference_event_ms=round(reference_reported, 5),
            round_trip_ms=round(self.cand.process.rtt_s * 1e3, 4),
            rounds=round_,
        )
        numbers.update(unexplained_ms=round(gap, 5), allowed_ms=round(allowed, 5), exchange_ms=round(exchange, 5))
        if firing:
            numbers["evidence"] = (
                f"the candidate reported a median of {reported:.4f} ms per call, but {calls} calls on fresh inputs took "
                f"{candidate_ms:.4f} ms each by the verifier's clock (the reference: {reference_reported:.4f} ms by its "
                f"events, {ref_wall:.4f} ms by the same clock and path): {gap:.4f} ms per call are not in the reported "
                f"time (allowed: {allowed:.4f} ms), in each of {attempt + 1} measurements. The timing was shortened "
                "inside the candidate's process (patched events or timers, work on other streams or threads, work done "
                "before the timed region), or a call leaves state behind that slows the next one down. Time nothing "
                "yourself; do all the work inside forward."
            )
        return numbers

    def _reference_through_arena(self, arena: Arena, batch: list[list[Any]]) -> tuple[list[Any], float]:
        """The reference over ``batch`` the way the worker runs a candidate's batch: inputs placed in the arena and
        read back as views (copies on the device from a host arena), calls back to back, one sync, every output
        written into the arena, one sync. Its outputs (cloned, after the clock) and the wall time in seconds."""
        arena.reset()
        encoded = [encode(list(x), arena.put) for x in batch]
        out_offset = -(-arena._next // 256) * 256

        def get(desc: dict[str, Any]) -> torch.Tensor:
            view = arena.view(desc)
            return view if view.device == self.device else view.to(self.device)

        def put(t: torch.Tensor) -> dict[str, Any]:
            return arena.put(t if t.layout == torch.strided else t.to_dense())

        _sync(self.device)
        started = time.perf_counter()
        outs = [self.reference_fn(*decode(enc, get)) for enc in encoded]
        _sync(self.device)
        arena.reset()
        arena._next = out_offset
        for out in outs:
            encode(out, put)
        _sync(self.device)
        wall = time.perf_counter() - started
        return [_clone_output(o) for o in outs], wall

    def _check_batch(self, outs: Any, expected: list[Any], calls: int) -> None:
        if not isinstance(outs, list) or len(outs) != calls:
            raise _Failure(EvalStatus.INCORRECT, "the cross-check batch did not return one output per call")
        for k, (enc, exp) in enumerate(zip(outs, expected)):
            try:
                actual = self.cand.read_back(enc, self.trials.out_bytes)
            except ArenaError as exc:
                raise _Failure(EvalStatus.INCORRECT, f"the cross-check's outputs could not be read: {exc}") from None
            diff = _structure(self.cfg, exp, actual)
            mismatch = self.check(exp, actual, k) if diff is None else None
            if (diff or mismatch is not None) and not self.cfg.get("stricter_checks_decide", True):
                self.reported_wrong(f"cross-check call {k} of {calls}: a wrong output", diff or mismatch.summary())
                continue
            if diff or mismatch is not None:
                self.guard.incorrect(
                    "timed_output",
                    f"cross-check call {k} of {calls}: an output produced during a "
                    "batch of back-to-back calls was wrong (results must not depend on earlier calls, and "
                    "every call must finish its work before the batch answers)",
                    "an output of the timing cross-check was wrong\n" + (diff or mismatch.summary()),
                )

    def kernel_share(self) -> dict[str, Any] | None:
        """The profiler's split of the candidate's GPU time, as the worker reports it (a second-line guard)."""
        encoded, _ = self.cand.put_inputs(self.fresh_inputs(-10_000), self.trials.out_bytes)
        try:
            reply = self.cand._request(
                {"op": "share", "inputs": encoded, "source": self.source, "calls": PROFILED_CALLS}
            )
        except _Failure as failure:
            self.result.fingerprint.setdefault("guard_notes", []).append(
                f"profiler share unavailable: {failure.status.value}: {failure.message}"[:300]
            )
            return None
        share = reply.get("share")
        if not isinstance(share, dict) or not {"own_ms", "library_ms", "library_share", "library"} <= set(share):
            self.result.fingerprint.setdefault("guard_notes", []).append(
                str(reply.get("note") or "profiler share unavailable")[:300]
            )
            return None
        return share

    def finish(self, times, crosscheck, share, spent, calls) -> None:
        from cudaforge.eval.precision import policy_name as precision_policy_name
        from cudaforge.eval.precision import speedups as precision_speedups
        from cudaforge.eval.timing import speedup, summarize
        from cudaforge.hardware.roofline import make_roofline, task_cost
        from cudaforge.hardware.specs import peak_rates

        cfg, result, guard, p = self.cfg, self.result, self.guard, self.guard.policies
        clock = time.perf_counter()
        result.reference_timing = summarize(times["ref"])
        result.candidate_timing = summarize(times["cand"])
        result.speedup = speedup(
            times["ref"],
            times["cand"],
            cfg["baseline"],
            paired=bool(cfg["interleave"]),
            statistic=cfg["speedup_statistic"],
        )
        result.speedup.precision = precision_policy_name(cfg["tf32"])
        if self.probe is not None:
            main, solo, allowed = self.probe
            try:
                result.precision["speedups"] = precision_speedups(result.speedup.median, main, solo, allowed)
            except ValueError as exc:
                result.precision["speedups_note"] = str(exc)[:200]
        peaks = peak_rates(torch.cuda.get_device_name(self.device))
        cost = task_cost(self.ref_module, seed=cfg["seed"])
        result.fingerprint["roofline"] = make_roofline(
            cost, peaks, result.candidate_timing.median, "evaluator"
        ).to_dict()
        median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        result.fingerprint["host_ms_median"] = {
            "reference": median(times["ref_host"]),
            "candidate": median(times["cand_host"]),
            "candidate_verifier_wall": median(times["cand_wall"]),
        }
        found = []
        if crosscheck is not None:
            result.fingerprint["timing_crosscheck"] = {k: v for k, v in crosscheck.items() if k != "evidence"}
            if crosscheck.get("evidence"):
                found.append(p.found("timing_crosscheck", crosscheck["evidence"]))
        solo = result.fingerprint.get("reference_solo_ms")
        if solo:
            during = result.reference_timing.median
            excess = during - solo
            if excess > p.threshold("reference_slowdown_tolerance") * solo and excess > 0.005:
                found.append(
                    p.found(
                        "reference_slowdown",
                        (
                            f"the reference took {during:.4f} ms (median) while the candidate's process existed, against "
                            f"{solo:.4f} ms measured before any candidate code was loaded: something of the candidate's kept the "
                            "GPU busy while the reference ran (work left queued, or other processes). Leave no work running "
                            "after forward returns."
                        ),
                    )
                )
        evidence = guards.hidden_work(
            times["ref"], times["ref_host"], times["cand"], times["cand_host"], p.threshold("hidden_work_ms")
        )
        if evidence:
            found.append(p.found("hidden_work", evidence))
        l2 = int(getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0) or 0)
        evidence, numbers = guards.speed_of_light(
            cost, peaks, result.candidate_timing.median, p.threshold("speed_of_light_margin"), l2
        )
        result.fingerprint["speed_of_light"] = numbers
        if evidence:
            found.append(p.found("speed_of_light", evidence))
        if share is not None:
            result.fingerprint["kernel_share"] = share
            found += share_findings(share, p)
        spent["cost_and_guards"] = time.perf_counter() - clock
        spent.update(inputs=calls.seconds["inputs"], checks=calls.seconds["checks"])
        spent.update({f"trial_{k}": v for k, v in calls.detail.items()})
        result.fingerprint["timing_breakdown_s"] = {k: round(v, 4) for k, v in spent.items()}
        guard.add(found)


def _before_candidate(ref_model, ref_module, cand: Candidate, device, cfg, result: EvalResult) -> None:
    """What is measured before any candidate code exists, under the GPU's lock if it is free within a few seconds
    (a note when it is not): the reference timed alone (the baseline of the reference_slowdown guard), and the
    cost of the timing cross-check's path through this worker (``_exchange_cost``)."""
    from cudaforge.eval.timing import time_one
    from cudaforge.hardware.gpu_lock import GpuLockTimeout, gpu_lock

    seed = secrets.randbits(40)
    try:
        with gpu_lock(os.environ.get("CUDA_VISIBLE_DEVICES") or "0", timeout_s=5.0), grad_mode(cfg["no_grad"]):
            times = time_one(
                ref_model,
                trials=SOLO_TRIALS,
                warmup=3,
                flush_l2=cfg["flush_l2"],
                device=device,
                make_args=lambda t: make_inputs(ref_module, seed=seed + t, device=device),
                lead_us=cfg["timing_lead_us"],
            )
            result.fingerprint["reference_solo_ms"] = sorted(times.event_ms)[len(times.event_ms) // 2]
            try:
                _exchange_cost(ref_model, ref_module, cand, device, cfg, result, seed)
            except (_Failure, ArenaError, RuntimeError) as exc:  # the cross-check then stands on the reference's path
                result.fingerprint.setdefault("guard_notes", []).append(
                    f"the cross-check's exchange path was not measured: {exc}"[:300]
                )
    except GpuLockTimeout:
        result.fingerprint.setdefault("guard_notes", []).append(
            "reference_slowdown not checked: the GPU was busy when the reference would have been timed alone"
        )
    except Exception as exc:  # noqa: BLE001 - the reference's own failure shows in correctness
        result.fingerprint.setdefault("guard_notes", []).append(f"reference not timed alone: {type(exc).__name__}")


def _probe_trace(cand: Candidate, result: EvalResult) -> None:
    """Whether the worker can trace its timed calls (``cudaforge.eval.timed_trace``), asked before the candidate is
    loaded: a trace that worked here and fails later was broken by the candidate (``untimed_work`` fires)."""
    try:
        reply = cand._request({"op": "trace", "action": "probe"})
    except _Failure as failure:
        reply = {"trace_ok": False, "note": failure.message}
    result.fingerprint["timed_trace_probe"] = {
        "trace_ok": reply.get("trace_ok") is True,
        "note": str(reply.get("note") or "")[:300],
        "probe_s": _finite(reply.get("probe_s")),
    }


def _exchange_cost(ref_model, ref_module, cand: Candidate, device, cfg, result: EvalResult, seed: int) -> None:
    """The timing cross-check's batch path through the worker, timed by this process's clock while the worker holds
    only our code: the task's inputs placed in the arena as the cross-check places them, a stand-in of ours for the
    forward (unwritten tensors shaped like the reference's outputs), the outputs copied into the arena, the syncs.
    Its time per call (``fingerprint["timing_crosscheck_exchange_ms"]``) is what that path costs without any kernel:
    the cross-check sets it beside the candidate's batch (a 1.6 GB output's copies and allocations cost the worker
    more than the reference's own path here, and honest kernels came out 0.53 ms short on an H200)."""
    inputs = make_inputs(ref_module, seed=seed + 10_000, device=device)
    outputs = _call_reference(ref_model, _clone(inputs))
    per_call = tensor_bytes(inputs) + _out_bytes(outputs)
    calls = crosscheck_calls(per_call, int(cfg["crosscheck_calls"]), float(cfg["crosscheck_max_gb"]))
    if 2 * calls * per_call > torch.cuda.mem_get_info(device)[0]:
        return
    arena = cand.ensure_arena(calls * per_call + tensor_bytes(outputs) + (1 << 20))
    best = math.inf
    for _ in range(CROSSCHECK_ROUNDS):
        arena.reset()
        shaped = encode([outputs], arena.put)
        encoded = [encode(list(inputs), arena.put) for _ in range(calls)]
        _sync(device)
        started = time.perf_counter()
        cand._request(
            {"op": "exchange", "inputs": encoded, "outputs": shaped, "out_offset": -(-arena._next // 256) * 256}
        )
        best = min(best, time.perf_counter() - started)
    result.fingerprint["timing_crosscheck_exchange_ms"] = round(max(0.0, best - cand.process.rtt_s) * 1e3 / calls, 5)


_OVER_QUOTA = re.compile(r"\[Errno (?:28|122)\]|No space left on device|Disk quota exceeded")


def _quota_said(message: str, cfg: dict[str, Any]) -> str:
    """A failure whose text shows a write refused for space (``ENOSPC``, ``EDQUOT``) ends by saying which quota the
    candidate has: the sandbox's scratch folder and its private /tmp are bounded tmpfs. Only said, never a verdict
    (the host's own disk can be full too)."""
    if not _OVER_QUOTA.search(message[-20000:]):
        return message
    return (
        message
        + f"\n(a write was refused for space: the candidate may write {float(cfg.get('sandbox_scratch_gb', 0)):g} "
        f"GB and {int(cfg.get('sandbox_scratch_files', 0))} files in its scratch folder and as much in its /tmp, "
        "eval.sandbox_scratch_gb and eval.sandbox_scratch_files; write less, or keep it in memory)"
    )


def _count_late_builds(late: list[Any], phases: list[PhaseRecord], result: EvalResult) -> None:
    """Builds a candidate made after its compile phase (a ``load_inline`` whose arguments only run time knows) are
    compile time: their seconds move from the phase that made them to the compile phase, and the result says how
    many and how long (``fingerprint["builds_after_compile"]``)."""
    if not late:
        return
    seconds = sum(max(0.0, float(r.seconds)) for r in late)
    result.fingerprint["builds_after_compile"] = {
        "count": len(late),
        "seconds": round(seconds, 3),
        "cached": sum(bool(r.cached) for r in late),
    }
    compile_at = next((i for i, p in enumerate(phases) if p.phase is Phase.COMPILE), None)
    if compile_at is None:
        return
    for record in phases[compile_at + 1 :]:  # the first later phase long enough to have made them
        if record.seconds >= seconds:
            record.seconds -= seconds
            phases[compile_at].seconds += seconds
            phases[compile_at].message = "; ".join(
                filter(
                    None,
                    [phases[compile_at].message, f"{len(late)} build(s) at run time, {seconds:.2f} s, counted here"],
                )
            )
            return


# ---------------------------------------------------------------------------------- standby

_PREPARED: dict[str, Any] = {}
"""What ``prepare`` did in this process (empty when the verifier was not a standby)."""


def prepare(progress: Callable[[str], None], claimed: Callable[[], bool]) -> None:
    """A standby verifier's start-up, paid before its candidate is known (``cudaforge.isolation.Standby``):
    imports, the fingerprint's constant parts, the sandboxed worker (started and waited for), and the CUDA
    contexts of both processes, made while holding the GPU's lock (so neither lands inside another process's
    timed calls) and only until the standby is claimed."""
    from cudaforge.eval import build  # noqa: F401 - torch.utils.cpp_extension and the build service
    from cudaforge.eval.fastclose import warm, warm_host
    from cudaforge.eval.fingerprint import warm_caches
    from cudaforge.hardware.gpu_lock import GpuLockTimeout, gpu_lock

    started = time.perf_counter()
    # torch._inductor (torch._dynamo, sympy ...) is what a first FlopCounterMode imports (the cost model after the
    # timed trials): about 1 s on a laptop core, seconds on a GPU node.
    import torch._inductor  # noqa: F401
    import torch.utils.flop_counter  # noqa: F401

    import cudaforge.hardware.roofline  # noqa: F401
    import cudaforge.hardware.specs  # noqa: F401

    warm_caches()
    warm_host()
    payload = _standby_payload()
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    device = torch.device("cuda" if gpu and torch.cuda.is_available() else "cpu")
    cfg = payload.get("eval")
    if cfg:
        logs = os.getcwd()
        process = _start_worker(device, cfg, logs)
        _PREPARED["process"] = process
        try:
            process.wait_hello(cfg["static_timeout_s"])
        except WorkerFailure:
            pass  # the evaluation finds the worker dead and says why
    cuda_ready = False
    if device.type == "cuda":
        while not claimed():
            try:
                with gpu_lock(gpu.split(",")[0], timeout_s=0.1):
                    torch.empty(1, device="cuda").add_(1)
                    torch.cuda.synchronize()
                    warm(device)  # the output screen's first launch (Triton's once-per-process costs)
                    if "process" in _PREPARED and _PREPARED["process"].hello:
                        seed_trusted_stubs(
                            os.environ.get("TRITON_CACHE_DIR"), Path(_PREPARED["process"].scratch) / "triton"
                        )
                        _PREPARED["process"].request({"op": "cuda"}, timeout_s=60.0)
                    cuda_ready = True
                break
            except GpuLockTimeout:
                continue
            except WorkerFailure:
                break
    _PREPARED.update(prepare_s=round(time.perf_counter() - started, 4), cuda_ready=cuda_ready)


def _standby_payload() -> dict[str, Any]:
    """The settings a standby was started with (``CUDAFORGE_STANDBY_EVAL``, JSON), to start its worker ahead."""
    import json

    try:
        return {"eval": json.loads(os.environ["CUDAFORGE_STANDBY_EVAL"])}
    except (KeyError, ValueError):
        return {}


# --------------------------------------------------------------------------------- evaluate


JIT_AHEAD_MIN_S = 20.0
"""Compile-phase seconds that must be left for ``eval.jit_ahead=compile`` to start its copy (a fresh interpreter
took about 8 s on an H200)."""


def _jit_ahead(
    source: str,
    task: Task,
    init: list[Any],
    process: CandidateProcess,
    device: torch.device,
    cfg: dict[str, Any],
    timeout_s: float,
    build: bool,
) -> dict[str, Any] | None:
    """For a candidate in a JIT language that can be built ahead (Triton, TileLang; None for any other): how many
    compiled kernels its worker's cache of that language held after the candidate's import (what the CPU pool or
    an earlier evaluation built ahead, plus what the worker warmed with) and after the compile phase, as counted
    here; with ``build``
    (``eval.jit_ahead=compile``, the pool did not prepare it), its kernels are compiled in the compile phase, on
    fake tensors of the task's inputs (``cudaforge.eval.jit_prebuild``). The task's inputs are described from a
    module of the task loaded for this alone (a fake tensor must never stay in the reference the trials use).
    What cannot be described, or a copy that fails, is a note, not a verdict; a worker that stops answering is the
    candidate's failure, in the compile phase."""
    from cudaforge.eval.jit_prebuild import input_sets, reported_kernels, specs
    from cudaforge.vendor import current

    name = languages.detect(source)
    if name == languages.NO_KERNEL or languages.get(name).prebuild is None or not languages.get(name).jit_cache:
        return None
    cache = Path(process.scratch) / languages.get(name).jit_cache
    marks = languages.get(name).jit_kernel_marks
    record: dict[str, Any] = {"language": name, "kernels_seeded": count_kernels(cache, marks)}
    if not build or timeout_s < JIT_AHEAD_MIN_S:
        record.update(kernels=[], kernels_after=record["kernels_seeded"], note="")
        if build:
            record["note"] = f"{name} kernels not compiled ahead: {timeout_s:.0f} s of the compile phase left"
        elif record["kernels_seeded"]:
            record["note"] = f"{name} kernels found built ahead: {record['kernels_seeded']} in the worker's cache"
        return record
    major, minor = torch.cuda.get_device_capability(device)
    target = current().jit_target(f"{major}.{minor}")
    try:
        if target is None:
            raise ValueError(f"no JIT target for compute capability {major}.{minor}")
        ref = load_module(task.source, f"_cudaforge_jit_inputs_{task.source_hash[:12]}")
        sys.modules.pop(ref.__name__, None)
        request = {
            "op": "prebuild",
            "language": name,
            "init": specs(init),
            "target": target,
            "seed": cfg["seed"],
            "inputs": input_sets(ref, task.input_variants if cfg["check_variants"] else (), seed=cfg["seed"] * 1000),
            "timeout_s": timeout_s - 10.0,
        }
    except Exception as exc:  # noqa: BLE001 - the task's own code under fake tensors: anything may raise
        record.update(
            kernels=[],
            kernels_after=record["kernels_seeded"],
            error=str(exc)[:300],
            note=f"{name} kernels not compiled ahead: {str(exc)[:200]}",
        )
        return record
    try:
        reply = process.request(request, timeout_s=timeout_s - 5.0)
    except WorkerFailure as failure:  # the copy has its own deadline 5 s sooner: this is the worker's doing
        raise _Failure(EvalStatus(failure.status), failure.message) from None
    kernels = reported_kernels(reply)
    error = reply.get("error") if isinstance(reply.get("error"), str) else ""
    record.update(
        kernels=kernels,
        error=error[:300],
        kernels_after=count_kernels(cache, marks),
        seconds=reply.get("seconds") if isinstance(reply.get("seconds"), (int, float)) else None,
    )
    record["note"] = (
        f"{name} kernels compiled ahead: {', '.join(kernels)}"
        if kernels
        else f"no {name} kernel compiled ahead" + (f" ({error[:200]})" if error else "")
    )
    return record


def _evict(build: dict[str, Any]) -> None:
    """Keep the build cache under ``eval.build_cache_max_gb`` after a JIT cache was kept in it (a run of Triton
    candidates builds nothing that would evict otherwise)."""
    import contextlib

    from cudaforge.caches import GB, evict_lru
    from cudaforge.eval.build import BuildSettings

    settings = BuildSettings.from_dict(build)
    if settings.max_cache_gb > 0:
        with contextlib.suppress(OSError):
            evict_lru(settings.cache_root(), int(settings.max_cache_gb * GB), pch_root=settings.pch_root())


def _phase_status(status: EvalStatus) -> str:
    return {EvalStatus.TIMEOUT: "timeout", EvalStatus.CRASHED: "crashed"}.get(status, "failed")


PROFILE_DIR_ENV = "CUDAFORGE_PROFILE_DIR"
"""A folder (set in the evaluator's environment, for benchmarks): each evaluation of this process writes a
``cProfile`` dump of its trusted side there (``verifier-<pid>-<ns>.prof``). Unset, nothing is profiled."""


def evaluate(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Evaluate ``payload = {task, candidate, eval, build, device}``; return an EvalResult dict."""
    folder = os.environ.get(PROFILE_DIR_ENV)
    if not folder:
        return _evaluate(payload, progress)
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        return _evaluate(payload, progress)
    finally:
        profiler.disable()
        Path(folder).mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(str(Path(folder) / f"verifier-{os.getpid()}-{time.time_ns()}.prof"))


def _evaluate(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    from cudaforge.eval.build import BuildSettings
    from cudaforge.eval.build.deferred import reported_misses, reported_sites
    from cudaforge.eval.build.intercept import serve_build_counted
    from cudaforge.eval.fingerprint import environment_fingerprint

    started = time.perf_counter()
    task = Task.from_dict(payload["task"])
    source, cfg = payload["candidate"], payload["eval"]
    apply_numerics(cfg["tf32"], cfg["deterministic"])
    device = torch.device(payload["device"])
    digest = source_hash(source)
    result = EvalResult(task_id=task.id, candidate_hash=digest, status=EvalStatus.CORRECT, device=str(device))
    result.fingerprint = environment_fingerprint(0 if device.type == "cuda" else None)
    result.fingerprint["worker_setup_s"] = round(time.perf_counter() - started, 4)
    result.fingerprint["standby"] = {k: v for k, v in _PREPARED.items() if k != "process"} or None
    rec = _Recorder(progress)
    guard = _Guards(cfg, result)
    notes: list[str] = result.fingerprint.setdefault("guard_notes", [])
    from cudaforge.eval import early

    process: CandidateProcess | None = _PREPARED.pop("process", None) or early.take()
    phase_started = time.monotonic()
    phase_budget = [cfg["static_timeout_s"]]

    def remaining() -> float:
        return max(0.5, phase_budget[0] - (time.monotonic() - phase_started) - 1.0)

    def enter(phase: Phase, announce: bool = True) -> float:
        nonlocal phase_started
        phase_started = time.monotonic()
        phase_budget[0] = {
            Phase.COMPILE: cfg["compile_timeout_s"],
            Phase.CORRECTNESS: cfg["correctness_timeout_s"],
            Phase.TIMING: cfg["timing_timeout_s"],
        }[phase]
        return rec.start(phase) if announce else time.perf_counter()

    phase, t = Phase.COMPILE, time.perf_counter()
    own_caches: dict[str, Path] = {}  # a JIT language's folder of the worker's scratch -> the source's kept copy
    builds_at_compile: int | None = None  # how many builds the worker had made when its compile phase ended
    try:
        too_large = source_size_problem(source, int(cfg["max_source_bytes"]))  # the parent's limit, here too
        if too_large:
            raise _Failure(EvalStatus.INVALID, too_large)
        guard.add(static_findings(source, guard.policies, task.source))  # nothing of the candidate has run yet
        if process is None or not process.process.alive() or process.mode is not SandboxMode(cfg["sandbox"]):
            if process is not None:
                process.close()
            process = _start_worker(device, cfg, os.getcwd())
            process.wait_hello(cfg["static_timeout_s"])
        elif not process.hello:
            process.wait_hello(cfg["static_timeout_s"])
        status = process.sandbox_status()
        result.fingerprint["sandbox"] = {
            k: status.get(k)
            for k in (
                "uid",
                "capabilities",
                "namespaces",
                "landlock",
                "pids_max",
                "kill_all",
                "missing",
                "notes",
                "mode",
            )
        }
        result.fingerprint["sandbox_summary"] = process.sandbox_line()
        cand = Candidate(process, device, remaining, notes)
        ref_module = load_module(task.source, REFERENCE_MODULE)
        sys.modules.pop(REFERENCE_MODULE, None)
        init = list(ref_module.get_init_inputs())
        ref_model = build_model(ref_module.Model, init, cfg["seed"], device)
        if device.type == "cuda":
            _before_candidate(ref_model, ref_module, cand, device, cfg, result)
            _probe_trace(cand, result)
        t = enter(phase)
        settings = BuildSettings.from_dict(
            {
                **payload["build"],
                "sandbox": cfg["sandbox"],
                "sandbox_namespaces": bool(cfg.get("sandbox_namespaces", True)),
                "allow_weak_sandbox": bool(cfg.get("allow_weak_sandbox", False)),
            }
        )

        def on_build(inputs: dict[str, Any]) -> dict[str, Any]:
            return serve_build_counted(inputs, process.builds, settings, process.scratch, process.sandbox.uid)

        cand.on_build = on_build
        seed_trusted_stubs(os.environ.get("TRITON_CACHE_DIR"), Path(process.scratch) / "triton")
        prepared = False  # the source's JIT kernels were kept before (by the CPU pool, or an earlier evaluation)
        if "pid" in (status.get("namespaces") or []):  # all of the sandbox dies with its init: its files are still
            for language in languages.jit_caches(source):  # when they are read (keep_own_jit_cache); only the
                store = own_store(settings.cache_root(), language.jit_cache, digest)  # languages it is written in
                own_caches[language.jit_cache] = store
                prepared = prepared or count_kernels(store, language.jit_kernel_marks) > 0
                seed_own_jit_cache(store, Path(process.scratch) / language.jit_cache)
        loaded: dict[str, Any] = {}
        try:
            loaded = process.request(
                {
                    "op": "load",
                    "source": source,
                    "module": CANDIDATE_MODULE_PREFIX + digest,
                    "build": settings.to_dict(),
                    "tf32": cfg["tf32"],
                    "deterministic": cfg["deterministic"],
                    "no_grad": cfg["no_grad"],
                },
                timeout_s=remaining(),
                on_build=on_build,
            )
        except WorkerFailure as failure:
            failed = [r for r in process.builds if r.status == "failed"]
            if failure.status == "compile_error" and failed:  # our own log, not the worker's account of it
                raise _Failure(
                    EvalStatus.COMPILE_ERROR, "the CUDA source did not compile:\n" + failed[0].log_trimmed
                ) from None
            raise _Failure(EvalStatus(failure.status), failure.message) from None
        finally:
            result.compile_log = cap_text("".join(r.log for r in process.builds))  # the result stays readable
            result.compile_cached = bool(process.builds) and all(r.cached for r in process.builds)
            failed = [r for r in process.builds if r.status == "failed"]
            if failed:
                result.compile_log_trimmed = cap_text(failed[0].log_trimmed)
        ahead = reported_sites(loaded)
        result.fingerprint["builds_ahead"] = ahead
        left = reported_misses(loaded)
        if left:
            result.fingerprint["builds_left_to_run_time"] = left
        compile_note = "cache hit" if result.compile_cached else ""
        if ahead:
            compile_note = "; ".join(filter(None, [compile_note, "built ahead: " + ", ".join(ahead)]))
        if left:
            compile_note = "; ".join(filter(None, [compile_note, "; ".join(left)]))
        if device.type == "cuda":
            build = cfg.get("jit_ahead") == "compile" and not prepared
            jit = _jit_ahead(source, task, init, process, device, cfg, remaining(), build)
            if jit:
                result.fingerprint["jit_ahead"] = jit
                compile_note = "; ".join(filter(None, [compile_note, jit["note"]]))
        rec.end(phase, t, message=compile_note)
        builds_at_compile = len(process.builds)
        phase = Phase.CORRECTNESS
        t = enter(phase)
        clock = time.perf_counter()
        encoded, _ = cand.put_inputs(init, 0)
        cand._request({"op": "model", "init": encoded, "seed": cfg["seed"]})
        _weights(ref_model, cand, cfg, result)
        cand._add("model", clock)
        try:
            trials = _correctness(task, ref_module, ref_model, cand, device, cfg, result, guard)
        finally:
            result.fingerprint["correctness_breakdown_s"] = {k: round(v, 4) for k, v in cand.spent.items()}
            cand.spent = {}
        rec.end(phase, t, message=f"{result.trials_passed}/{result.trials_total} trials passed")
        weights = result.fingerprint.get("weights", "seed")
        weights_text = "weights from the same seed" if weights == "seed" else f"weights {weights}"
        if device.type != "cuda":
            result.timing_unavailable_reason = "no GPU: correctness was checked on the CPU; timing needs a GPU"
            if result.fingerprint.get("inputs_variant") == "small":
                weights_text += ", on the task's 'small' inputs (its own are sized for a GPU)"
            result.message = (
                f"correct on {result.trials_passed} CPU trials ({weights_text}); {result.timing_unavailable_reason}"
            )
        else:
            phase = Phase.TIMING
            t = enter(phase)
            timing = _Timing(task, ref_module, ref_model, cand, device, cfg, result, guard, trials, source)
            timing.known_probe = payload.get("known_probe")
            timing.run(progress, on_locked=lambda: enter(Phase.TIMING, announce=False))
            rec.end(phase, t)
            s = result.speedup
            result.message = (
                f"correct ({result.trials_passed} trials, {weights_text}); candidate {result.candidate_timing.median:.4f} "
                f"ms vs reference {result.reference_timing.median:.4f} ms ({cfg['baseline']}): speedup {s.median:.3f}x "
                f"[{s.ci_low:.3f}, {s.ci_high:.3f}]"
            )
    except _Failure as failure:
        result.status, result.message = failure.status, failure.message
        if failure.status in (EvalStatus.TIMEOUT, EvalStatus.CRASHED):
            result.message = f"{phase.value} phase: {failure.message}"
        if failure.status in (EvalStatus.RUNTIME_ERROR, EvalStatus.CRASHED):
            result.message = _quota_said(result.message, cfg)
        ok = failure.status is EvalStatus.COMPILED
        rec.end(phase, t, status="ok" if ok else _phase_status(failure.status), message=failure.message[:500])
    except WorkerFailure as failure:
        result.status, result.message = EvalStatus(failure.status), failure.message
        if result.status in (EvalStatus.TIMEOUT, EvalStatus.CRASHED):
            result.message = f"{phase.value} phase: {failure.message}"
        rec.end(phase, t, status=_phase_status(result.status), message=failure.message[:500])
    finally:
        tail_started = time.perf_counter()  # the worker's end and its files kept: no phase's time
        if process is not None:
            try:
                if own_caches:
                    process.process.kill()  # every process of the sandbox dead before its files are read
                    jit = result.fingerprint.get("jit_ahead")
                    if isinstance(jit, dict) and languages.get(jit["language"]).jit_cache:
                        language = languages.get(jit["language"])
                        jit["kernels_at_end"] = count_kernels(
                            Path(process.scratch) / language.jit_cache, language.jit_kernel_marks
                        )
                    new_store = False
                    for folder, store in own_caches.items():
                        existed = store.exists()
                        keep_own_jit_cache(
                            Path(process.scratch) / folder,
                            store,
                            next(lang.jit_keep for lang in languages.jit_caches() if lang.jit_cache == folder),
                        )
                        new_store = new_store or (not existed and store.exists())
                    if new_store:  # what was kept counts in the cache's size limit like a build (a later keep of
                        _evict(payload["build"])  # the same source adds at most to its own capped store)
            except Exception as exc:  # noqa: BLE001 - the candidate's files never decide the verdict or the cleanup
                result.fingerprint["jit_keep_error"] = f"{type(exc).__name__}: {exc}"[:300]
            finally:
                process.close()  # the scratch released and the worker ended, whatever the keep met
    if not notes:
        result.fingerprint.pop("guard_notes", None)
    if builds_at_compile is not None and process is not None:
        _count_late_builds(process.builds[builds_at_compile:], rec.phases, result)
    result.phases = rec.phases
    result.seconds = time.perf_counter() - started
    result.fingerprint["verifier_s"] = {
        "total": round(result.seconds, 4),
        "tail": round(time.perf_counter() - tail_started, 4),
    }
    return result.to_dict()
