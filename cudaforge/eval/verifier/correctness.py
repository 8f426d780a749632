"""The correctness phase: seeded trials, the declared variants, each output checked, then the sensitivity guard."""

from __future__ import annotations

import sys
import time
from typing import Any

import torch

from cudaforge.eval.guards import runtime as guards
from cudaforge.eval.guards.policy import REJECT
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
        guard.incorrect(
            *explain(variant, inputs, trials, cand_out, device, trial), "output mismatch\n" + diff.summary()
        )


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


def run_correctness(task, ref_module, ref_model, cand: Candidate, device, cfg, result: EvalResult, guard: Guards):
    base = "small" if cpu_scaled(task, device, ref_module) else DEFAULT_VARIANT
    plan = [(base, t) for t in range(cfg.correctness_trials)]
    if cfg.check_variants and base == DEFAULT_VARIANT:
        plan += [(v, len(plan) + i) for i, v in enumerate(task.input_variants)]
    result.trials_total = len(plan)
    if base != DEFAULT_VARIANT:
        result.fingerprint["inputs_variant"] = base
    trials = Trials(base)
    trials.poison = bool(cfg.poison_memory)
    for variant, trial in plan:
        clock = time.perf_counter()
        inputs = make_inputs(ref_module, seed=cfg.seed * 1000 + trial, variant=variant, device=device)
        sync(device)
        clock = cand._add("draw_inputs", clock)
        with grad_mode(cfg.no_grad):
            ref_out = call_reference(ref_model, clone_inputs(inputs))
        sync(device)
        clock = cand._add("reference", clock)
        trials.out_bytes = max(trials.out_bytes, output_budget(ref_out))
        cand_out = cand.call(
            inputs,
            what=f"ModelNew.forward (trial {trial}, {variant} inputs)",
            poison=trials.poison_sizes + guards.tensor_bytes(inputs) if trials.poison else [],
            out_bytes=trials.out_bytes,
        )
        clock = time.perf_counter()
        check_output(task, cfg, guard, trials, cand, device, variant, trial, inputs, ref_out, cand_out, result)
        clock = cand._add("checks", clock)
        if trials.default_trials == 0 and variant == base:
            downgrade = guards.precision_downgrade(ref_out, cand_out)
            if downgrade:
                guard.fire("precision", downgrade)
        trials.record(variant, inputs, ref_out, cand_out)
        result.trials_passed += 1
    sensitivity(ref_module, ref_model, cand, device, cfg, trials, guard)
    return trials


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
