"""The correctness phase: seeded trials, the declared variants, each output checked, then the sensitivity guard."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from cudaforge.eval.bounded import cap_text
from cudaforge.eval.guards import runtime as guards
from cudaforge.eval.guards.policy import REJECT
from cudaforge.eval.hidden import (
    DISTRIBUTIONS,
    HIDDEN_PREFIX,
    count_nonfinite,
    degenerate,
    derive,
    disagreement,
    fp64_bytes,
    fp64_model,
    precision_against_fp64,
    widened,
)
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.verifier.candidate import Candidate
from cudaforge.eval.verifier.common import (
    Failure,
    Guards,
    clone_inputs,
    compare_outputs,
    facts_problem,
    output_budget,
    shapes_of,
    structure,
    sync,
    tolerance,
)
from cudaforge.tasks.runtime import DEFAULT_VARIANT, grad_mode, load_module, make_inputs
from cudaforge.types import EvalResult, EvalStatus


class Trials:
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
                self.default_shapes = shapes_of(inputs)
                self.candidate_base, self.reference_base = cand_out, guards.snapshot(ref_out)
            else:
                self.candidate_constant &= guards.same_bits(cand_out, self.candidate_base)
                self.reference_constant &= guards.same_bits(ref_out, self.reference_base)
            self.default_trials += 1
        self.previous = cand_out
        self.poison_sizes = guards.tensor_bytes([ref_out]) if self.poison else []


def explain(variant: str, inputs: list[Any], trials: Trials, cand_out: Any, device, trial: int) -> tuple[str, str]:
    """Which guard explains a wrong output of ``trial`` (shape specialisation, poison, caching), if any."""
    guard, evidence = guards.explain_mismatch(cand_out, trials.previous, device, f"trial {trial}")
    shapes = shapes_of(inputs)
    if variant != trials.base and trials.default_trials and shapes != trials.default_shapes:
        evidence = (
            f"correct on the default inputs ({trials.default_shapes}) in {trials.default_trials} trials, wrong on "
            f"the declared variant {variant!r} with inputs {shapes}: the kernel seems written for one shape. "
            "Take sizes and strides from the inputs at run time and handle the remainders."
            + (f" ({evidence})" if guard == "uninitialised_memory" else "")
        )
        guard = "shape_specialisation"
    return guard, evidence


def check_output(
    task,
    cfg,
    guard: Guards,
    trials: Trials,
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
    problem = facts_problem(cand.facts, device) or structure(cfg, ref_out, cand_out)
    if problem:
        guard.fire("output_type", f"trial {trial}: {problem}")
    atol, rtol = tolerance(task, ref_out, cfg)
    diff = compare_outputs(cfg, ref_out, cand_out, atol=atol, rtol=rtol, trial=trial, variant=variant)
    if diff is not None:
        result.diff = diff
        message = "output mismatch\n"
        if variant.startswith(HIDDEN_PREFIX):
            name = variant[len(HIDDEN_PREFIX) :]
            message = f"output mismatch on the hidden input distribution {name!r} ({DISTRIBUTIONS[name][1]})\n"
            if not cfg.hidden_inputs_show_values:
                diff.worst = []  # the agents learn the distribution and the error's size, not the values
        guard.incorrect(*explain(variant, inputs, trials, cand_out, device, trial), message + diff.summary())


def set_weights(ref_model: Any, cand: Candidate, cfg: EvalConfig, result: EvalResult) -> None:
    """``eval.weights=copy_matching``: the reference's parameters and buffers copied into ModelNew where names and
    shapes match (reported); ``authors``: the CudaForge authors' aligner (``cudaforge.eval.align``); ``seed`` (the
    default, KernelBench's way): both built with the same seed, nothing copied."""
    mode = cfg.weights.value
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


def known_fp64(value: Any) -> dict[str, Any] | None:
    """An earlier evaluation's decisions on the task's reference against its fp64 evaluation
    (``cudaforge.eval.known.reference_decisions``, ``fp64``): ``{"trusted": bool, "base_nonfinite": int}``, or None
    when there are none or they are malformed (decided again)."""
    if not isinstance(value, dict) or set(value) != {"trusted", "base_nonfinite"}:
        return None
    trusted, count = value["trusted"], value["base_nonfinite"]
    if not isinstance(trusted, bool) or isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return None
    return {"trusted": trusted, "base_nonfinite": count}


class Wide:
    """The reference evaluated in float64 (``eval.fp64_reference``): its model copied once, when first needed, and
    dropped with the correctness phase; ``error`` says why there is none."""

    def __init__(self, ref_model: Any, cfg: EvalConfig) -> None:
        self.ref_model = ref_model
        self.enabled = bool(cfg.fp64_reference)
        self.max_bytes = int(cfg.fp64_max_gb * 2**30)
        self.model: Any = None
        self.error = "" if self.enabled else "eval.fp64_reference=false"
        self.trusted = True
        """The default inputs' fp32 reference agrees with its fp64 evaluation (else only finiteness judges a hidden
        distribution: a reference run in TF32, say)."""
        self.base_nonfinite = 0
        self.known: dict[str, Any] | None = None
        """``trusted`` and ``base_nonfinite`` as an earlier evaluation of the task decided them (``known_fp64``),
        taken as they are: the comparison of the reference with itself is not made again."""
        self.decided = False
        """Both were decided here (the evaluator keeps them for the task's next evaluations)."""

    def take(self, known: dict[str, Any] | None) -> None:
        """An earlier evaluation's decisions on the reference (``known_fp64``), when there are any."""
        if known is not None and self.enabled:
            self.known, self.trusted, self.base_nonfinite = known, known["trusted"], known["base_nonfinite"]

    def __call__(self, inputs: list[Any], ref_out: Any = None) -> Any | None:
        """The fp64 reference's output on ``inputs`` (None when there is none: not made, or too large beside
        ``ref_out``, the fp32 output, for ``eval.fp64_max_gb`` or half the device's free memory)."""
        if self.error:
            return None
        need = fp64_bytes(inputs, ref_out)
        budget = self.max_bytes
        if (
            torch.cuda.is_available()
            and torch.cuda.is_initialized()
            and any(isinstance(t, torch.Tensor) and t.is_cuda for t in inputs)
        ):
            budget = min(budget, torch.cuda.mem_get_info()[0] // 2)
        if need > budget:
            self.error = (
                f"an fp64 evaluation of the reference needs {need / 2**30:.1f} GiB, more than the "
                f"{budget / 2**30:.1f} GiB it may take here (eval.fp64_max_gb, half the free device memory)"
            )
            return None
        try:
            if self.model is None:
                self.model = fp64_model(self.ref_model)
            with grad_mode(True):
                return self.model(*widened(clone_inputs(inputs)))
        except Exception as exc:  # noqa: BLE001 - a reference that cannot run in fp64 (a half-only op, no memory)
            self.error = f"the reference does not run in fp64: {type(exc).__name__}: {str(exc)[:200]}"
            self.model = None
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.empty_cache()  # what an out-of-memory fp64 copy left cached goes back before the trials
            return None

    def compare(self, how: Callable[..., str], ref_out: Any, wide_out: Any, atol: float, rtol: float) -> str:
        """``how(ref_out, wide_out, atol=, rtol=)``; "" (and no fp64 reference from then on) when the comparison
        itself cannot run here (out of device memory): a failure of ours is never the candidate's verdict."""
        try:
            return how(ref_out, wide_out, atol=atol, rtol=rtol)
        except (torch.OutOfMemoryError, RuntimeError) as exc:
            self.error = f"the comparison with the fp64 reference could not run: {type(exc).__name__}"
            self.model = None
            return ""

    def record(self) -> dict[str, Any]:
        """What ``result.checks["fp64"]`` says of the fp64 reference itself."""
        out: dict[str, Any] = {"available": not self.error}
        if self.decided and not self.error:
            out["reference"] = {"trusted": self.trusted, "base_nonfinite": self.base_nonfinite}
        elif self.known is not None:
            out["reference_known"] = True
        if self.error:
            out["note"] = self.error
        elif not self.trusted:
            out["note"] = (
                "the fp32 reference disagrees with its fp64 evaluation on the default inputs (TF32, or reduced "
                "precision): hidden distributions are judged by finiteness alone"
            )
        return out


class Memory:
    """Peak device memory of one call on the default inputs (GPU): the reference's measured here, the candidate's
    from the worker's allocator, bounded below by the bytes of what it returned."""

    def __init__(self, ref_model: Any, device: torch.device) -> None:
        self.on = device.type == "cuda"
        self.device = device
        tensors = (
            list(ref_model.parameters()) + list(ref_model.buffers()) if isinstance(ref_model, torch.nn.Module) else []
        )
        self.ref_state = sum(t.numel() * t.element_size() for t in tensors)
        self.reference = 0
        self.candidate = 0

    def around_reference(self, call: Callable[[], Any]) -> Any:
        """``call()`` (the reference's forward), its peak allocation beyond what was held before it noted."""
        if not self.on:
            return call()
        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        before = torch.cuda.memory_allocated(self.device)
        out = call()
        torch.cuda.synchronize(self.device)
        self.reference = max(self.reference, self.ref_state + torch.cuda.max_memory_allocated(self.device) - before)
        return out

    def of_candidate(self, reply: Any, out: Any) -> None:
        """The worker's ``{"held", "peak"}`` of a call, read as numbers, never below the outputs' bytes."""
        peak = reply.get("peak") if isinstance(reply, dict) else None
        floor = sum(guards.tensor_bytes([out]))
        value = int(peak) if isinstance(peak, int) and 0 <= peak < 1 << 50 else 0
        self.candidate = max(self.candidate, value, floor)

    def record(self, result: EvalResult) -> None:
        if not self.on or not self.reference:
            return
        result.memory = {
            "reference_bytes": self.reference,
            "candidate_bytes": self.candidate,
            "ratio": round(self.candidate / self.reference, 4),
            "how": "peak allocated in one call on the default inputs, with the model's own tensors (the candidate's: "
            "all its worker held), inputs not counted",
        }


def trial_inputs(ref_module: Any, cfg: EvalConfig, variant: str, trial: int, base: str, device) -> list[Any]:
    """A trial's fresh inputs: the task's (``variant`` default or declared), or a hidden distribution of the base
    inputs."""
    seed = cfg.seed * 1000 + trial
    if variant.startswith(HIDDEN_PREFIX):
        return derive(make_inputs(ref_module, seed=seed, variant=base, device=device), variant[len(HIDDEN_PREFIX) :])
    return make_inputs(ref_module, seed=seed, variant=variant, device=device)


def correctness_plan(task, cfg: EvalConfig, base: str) -> list[tuple[str, int]]:
    """(variant, trial) of every correctness trial: the plain trials, the task's declared variants, then the hidden
    distributions."""
    plan = [(base, t) for t in range(cfg.correctness_trials)]
    if cfg.check_variants and base == DEFAULT_VARIANT:
        plan += [(v, len(plan) + i) for i, v in enumerate(task.input_variants)]
    return plan + [(HIDDEN_PREFIX + name, len(plan) + i) for i, name in enumerate(cfg.hidden_inputs)]


def run_correctness(
    task, ref_module, ref_model, cand: Candidate, device, cfg, result: EvalResult, guard: Guards, known=None
):
    """Every correctness trial (``correctness_plan``), each output checked; the precision checks on the first; the
    sensitivity guard after them (``known``: what an earlier evaluation of the task decided of its reference,
    ``cudaforge.eval.known.reference_decisions``). Returns what the trials leave for the timing phase's guards."""
    phase = Correctness(task, ref_module, ref_model, cand, device, cfg, result, guard)
    decided = (known or {}).get("hidden")
    phase.known = {str(k): str(v) for k, v in decided.items()} if isinstance(decided, dict) else {}
    phase.wide.take(known_fp64((known or {}).get("fp64")))
    plan = correctness_plan(task, cfg, phase.trials.base)
    result.trials_total = len(plan)
    if phase.trials.base != DEFAULT_VARIANT:
        result.fingerprint["inputs_variant"] = phase.trials.base
    if cfg.hidden_inputs:
        result.checks["hidden"] = phase.hidden
    try:
        for variant, trial in plan:
            phase.trial(variant, trial)
    finally:
        result.checks["fp64"] = {**phase.wide.record(), **result.checks.get("fp64", {})}
        phase.wide.model = None
        phase.memory.record(result)
    sensitivity(ref_module, ref_model, cand, device, cfg, phase.trials, guard)
    return phase.trials


class Correctness:
    """The correctness phase's state: the trials so far, the fp64 reference, the memory peaks, the hidden
    distributions kept and dropped."""

    def __init__(self, task, ref_module, ref_model, cand: Candidate, device, cfg, result: EvalResult, guard: Guards):
        self.task, self.ref_module, self.ref_model, self.cand = task, ref_module, ref_model, cand
        self.device, self.cfg, self.result, self.guard = device, cfg, result, guard
        self.trials = Trials("small" if cpu_scaled(task, device, ref_module) else DEFAULT_VARIANT)
        self.trials.poison = bool(cfg.poison_memory)
        self.wide, self.memory = Wide(ref_model, cfg), Memory(ref_model, device)
        self.hidden: dict[str, Any] = {"kept": [], "dropped": {}, "decided": {}}
        self.known: dict[str, str] = {}
        """Hidden distributions an earlier evaluation of the task judged: "" (the reference can judge it) or why
        not; they are not judged again."""

    def trial(self, variant: str, trial: int) -> None:
        """One trial: fresh inputs, the reference (and its fp64 evaluation where needed), a hidden distribution the
        reference cannot judge dropped, the candidate's call, its output checked."""
        cand, trials, device = self.cand, self.trials, self.device
        hidden = variant.startswith(HIDDEN_PREFIX)
        if hidden and self.known.get(variant[len(HIDDEN_PREFIX) :]):
            self.drop(variant, self.known[variant[len(HIDDEN_PREFIX) :]], decided=False)
            return
        clock = time.perf_counter()
        inputs = trial_inputs(self.ref_module, self.cfg, variant, trial, trials.base, device)
        sync(device)
        clock = cand._add("draw_inputs", clock)
        first = variant == trials.base and trials.default_trials == 0
        try:
            cloned = clone_inputs(inputs)  # before the reference's memory is measured: inputs are not counted
            with grad_mode(self.cfg.no_grad):
                call = lambda: call_reference(self.ref_model, cloned)  # noqa: E731
                ref_out = self.memory.around_reference(call) if variant == trials.base else call()
        except Failure as failure:
            if not hidden:
                raise
            self.drop(variant, failure.message)  # the reference's own failure: it cannot judge this distribution
            return
        sync(device)
        clock = cand._add("reference", clock)
        wide_out = None
        if first or (hidden and variant[len(HIDDEN_PREFIX) :] not in self.known):
            wide_out = self.wide(inputs, ref_out)
            sync(device)
            clock = cand._add("fp64_reference", clock)
        if not self.judged(variant, first, ref_out, wide_out):
            return
        trials.out_bytes = max(trials.out_bytes, output_budget(ref_out))
        cand_out = cand.call(
            inputs,
            what=f"ModelNew.forward (trial {trial}, {variant} inputs)",
            poison=trials.poison_sizes + guards.tensor_bytes(inputs) if trials.poison else [],
            out_bytes=trials.out_bytes,
        )
        if variant == trials.base:
            self.memory.of_candidate(cand.memory, cand_out)
        clock = time.perf_counter()
        check_output(
            self.task,
            self.cfg,
            self.guard,
            trials,
            cand,
            device,
            variant,
            trial,
            inputs,
            ref_out,
            cand_out,
            self.result,
        )
        if first:
            precision_checks(self.cfg, self.guard, self.result, ref_out, cand_out, wide_out, self.wide)
        cand._add("checks", clock)
        trials.record(variant, inputs, ref_out, cand_out)
        self.result.trials_passed += 1

    def judged(self, variant: str, first: bool, ref_out: Any, wide_out: Any) -> bool:
        """Whether the reference can judge this trial: on the first trial, whether its fp32 and fp64 outputs agree is
        noted; a hidden distribution under which it degenerates is dropped (False), with why."""
        if not first and not variant.startswith(HIDDEN_PREFIX):
            return True
        atol, rtol = tolerance(self.task, ref_out, self.cfg)
        wide = self.wide
        if first:
            if wide.known is None:  # decided here, kept by the evaluator for the task's next evaluations
                wide.base_nonfinite = count_nonfinite(ref_out)
                wide.trusted = wide_out is not None and not wide.compare(disagreement, ref_out, wide_out, atol, rtol)
                wide.decided = wide_out is not None and not wide.error
            return True
        name = variant[len(HIDDEN_PREFIX) :]
        if name in self.known:  # judged by an earlier evaluation of this task (and kept: a drop never gets here)
            self.hidden["kept"].append(name)
            return True
        reason = degenerate(ref_out, None, atol=atol, rtol=rtol, base_nonfinite=wide.base_nonfinite)
        if not reason and wide_out is not None and wide.trusted:
            gap = wide.compare(disagreement, ref_out, wide_out, atol, rtol)
            reason = f"the reference disagrees with its own fp64 evaluation ({gap})" if gap else ""
        if reason:
            self.drop(variant, reason)
            return False
        self.hidden["kept"].append(name)
        self.hidden["decided"][name] = ""
        return True

    def drop(self, variant: str, reason: str, decided: bool = True) -> None:
        """A hidden distribution the reference cannot judge: left out, with why (``decided``: judged here, not
        taken from an earlier evaluation)."""
        name = variant[len(HIDDEN_PREFIX) :]
        self.hidden["dropped"][name] = cap_text(reason, 300)
        if decided:
            self.hidden["decided"][name] = self.hidden["dropped"][name]
        self.result.trials_total -= 1


def precision_checks(
    cfg: EvalConfig, guard: Guards, result: EvalResult, ref_out: Any, cand_out: Any, wide_out: Any, wide: Wide
):
    """The first trial's output against the fp32 reference (the ``precision`` guard: errors the size of a lower
    precision's rounding) and against the fp64 reference (``precision_fp64``: many times the fp32 reference's own)."""
    downgrade = guards.precision_downgrade(ref_out, cand_out)
    if downgrade:
        guard.fire("precision", downgrade)
    if wide_out is None:
        return
    measured: list[tuple[str, dict[str, Any]]] = []

    def measure(ref: Any, wide_ref: Any, **_: Any) -> str:
        measured.append(precision_against_fp64(cand_out, ref, wide_ref, cfg.precision_fp64_ratio))
        return ""

    wide.compare(measure, ref_out, wide_out, 0.0, 0.0)
    if not measured:
        return
    evidence, figures = measured[0]
    if figures:
        result.checks["fp64"] = {k: float(f"{v:.4g}") for k, v in figures.items()}
    if evidence:
        guard.fire("precision_fp64", evidence)


def call_reference(ref_model: Any, inputs: list[Any]) -> Any:
    try:
        return ref_model(*inputs)
    except Exception as exc:  # noqa: BLE001 - the task's fault, said as such
        raise Failure(EvalStatus.CRASHED, f"the reference itself raised {type(exc).__name__}: {exc}"[:2000]) from None


def sensitivity(ref_module, ref_model, cand: Candidate, device, cfg, trials: Trials, guard: Guards) -> None:
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
    inputs = make_inputs(ref_module, seed=cfg.seed * 1000, variant=trials.base, device=device)

    def call_candidate(xs: list[Any]) -> Any:
        try:
            return cand.call(xs, what="a sensitivity probe", poison=[], out_bytes=trials.out_bytes)
        except Failure as failure:
            if failure.status in (EvalStatus.RUNTIME_ERROR, EvalStatus.INCORRECT):
                raise RuntimeError(failure.message) from None  # a candidate that fails on a probe reacted to it
            raise

    with grad_mode(cfg.no_grad):
        verdict = guards.sensitivity_probe(
            lambda xs: ref_model(*xs), call_candidate, inputs, trials.reference_base, trials.candidate_base
        )
    sync(device)
    if verdict is not None:
        kind, evidence = verdict
        guard.add([guard.policies.found("output_sensitivity", evidence, verdict=None if kind == REJECT else kind)])
