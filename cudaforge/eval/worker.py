"""The isolated side of an evaluation: compile, check and time one candidate in this process.

Runs only inside a child started by ``cudaforge.isolation.run_isolated`` (entry
``cudaforge.eval.worker:evaluate``), pinned to one GPU or to none. The parent gets a plain
``EvalResult`` dict back; whatever the candidate does to this process (hang, segfault,
illegal memory access) is the parent's to observe, never to suffer.

Order of work (docs/evaluation.md states it as the protocol):
0. static guards (``cudaforge.eval.guards.source``) on the candidate's text, under the
   config's policies, before anything of it runs.
1. compile: import the candidate as a fresh module under the build hooks (load_inline
   builds into the hash-keyed cache); the reference module is not loaded yet, and once
   loaded it is not registered in ``sys.modules``.
2. correctness: reference and candidate models built with the same seed (the reference's
   state dict copied into the candidate where names and shapes match); for each trial,
   fresh seeded inputs, free memory poisoned, the candidate runs first on its own copy,
   then the reference; the candidate's inputs checked bit for bit, its outputs' types,
   then outputs compared with the task's or the dtype's tolerances; then each declared
   input variant once. Then the precision and sensitivity guards.
3. timing (GPU only): interleaved reference/candidate calls with fresh inputs every trial
   and the L2 flushed, every candidate output checked against the reference's for the same
   inputs; medians and bootstrap intervals; NVML state before and after; then the
   host/event, speed-of-light and profiler-share guards.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any, Callable

import torch

from cudaforge.eval.correctness import compare
from cudaforge.eval.guards import runtime as guards
from cudaforge.eval.guards.policy import REJECT, Policies, rejection_message, rejections, share_findings
from cudaforge.eval.guards.source import static_findings
from cudaforge.tasks.runtime import (
    DEFAULT_VARIANT,
    build_model,
    default_tolerance,
    flatten_outputs,
    load_module,
    make_inputs,
    strict_fp32,
)
from cudaforge.types import EvalResult, EvalStatus, Phase, PhaseRecord, Task, source_hash

CANDIDATE_MODULE_PREFIX = "cudaforge_candidate_"
REFERENCE_MODULE = "cudaforge_reference"
PROFILED_CALLS = 3
"""Forwards the profiler-share guard runs under torch.profiler (GPU)."""


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
            found = self.policies.found(guard, evidence)
            self.result.guard_findings.append(found)
            message += f"\n{guard}: {evidence}"
        raise _Failure(EvalStatus.INCORRECT, message)


def _candidate_traceback(exc: BaseException, module_name: str) -> str:
    """The exception with only the frames of the candidate's own code (plus the last one)."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if f.filename == f"<{module_name}>"]
    keep = own + ([frames[-1]] if frames and (not own or own[-1] is not frames[-1]) else [])
    lines = [f"  line {f.lineno} in {f.name}: {(f.line or '').strip()}" for f in keep if f.filename == f"<{module_name}>"]
    if keep and keep[-1].filename != f"<{module_name}>":
        lines.append(f"  in {os.path.basename(keep[-1].filename)}:{keep[-1].lineno} ({keep[-1].name})")
    text = f"{type(exc).__name__}: {exc}".strip()
    return "\n".join([text[:2000], *lines[-6:]])


def _is_triton_compile_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("triton") and "Compil" in type(exc).__name__


class _Recorder:
    """Phase records with their durations."""

    def __init__(self, progress: Callable[[str], None]) -> None:
        self.progress = progress
        self.phases: list[PhaseRecord] = []

    def start(self, phase: Phase) -> float:
        self.progress(phase.value)
        return time.perf_counter()

    def end(self, phase: Phase, started: float, status: str = "ok", message: str = "") -> None:
        self.phases.append(PhaseRecord(phase, status, time.perf_counter() - started, message))


def _copy_matching_state(reference: torch.nn.Module, candidate: Any) -> int:
    """Copy the reference's parameters and buffers into the candidate where names and shapes match."""
    if not isinstance(candidate, torch.nn.Module):
        return 0
    ref_state = reference.state_dict()
    cand_state = candidate.state_dict()
    matching = {k: v for k, v in ref_state.items() if k in cand_state and cand_state[k].shape == v.shape}
    if matching:
        candidate.load_state_dict(matching, strict=False)
    return len(matching)


def _clone(inputs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _tolerance(task: Task, output: Any, cfg: dict[str, Any]) -> tuple[float, float]:
    tensors = [t for t in flatten_outputs(output) if isinstance(t, torch.Tensor)]
    dtype = tensors[0].dtype if tensors else torch.float32
    atol, rtol = default_tolerance(dtype, cfg["atol_fp32"], cfg["rtol_fp32"], cfg["atol_half"], cfg["rtol_half"])
    return (task.atol if task.atol is not None else atol, task.rtol if task.rtol is not None else rtol)


def _call(model: Any, inputs: list[Any], module_name: str, what: str) -> Any:
    try:
        with torch.no_grad():
            return model(*inputs)
    except Exception as exc:  # noqa: BLE001 - a candidate's exception is a verdict, not our crash
        status = EvalStatus.COMPILE_ERROR if _is_triton_compile_error(exc) else EvalStatus.RUNTIME_ERROR
        raise _Failure(status, f"{what} raised\n{_candidate_traceback(exc, module_name)}") from None


def _import_candidate(source: str, module_name: str, build: dict[str, Any], result: EvalResult) -> Any:
    from cudaforge.eval.build import BuildError, BuildSettings, ModuleNotLoadable, ToolchainIncomplete, build_hooks

    with build_hooks(BuildSettings.from_dict(build)) as recorder:
        try:
            return load_module(source, module_name)
        except ToolchainIncomplete as exc:
            raise _Failure(EvalStatus.UNSUPPORTED, f"this machine cannot build the candidate: {exc}") from None
        except ModuleNotLoadable as exc:
            raise _Failure(EvalStatus.COMPILED, f"the CUDA sources compiled; {exc}") from None
        except Exception as exc:  # noqa: BLE001 - the candidate's import failing is a verdict
            if isinstance(exc, BuildError) or recorder.failed:
                result.compile_log_trimmed = recorder.log_trimmed
                raise _Failure(
                    EvalStatus.COMPILE_ERROR, "the CUDA source did not compile:\n" + recorder.log_trimmed
                ) from None
            raise _Failure(
                EvalStatus.RUNTIME_ERROR, "importing the candidate raised\n" + _candidate_traceback(exc, module_name)
            ) from None
        finally:
            result.compile_log = recorder.log
            result.compile_cached = recorder.cached


def _shapes(values: list[Any]) -> str:
    return ", ".join("x".join(map(str, t.shape)) for t in values if isinstance(t, torch.Tensor))


class _Trials:
    """What the correctness trials leave for the guards after them."""

    def __init__(self) -> None:
        self.default_shapes = ""
        self.default_trials = 0
        self.candidate_base: Any = None
        self.reference_base: Any = None
        self.candidate_constant = True
        self.reference_constant = True
        self.previous: Any = None
        self.poison_sizes: list[int] = []

    def record(self, variant: str, inputs: list[Any], ref_out: Any, cand_out: Any) -> None:
        """Note a passed trial: shapes, whether the outputs ever changed, what to poison next time."""
        if variant == DEFAULT_VARIANT:
            if self.default_trials == 0:
                self.default_shapes = _shapes(inputs)
                self.candidate_base, self.reference_base = guards.snapshot(cand_out), guards.snapshot(ref_out)
            else:
                self.candidate_constant &= guards.same_bits(cand_out, self.candidate_base)
                self.reference_constant &= guards.same_bits(ref_out, self.reference_base)
            self.default_trials += 1
        self.previous = guards.snapshot(cand_out)
        self.poison_sizes = guards.tensor_bytes([ref_out])


def _explain(variant: str, inputs: list[Any], trials: _Trials, cand_out: Any, device, trial: int) -> tuple[str, str]:
    """Which guard explains a wrong output of ``trial`` (shape specialisation, poison, caching), if any."""
    guard, evidence = guards.explain_mismatch(cand_out, trials.previous, device, f"trial {trial}")
    shapes = _shapes(inputs)
    if variant != DEFAULT_VARIANT and trials.default_trials and shapes != trials.default_shapes:
        evidence = (f"correct on the default inputs ({trials.default_shapes}) in {trials.default_trials} trials, wrong on "
                    f"the declared variant {variant!r} with inputs {shapes}: the kernel seems written for one shape. "
                    "Take sizes and strides from the inputs at run time and handle the remainders."
                    + (f" ({evidence})" if guard == "uninitialised_memory" else ""))  # fmt: skip
        guard = "shape_specialisation"
    return guard, evidence


def _models(ref_module, cand_module, device, cfg, cand_name) -> tuple[Any, Any]:
    """Reference and candidate built with the same seed, the reference's matching weights copied over."""
    init = list(ref_module.get_init_inputs())
    ref_model = build_model(ref_module.Model, init, cfg["seed"], device)
    try:
        cand_model = build_model(cand_module.ModelNew, init, cfg["seed"], device)
    except Exception as exc:  # noqa: BLE001
        raise _Failure(EvalStatus.RUNTIME_ERROR, "ModelNew(*get_init_inputs()) raised\n" + _candidate_traceback(exc, cand_name)) from None
    _copy_matching_state(ref_model, cand_model)
    return ref_model, cand_model


def _correctness(task, ref_module, cand_module, device, cfg, cand_name, result: EvalResult, guard: _Guards):
    ref_model, cand_model = _models(ref_module, cand_module, device, cfg, cand_name)
    plan = [(DEFAULT_VARIANT, t) for t in range(cfg["correctness_trials"])]
    if cfg["check_variants"]:
        plan += [(v, len(plan) + i) for i, v in enumerate(task.input_variants)]
    result.trials_total = len(plan)
    trials = _Trials()
    for variant, trial in plan:
        inputs = make_inputs(ref_module, seed=cfg["seed"] * 1000 + trial, variant=variant, device=device)
        cand_inputs = _clone(inputs)
        guards.poison_free_memory(trials.poison_sizes + guards.tensor_bytes(inputs), device)
        cand_out = _call(cand_model, cand_inputs, cand_name, f"ModelNew.forward (trial {trial}, {variant} inputs)")
        _sync(device)
        changed = guards.mutated_inputs(inputs, cand_inputs)
        if changed:
            guard.fire("input_mutation", f"trial {trial} ({variant} inputs): {changed}")
        ref_out = _call(ref_model, inputs, REFERENCE_MODULE, "the reference")
        _sync(device)
        problem = guards.output_type_problem(cand_out, ref_out, device)
        if problem:
            guard.fire("output_type", f"trial {trial}: {problem}")
        atol, rtol = _tolerance(task, ref_out, cfg)
        diff = compare(ref_out, cand_out, atol=atol, rtol=rtol, trial=trial, variant=variant)
        if diff is not None:
            result.diff = diff
            guard.incorrect(*_explain(variant, inputs, trials, cand_out, device, trial), "output mismatch\n" + diff.summary())
        if trials.default_trials == 0 and variant == DEFAULT_VARIANT:
            downgrade = guards.precision_downgrade(ref_out, cand_out)
            if downgrade:
                guard.fire("precision", downgrade)
        trials.record(variant, inputs, ref_out, cand_out)
        result.trials_passed += 1
    _sensitivity(ref_module, ref_model, cand_model, device, cfg, trials, guard)
    return ref_model, cand_model, trials


def _sensitivity(ref_module, ref_model, cand_model, device, cfg, trials: _Trials, guard: _Guards) -> None:
    """The output_sensitivity guard, after the trials: a candidate output that never changed."""
    if trials.default_trials < 2 or not trials.candidate_constant:
        return
    if not trials.reference_constant:
        guard.fire("output_sensitivity", f"ModelNew's output was bit-identical in all {trials.default_trials} "
                   "trials with different inputs while the reference's changed (within the tolerance): a constant "
                   "passes this task's tolerance. Compute the result from the inputs.")  # fmt: skip
        return
    inputs = make_inputs(ref_module, seed=cfg["seed"] * 1000, device=device)
    verdict = guards.sensitivity_probe(
        lambda xs: ref_model(*xs), lambda xs: cand_model(*xs), inputs, trials.reference_base, trials.candidate_base
    )
    _sync(device)
    if verdict is not None:
        kind, evidence = verdict
        guard.add([guard.policies.found("output_sensitivity", evidence, verdict=None if kind == REJECT else kind)])


TIMING_SEED_OFFSET = 1_000_003
"""Timed trial ``t`` draws its inputs with seed ``seed * 7919 + TIMING_SEED_OFFSET + t`` (warm-up: t < 0)."""


def _timing(ref_module, ref_model, cand_model, device, cfg, cand_name, task, result: EvalResult, guard: _Guards,
            source: str, trials: _Trials, progress: Callable[[str], None] = lambda phase: None) -> None:
    from cudaforge.eval.fingerprint import gpu_state
    from cudaforge.eval.timing import time_interleaved
    from cudaforge.hardware.gpu_lock import gpu_lock
    from cudaforge.hardware.roofline import make_roofline, task_cost
    from cudaforge.hardware.specs import peak_rates

    def fresh_inputs(trial: int) -> list[Any]:
        return make_inputs(ref_module, seed=cfg["seed"] * 7919 + TIMING_SEED_OFFSET + trial, device=device)

    def check(expected: Any, actual: Any, trial: int):
        atol, rtol = _tolerance(task, expected, cfg)
        return compare(expected, actual, atol=atol, rtol=rtol, trial=trial, variant="timing")

    calls = guards.TimedCalls(fresh_inputs, check, device, trials.poison_sizes, reference=ref_model)
    reference_fn = ref_model
    if cfg["baseline"] == "compile":
        reference_fn = torch.compile(ref_model, mode=cfg["compile_mode"])
    clock = time.perf_counter()
    result.fingerprint["gpu_state_before"] = gpu_state(0)
    spent = {"gpu_state": time.perf_counter() - clock}
    share: dict[str, Any] | None = None
    # profiling never overlaps timing on one GPU: the profiler holds the same lock around ncu. The wait for it is
    # its own phase (eval.gpu_wait_timeout_s), so a queue of other candidates never times this one out.
    progress("gpu_wait")
    with gpu_lock(os.environ.get("CUDA_VISIBLE_DEVICES") or "0") as waited, torch.no_grad():
        progress(Phase.TIMING.value)
        result.fingerprint["gpu_lock_wait_s"] = round(waited, 3)
        try:
            clock = time.perf_counter()
            times = time_interleaved(
                reference_fn,
                cand_model,
                trials=cfg["timing_trials"],
                warmup=cfg["warmup"],
                flush_l2=cfg["flush_l2"],
                device=device,
                make_args=calls.make_args,
                on_output=calls.on_output,
                lead_us=cfg["timing_lead_us"],
            )
        except Exception as exc:  # noqa: BLE001
            raise _Failure(EvalStatus.RUNTIME_ERROR, "a timed call raised\n" + _candidate_traceback(exc, cand_name)) from None
        spent["trials"] = time.perf_counter() - clock
        result.fingerprint["timing_lead_us"] = times.lead_us
        if times.lead_note:
            result.fingerprint.setdefault("timing_notes", []).append(times.lead_note)
        clock = time.perf_counter()
        if calls.failure is None and cfg.get("share_in_worker", True):  # else a share worker does it (evaluator)
            share = _kernel_share(cand_model, fresh_inputs, source, result)
        spent["kernel_share"] = time.perf_counter() - clock
    clock = time.perf_counter()
    result.fingerprint["gpu_state_after"] = gpu_state(0)
    spent["gpu_state"] += time.perf_counter() - clock
    clock = time.perf_counter()
    if calls.failure is not None:
        failure = calls.failure
        if failure["diff"]:
            guard.incorrect(failure["guard"], failure["evidence"],
                            "an output produced during the timed calls was wrong\n" + failure["diff"])  # fmt: skip
        guard.fire(failure["guard"], failure["evidence"])
    result.reference_timing = times.reference_stats()
    result.candidate_timing = times.candidate_stats()
    result.speedup = times.speedup(baseline=cfg["baseline"])
    peaks = peak_rates(torch.cuda.get_device_name(device))
    cost = task_cost(ref_module, seed=cfg["seed"])
    result.fingerprint["roofline"] = make_roofline(cost, peaks, result.candidate_timing.median, "evaluator").to_dict()
    result.fingerprint["host_ms_median"] = {
        "reference": sorted(times.reference_host_ms)[len(times.reference_host_ms) // 2],
        "candidate": sorted(times.candidate_host_ms)[len(times.candidate_host_ms) // 2],
    }
    _timing_guards(times, cost, peaks, device, share, guard, result)
    spent["cost_and_guards"] = time.perf_counter() - clock
    # where the timing phase's time goes (docs/evaluation.md): the trials split into the timed calls themselves
    # (host time from start event to device sync), fresh inputs and poisoning, output checks, and the rest (flushes)
    timed = (sum(times.reference_host_ms) + sum(times.candidate_host_ms)) / 1e3
    spent.update(timed_calls=timed, inputs=calls.seconds["inputs"], checks=calls.seconds["checks"])
    spent["trials_other"] = spent["trials"] - timed - calls.seconds["inputs"] - calls.seconds["checks"]
    spent.update({f"trial_{k}": v for k, v in calls.detail.items()})
    result.fingerprint["timing_breakdown_s"] = {k: round(v, 4) for k, v in spent.items()}


def _kernel_share(cand_model, fresh_inputs, source: str, result: EvalResult) -> dict[str, Any] | None:
    """The profiler's split of the candidate's GPU time (None, with a note, when torch.profiler fails)."""
    from cudaforge.profile.kernels import candidate_kernel_names

    inputs = fresh_inputs(-10_000)
    try:
        return guards.kernel_share(lambda: cand_model(*_clone(inputs)), candidate_kernel_names(source), PROFILED_CALLS)
    except Exception as exc:  # noqa: BLE001 - the guard is skipped, never the evaluation
        result.fingerprint.setdefault("guard_notes", []).append(f"profiler share unavailable: {type(exc).__name__}: {exc}"[:300])
        return None


def _timing_guards(times, cost, peaks, device, share, guard: _Guards, result: EvalResult) -> None:
    """hidden_work, speed_of_light and the profiler's share (no_custom_kernel, torch_compute)."""
    p = guard.policies
    found = []
    evidence = guards.hidden_work(times.reference_ms, times.reference_host_ms, times.candidate_ms,
                                  times.candidate_host_ms, p.threshold("hidden_work_ms"))  # fmt: skip
    if evidence:
        found.append(p.found("hidden_work", evidence))
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    evidence, numbers = guards.speed_of_light(cost, peaks, result.candidate_timing.median,
                                              p.threshold("speed_of_light_margin"), l2)  # fmt: skip
    result.fingerprint["speed_of_light"] = numbers
    if evidence:
        found.append(p.found("speed_of_light", evidence))
    if share is not None:
        result.fingerprint["kernel_share"] = share
        found += share_findings(share, p)
    guard.add(found)


def _warm_profiler() -> None:
    """One tiny torch.profiler session: loads CUPTI and Kineto, which a first session otherwise pays for (seconds).

    Only for share workers: a finished session leaves the process's launches slower (measured on an H200: 9.2 ->
    12.7 us per launch, benchmarks/launch_residue.py), so a process that times kernels never warms it."""
    from torch.profiler import ProfilerActivity, profile

    try:
        with profile(activities=[ProfilerActivity.CUDA]):
            torch.empty(1, device="cuda").add_(1)
            torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - the guard itself notes a profiler that does not work
        pass


_PREPARED: dict[str, Any] = {}
"""What ``prepare`` did in this process (empty when the worker was not a standby)."""


def prepare(progress: Callable[[str], None], claimed: Callable[[], bool]) -> None:
    """A standby worker's start-up, paid before its candidate is known (``cudaforge.isolation.Standby``).

    Imports what evaluations use (the build hooks, torch's C++ extension loader, Triton, and the modules of
    the cost model and the profiler-share guard, without starting a profiler session), warms the fingerprint's
    constant parts (nvcc, package versions, cuDNN), and creates the GPU's CUDA context.
    The context is made only while holding the GPU's lock, so it never lands inside another
    process's timed calls, and only until the standby is claimed: a claimed worker stops waiting
    and makes the context in its first phase, as a worker without a standby does.
    """
    from cudaforge.eval import build  # noqa: F401 - torch.utils.cpp_extension and the build hooks
    from cudaforge.eval.fingerprint import warm_caches
    from cudaforge.hardware.gpu_lock import GpuLockTimeout, gpu_lock

    started = time.perf_counter()
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except ImportError:
        pass
    # what runs after the timed trials: imports only (a profiler *session* would slow this process's launches).
    # torch._inductor (and with it torch._dynamo, sympy, ...) is what a first profiler session and a first
    # FlopCounterMode otherwise import: about 1 s on a laptop core, seconds on a GPU node.
    import torch._inductor  # noqa: F401
    import torch.profiler  # noqa: F401
    import torch.utils.flop_counter  # noqa: F401

    import cudaforge.hardware.roofline  # noqa: F401
    import cudaforge.hardware.specs  # noqa: F401
    import cudaforge.profile.kernels  # noqa: F401

    warm_caches()
    cuda_ready = False
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    if gpu and torch.cuda.is_available():
        while not claimed():
            try:
                with gpu_lock(gpu.split(",")[0], timeout_s=0.1):
                    torch.empty(1, device="cuda").add_(1)  # the context, the allocator, a first kernel
                    torch.cuda.synchronize()
                    cuda_ready = True
                break
            except GpuLockTimeout:
                continue
    _PREPARED.update(prepare_s=round(time.perf_counter() - started, 4), cuda_ready=cuda_ready)


def prepare_share(progress: Callable[[str], None], claimed: Callable[[], bool]) -> None:
    """A share worker's start-up: as ``prepare``, plus CUPTI and Kineto loaded by one tiny profiler session."""
    prepare(progress, claimed)
    if _PREPARED.get("cuda_ready"):
        clock = time.perf_counter()
        _warm_profiler()
        _PREPARED["profiler_warm_s"] = round(time.perf_counter() - clock, 4)


def share(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """The profiler-share guard's measurement in a process of its own (``eval.share_worker``; GPU only).

    torch.profiler leaves the process that used it slower to launch kernels, and its first session costs
    seconds; so a share worker, started ahead with the profiler warm, imports the candidate (from the build
    cache), builds it as the evaluation does (same seed, the reference's matching weights) and profiles
    ``PROFILED_CALLS`` forwards after one unprofiled warm-up forward. All of its GPU work runs under the GPU's
    lock, so it never overlaps another process's timed calls. Returns ``{"share": ...}`` or ``{"note": why not}``.
    """
    from cudaforge.hardware.gpu_lock import gpu_lock
    from cudaforge.profile.kernels import candidate_kernel_names

    strict_fp32()
    task = Task.from_dict(payload["task"])
    source, cfg = payload["candidate"], payload["eval"]
    device = torch.device(payload["device"])
    digest = source_hash(source)
    cand_name = CANDIDATE_MODULE_PREFIX + digest
    scratch = EvalResult(task_id=task.id, candidate_hash=digest, status=EvalStatus.CORRECT, device=str(device))
    progress(Phase.COMPILE.value)
    try:
        cand_module = _import_candidate(source, cand_name, payload["build"], scratch)
        ref_module = load_module(task.source, REFERENCE_MODULE)
        sys.modules.pop(REFERENCE_MODULE, None)
        progress("gpu_wait")
        with gpu_lock(os.environ.get("CUDA_VISIBLE_DEVICES") or "0"), torch.no_grad():
            progress("share")
            cand_model = _models(ref_module, cand_module, device, cfg, cand_name)[1]
            inputs = make_inputs(ref_module, seed=cfg["seed"] * 7919 + TIMING_SEED_OFFSET - 10_000, device=device)
            cand_model(*_clone(inputs))  # lazy set-up and JIT compiles stay out of the profile
            _sync(device)
            result = guards.kernel_share(lambda: cand_model(*_clone(inputs)), candidate_kernel_names(source),
                                         PROFILED_CALLS)  # fmt: skip
    except _Failure as failure:
        return {"note": f"profiler share unavailable: {failure.status.value}: {failure.message}"[:300]}
    except Exception as exc:  # noqa: BLE001 - the guard is skipped, never the evaluation
        return {"note": f"profiler share unavailable: {type(exc).__name__}: {exc}"[:300]}
    return {"share": result, "standby": dict(_PREPARED) or None}


def evaluate(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Evaluate ``payload = {task, candidate, eval, build, device}``; return an EvalResult dict."""
    from cudaforge.eval.fingerprint import environment_fingerprint

    started = time.perf_counter()
    strict_fp32()
    task = Task.from_dict(payload["task"])
    source, cfg = payload["candidate"], payload["eval"]
    device = torch.device(payload["device"])
    digest = source_hash(source)
    cand_name = CANDIDATE_MODULE_PREFIX + digest
    result = EvalResult(task_id=task.id, candidate_hash=digest, status=EvalStatus.CORRECT, device=str(device))
    result.fingerprint = environment_fingerprint(0 if device.type == "cuda" else None)
    result.fingerprint["worker_setup_s"] = round(time.perf_counter() - started, 4)  # before the first phase
    result.fingerprint["standby"] = dict(_PREPARED) or None  # prepared ahead of the candidate, or started cold
    rec = _Recorder(progress)
    guard = _Guards(cfg, result)
    phase = Phase.COMPILE
    t = rec.start(phase)
    try:
        guard.add(static_findings(source, guard.policies, task.source))  # nothing of the candidate has run yet
        cand_module = _import_candidate(source, cand_name, payload["build"], result)
        if not hasattr(cand_module, "ModelNew"):
            raise _Failure(EvalStatus.INVALID, "after import the candidate has no ModelNew")
        rec.end(phase, t, message="cache hit" if result.compile_cached else "")
        phase = Phase.CORRECTNESS
        t = rec.start(phase)
        if device.type == "cpu" and not guards.enable_cpu_poison():
            result.fingerprint.setdefault("guard_notes", []).append("no glibc: CPU memory is not poisoned")
        ref_module = load_module(task.source, REFERENCE_MODULE)
        sys.modules.pop(REFERENCE_MODULE, None)  # the candidate cannot import the reference
        ref_model, cand_model, trials = _correctness(task, ref_module, cand_module, device, cfg, cand_name, result, guard)
        rec.end(phase, t, message=f"{result.trials_passed}/{result.trials_total} trials passed")
        if device.type != "cuda":
            result.timing_unavailable_reason = "no GPU: correctness was checked on the CPU; timing needs a GPU"
            result.message = f"correct on {result.trials_passed} CPU trials; {result.timing_unavailable_reason}"
        else:
            phase = Phase.TIMING
            t = rec.start(phase)
            _timing(ref_module, ref_model, cand_model, device, cfg, cand_name, task, result, guard, source, trials,
                    progress)
            rec.end(phase, t)
            s = result.speedup
            result.message = (
                f"correct ({result.trials_passed} trials); candidate {result.candidate_timing.median:.4f} ms vs "
                f"reference {result.reference_timing.median:.4f} ms ({cfg['baseline']}): speedup {s.median:.3f}x "
                f"[{s.ci_low:.3f}, {s.ci_high:.3f}]"
            )
    except _Failure as failure:
        result.status, result.message = failure.status, failure.message
        ok = failure.status is EvalStatus.COMPILED
        rec.end(phase, t, status="ok" if ok else "failed", message=failure.message[:500])
    result.phases = rec.phases
    result.seconds = time.perf_counter() - started
    return result.to_dict()
